# The libFuzzer target on topotuned's request handlers (handlers_fuzz.cc):
# each input is one request, validated and handed to an in-process Core as
# server.cc would. Included by tests/daemon/CMakeLists.txt.
#  - handlers_fuzz_replay: the target without libFuzzer over the seed corpus
#    (fuzz_corpus/) and deterministic mutations of it, as a unit test (so
#    the sanitizer pass runs it too); `--write-seeds DIR` writes the
#    hand-made seeds.
#  - handlers_fuzz: the real libFuzzer build, only with TOPOTUNE_BUILD_FUZZERS
#    (clang; the root flags already instrument every library for coverage).
find_package(spdlog REQUIRED)

set(_handlers_fuzz_libs topotune::daemon_service topotune::db topotune::proto topotune::tuner topotune::flags
                        fmt::fmt spdlog::spdlog)

add_executable(handlers_fuzz_replay ${CMAKE_CURRENT_LIST_DIR}/handlers_fuzz.cc
                                    ${CMAKE_CURRENT_LIST_DIR}/handlers_fuzz_replay.cc)
target_link_libraries(handlers_fuzz_replay PRIVATE ${_handlers_fuzz_libs})
target_compile_definitions(handlers_fuzz_replay PRIVATE TOPOTUNE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
add_test(NAME daemon_handlers_fuzz_replay
         COMMAND handlers_fuzz_replay ${CMAKE_CURRENT_LIST_DIR}/fuzz_corpus 500)
set_tests_properties(daemon_handlers_fuzz_replay PROPERTIES LABELS unit TIMEOUT 600)

if(TOPOTUNE_BUILD_FUZZERS)
  add_executable(handlers_fuzz ${CMAKE_CURRENT_LIST_DIR}/handlers_fuzz.cc)
  target_compile_options(handlers_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(handlers_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(handlers_fuzz PRIVATE ${_handlers_fuzz_libs})
  target_compile_definitions(handlers_fuzz PRIVATE TOPOTUNE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
endif()
