# SPDX-License-Identifier: Apache-2.0
# Writes OUT (a header defining MMTWIN_GIT_DESCRIBE, the source tree's `git describe --always --dirty`, "" when
# git or the repository is missing) only when it changes, so mmtwin-report names the commit it was built from.
# Run at every build: cmake -DSRC=<source dir> -DOUT=<header> -P git_describe.cmake
execute_process(COMMAND git describe --always --dirty --tags
                WORKING_DIRECTORY "${SRC}" OUTPUT_VARIABLE _describe ERROR_QUIET RESULT_VARIABLE _rc
                OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT _rc EQUAL 0)
  set(_describe "")
endif()
set(_text "#pragma once\n#define MMTWIN_GIT_DESCRIBE \"${_describe}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" _old)
else()
  set(_old "")
endif()
if(NOT _old STREQUAL _text)
  file(WRITE "${OUT}" "${_text}")
endif()
