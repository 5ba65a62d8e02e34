# SPDX-License-Identifier: Apache-2.0
# Writes OUT, a header defining MMTWIN_VERSION (the CMake project version) and MMTWIN_GIT_DESCRIBE (the source
# tree's `git describe --always --dirty --tags`; without git or a repository the environment's MMTWIN_COMMIT, as
# the GPU machine's copy of the tree has it, else ""), only when it changes. sim/core/util/version.h reads it:
# `--version` of every program and the commit a report names. Run at every build:
#   cmake -DSRC=<source dir> -DOUT=<header> -DVERSION=<x.y.z> -P version_info.cmake
execute_process(COMMAND git describe --always --dirty --tags
                WORKING_DIRECTORY "${SRC}" OUTPUT_VARIABLE _describe ERROR_QUIET RESULT_VARIABLE _rc
                OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT _rc EQUAL 0)
  set(_describe "$ENV{MMTWIN_COMMIT}")
endif()
set(_text "#pragma once\n#define MMTWIN_VERSION \"${VERSION}\"\n#define MMTWIN_GIT_DESCRIBE \"${_describe}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" _old)
else()
  set(_old "")
endif()
if(NOT _old STREQUAL _text)
  file(WRITE "${OUT}" "${_text}")
endif()
