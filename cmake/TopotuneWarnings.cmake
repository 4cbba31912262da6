# Warning and sanitizer flags shared by every topotune target.
add_library(topotune_flags INTERFACE)
add_library(topotune::flags ALIAS topotune_flags)
target_compile_options(topotune_flags INTERFACE -Wall -Wextra -Wpedantic)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # yaml-cpp 0.7 headers trip GCC 12's -Wdangling-pointer false positive
  # (YAML::Node temporaries); -Wshadow=local is GCC's spelling.
  target_compile_options(topotune_flags INTERFACE -Wshadow=local -Wno-dangling-pointer)
endif()
if(TOPOTUNE_WERROR)
  target_compile_options(topotune_flags INTERFACE -Werror)
endif()
if(TOPOTUNE_SANITIZE)
  # Instrumented code compiles far faster unoptimised (the CLI's unit: 82 s at
  # -O1, 48 s at -O0), and most of the sanitizer pass's CPU is its build: -O0
  # (after the build type's -O2) for every target but those whose code the
  # unit tests spend their time in, which set TOPOTUNE_SANITIZE_OPTIMIZE and
  # compile at -O1 (ASan's own suggestion for usable reports; the tuner's
  # tests take 3x longer at -O0). The same checks run either way.
  target_compile_options(topotune_flags INTERFACE $<IF:$<BOOL:$<TARGET_PROPERTY:TOPOTUNE_SANITIZE_OPTIMIZE>>,-O1,-O0>
                                                  -fsanitize=address,undefined -fno-omit-frame-pointer
                                                  -fno-sanitize-recover=undefined)
  target_link_options(topotune_flags INTERFACE -fsanitize=address,undefined)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # ASan instrumentation makes GCC 12 report -Wmaybe-uninitialized inside
    # libstdc++'s <regex> and <functional>; those are false positives.
    target_compile_options(topotune_flags INTERFACE -Wno-maybe-uninitialized)
  endif()
endif()
if(TOPOTUNE_BUILD_FUZZERS)
  # Instrument all code (not just the fuzz entry points) for coverage guidance
  # and memory checks; the fuzz targets add -fsanitize=fuzzer to link libFuzzer.
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "TOPOTUNE_BUILD_FUZZERS needs clang (CC=clang CXX=clang++)")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
