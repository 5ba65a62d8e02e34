// SPDX-License-Identifier: Apache-2.0
#include "core/util/status.h"

namespace mmtwin {

Error Error::At(const std::string& file, long line, const std::string& field, const std::string& reason) {
  std::string m = file;
  if (line > 0) m += ":" + std::to_string(line);
  m += ": ";
  if (!field.empty()) m += field + ": ";
  m += reason;
  return Error(std::move(m));
}

}  // namespace mmtwin
