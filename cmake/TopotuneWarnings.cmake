# Warning and sanitizer flags shared by every topotune target.
add_library(topotune_flags INTERFACE)
add_library(topotune::flags ALIAS topotune_flags)
# yaml-cpp 0.7 headers trip GCC 12's -Wdangling-pointer false positive (YAML::Node temporaries).
target_compile_options(topotune_flags INTERFACE -Wall -Wextra -Wpedantic -Wshadow=local -Wno-dangling-pointer)
if(TOPOTUNE_WERROR)
  target_compile_options(topotune_flags INTERFACE -Werror)
endif()
if(TOPOTUNE_SANITIZE)
  target_compile_options(topotune_flags INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer
                                                  -fno-sanitize-recover=undefined)
  target_link_options(topotune_flags INTERFACE -fsanitize=address,undefined)
endif()
