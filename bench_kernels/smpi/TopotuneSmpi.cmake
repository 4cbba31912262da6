# Builds topotune-bench-smpi (bench_kernels/smpi/CMakeLists.txt, a separate
# project compiled by smpicxx) from the main build, as an ExternalProject.
# Included when TOPOTUNE_BUILD_SMPI is ON; defines
#   topotune_bench_smpi        the target that builds it (part of `all`)
#   TOPOTUNE_BENCH_SMPI        the path of the program
#   TOPOTUNE_SMPIRUN           smpirun
include_guard(GLOBAL)
include(ExternalProject)

find_program(TOPOTUNE_SMPICXX smpicxx)
find_program(TOPOTUNE_SMPICC smpicc)
find_program(TOPOTUNE_SMPIRUN smpirun)
if(NOT TOPOTUNE_SMPICXX OR NOT TOPOTUNE_SMPICC OR NOT TOPOTUNE_SMPIRUN)
  message(FATAL_ERROR "TOPOTUNE_BUILD_SMPI needs SimGrid's smpicxx, smpicc and smpirun (Debian packages simgrid and "
                      "libsimgrid-dev; deploy/install-deps.sh installs them), or -DTOPOTUNE_BUILD_SMPI=OFF")
endif()
# The sub-build runs inside one job of the main build and does not share its
# job slots, so it has its own (small) parallelism.
set(TOPOTUNE_SMPI_JOBS 1 CACHE STRING "Parallel compile jobs of the topotune-bench-smpi sub-build")

set(_smpi_dir ${CMAKE_BINARY_DIR}/bench_kernels/smpi)
# The main build's compiler launcher (ccache, cmake/TopotuneCcache.cmake)
# compiles the sub-build too; `|` separates its words through ExternalProject.
set(_smpi_launcher)
if(TOPOTUNE_COMPILER_LAUNCHER)
  list(JOIN TOPOTUNE_COMPILER_LAUNCHER "|" _smpi_launcher_words)
  set(_smpi_launcher -DCMAKE_CXX_COMPILER_LAUNCHER=${_smpi_launcher_words} -DCMAKE_C_COMPILER_LAUNCHER=${_smpi_launcher_words})
endif()
set(TOPOTUNE_BENCH_SMPI ${_smpi_dir}/topotune-bench-smpi)
ExternalProject_Add(topotune_bench_smpi
  SOURCE_DIR ${PROJECT_SOURCE_DIR}/bench_kernels/smpi
  BINARY_DIR ${_smpi_dir}
  PREFIX ${_smpi_dir}-ep
  CMAKE_GENERATOR ${CMAKE_GENERATOR}
  LIST_SEPARATOR |
  CMAKE_ARGS
    -DCMAKE_CXX_COMPILER=${TOPOTUNE_SMPICXX}
    -DCMAKE_C_COMPILER=${TOPOTUNE_SMPICC}
    -DCMAKE_BUILD_TYPE=Release
    -DTOPOTUNE_SOURCE_DIR=${PROJECT_SOURCE_DIR}
    -DTOPOTUNE_WERROR=${TOPOTUNE_WERROR}
    -DTOPOTUNE_UNITY_BUILD=${TOPOTUNE_UNITY_BUILD}
    -DTOPOTUNE_UNITY_BATCH=${TOPOTUNE_UNITY_BATCH}
    ${_smpi_launcher}
  BUILD_COMMAND ${CMAKE_COMMAND} --build ${_smpi_dir} -j ${TOPOTUNE_SMPI_JOBS}
  # The sub-build knows its own dependencies (every topotune source it uses).
  BUILD_ALWAYS ON
  INSTALL_COMMAND ""
  BUILD_BYPRODUCTS ${TOPOTUNE_BENCH_SMPI})
