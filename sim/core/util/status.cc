// SPDX-License-Identifier: Apache-2.0
#include "core/util/status.h"

namespace mmtwin {

const char* ErrorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidInput: return "invalid input";
    case ErrorKind::kCancelled: return "cancelled";
    case ErrorKind::kIo: return "I/O";
    case ErrorKind::kExternal: return "external";
    case ErrorKind::kInternal: return "internal";
  }
  return "internal";
}

Error Error::At(const std::string& file, long line, const std::string& field, const std::string& reason) {
  std::string m = file;
  if (line > 0) m += ":" + std::to_string(line);
  m += ": ";
  if (!field.empty()) m += field + ": ";
  m += reason;
  return Error(std::move(m));
}

}  // namespace mmtwin
