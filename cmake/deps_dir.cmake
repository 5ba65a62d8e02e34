# SPDX-License-Identifier: Apache-2.0
# Dependencies gathered into one folder (MMTWIN_DEPS_DIR, made by backend/gpu/gather_deps.sh from Debian's
# packages) for a machine that has no package registry: the GPU machine (backend/gpu/README.md). Defines the
# targets the find_package calls would, so those are skipped:
#   nlohmann_json::nlohmann_json, CLI11::CLI11   header-only
#   yaml-cpp                                     the static library (libyaml-cpp.a) and its headers
# and puts Gloo's headers (DEPS/gloo/include) after Torch's own in MMTWIN_EXTRA_INCLUDE_DIRS, for a LibTorch
# that ships none.
set(deps "${MMTWIN_DEPS_DIR}")
get_filename_component(deps "${deps}" ABSOLUTE)
if(NOT EXISTS "${deps}/MANIFEST.txt")
  message(FATAL_ERROR "MMTWIN_DEPS_DIR=${deps}: no MANIFEST.txt (make it with backend/gpu/gather_deps.sh)")
endif()
add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED GLOBAL)
set_target_properties(nlohmann_json::nlohmann_json PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${deps}/include")
add_library(CLI11::CLI11 INTERFACE IMPORTED GLOBAL)
set_target_properties(CLI11::CLI11 PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${deps}/include")
add_library(yaml-cpp STATIC IMPORTED GLOBAL)
set_target_properties(yaml-cpp PROPERTIES IMPORTED_LOCATION "${deps}/lib/libyaml-cpp.a"
                                          INTERFACE_INCLUDE_DIRECTORIES "${deps}/include")
if(EXISTS "${deps}/gloo/include/gloo")
  list(APPEND MMTWIN_EXTRA_INCLUDE_DIRS "${deps}/gloo/include")
endif()
message(STATUS "Dependencies from ${deps}")
