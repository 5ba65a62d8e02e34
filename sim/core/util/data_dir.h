// SPDX-License-Identifier: Apache-2.0
// Where mmtwin's data files live (the model zoo `models/`, cluster presets `clusters/`, the real derived traces
// `librispeech/`, `airbench/`), in this order:
//   1. the MMTWIN_DATA_DIR environment variable, when set and not empty;
//   2. an installed layout next to the running executable: <bin>/../share/mmtwin (cmake --install);
//   3. the source tree's traces/ folder this build was configured from (the MMTWIN_DATA_DIR definition);
//   4. the share/mmtwin of the build's install prefix (a program linking the installed libraries, find_package
//      (mmtwin), once the source tree is gone).
// The first that exists wins (1 wins even when it does not exist, so a wrong setting is reported, not
// ignored).
//
//   const std::string zoo = DataDir() + "/models";
#pragma once

#include <string>

namespace mmtwin {

std::string DataDir();

}  // namespace mmtwin
