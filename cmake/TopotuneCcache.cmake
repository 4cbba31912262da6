# Compiles through ccache when it is installed (deploy/install-deps.sh installs
# it), so that a second build of the same sources, in this tree or in another
# clone on the same machine (CI's clean clone), takes its objects from the
# cache. CCACHE_BASEDIR makes the paths under the source tree relative, and
# CCACHE_NOHASHDIR leaves the working directory out of the hash, so that two
# clones share their entries; objects taken from the cache keep the debug
# paths of the clone that compiled them. -DTOPOTUNE_CCACHE=OFF compiles
# without it; a CMAKE_<LANG>_COMPILER_LAUNCHER given on the command line wins.
option(TOPOTUNE_CCACHE "Compile through ccache when it is installed" ON)
if(TOPOTUNE_CCACHE)
  find_program(TOPOTUNE_CCACHE_PROGRAM ccache)
  if(TOPOTUNE_CCACHE_PROGRAM)
    set(TOPOTUNE_COMPILER_LAUNCHER ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${PROJECT_SOURCE_DIR} CCACHE_NOHASHDIR=1
                                   ${TOPOTUNE_CCACHE_PROGRAM})
    foreach(lang C CXX)
      if(NOT CMAKE_${lang}_COMPILER_LAUNCHER)
        set(CMAKE_${lang}_COMPILER_LAUNCHER ${TOPOTUNE_COMPILER_LAUNCHER})
      endif()
    endforeach()
  endif()
endif()
