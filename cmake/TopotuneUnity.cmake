# Unity builds: each target's sources compile in batches, one translation unit
# per batch, so the heavy headers every file includes (gRPC, protobuf's
# generated code, CLI11, nlohmann-json, spdlog, GoogleTest) are parsed and
# their templates instantiated once per batch rather than once per file. On
# the 2-core reference machine this takes the product's build to about half
# its CPU time; precompiled headers were tried and lost (GCC's 330 MB
# precompiled header took longer to load than the headers took to parse).
#
# Files in one batch share their anonymous namespaces, so two files of a
# target may not give file-local helpers the same name; a file that cannot
# share (the generated protobuf code, net-snmp's macros) sets
# SKIP_UNITY_BUILD_INCLUSION, a target UNITY_BUILD OFF. ccache still serves
# another clone's objects: the batch files name the sources by absolute path,
# which misses ccache's direct mode, but its preprocessed mode rewrites the
# paths under CCACHE_BASEDIR and hits.
#
# A batch is at most TOPOTUNE_UNITY_BATCH files, which makes most targets one
# batch. Splitting the heaviest targets (the CLI, the agent) in two batches
# to keep both cores busy at the end of the build was tried and lost: each
# batch parses the headers again (the README's build took 121 s rather than
# 107 s).
#
# -DTOPOTUNE_UNITY_BUILD=OFF compiles file by file: a change to one file then
# recompiles only that file, where a unity build recompiles its batch.
option(TOPOTUNE_UNITY_BUILD "Compile each target's sources in batches (unity build)" ON)
set(TOPOTUNE_UNITY_BATCH 16 CACHE STRING "Source files per unity batch")
if(TOPOTUNE_UNITY_BUILD)
  set(CMAKE_UNITY_BUILD ON)
  set(CMAKE_UNITY_BUILD_BATCH_SIZE ${TOPOTUNE_UNITY_BATCH})
endif()

