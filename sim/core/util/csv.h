// SPDX-License-Identifier: Apache-2.0
// A small, fast CSV reader (RFC 4180 quoting) that keeps line numbers for error messages, and number parsing
// that reports `file:line: field: reason`.
//
//   MMTWIN_ASSIGN_OR_RETURN(CsvReader csv, CsvReader::Open("durations.csv"));
//   std::vector<std::string_view> row;
//   while (csv.Next(row)) { ... csv.line() ... }
//   if (!csv.status().ok()) return csv.status().error();
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/status.h"

namespace mmtwin {

class CsvReader {
 public:
  // Reads the whole file; an unreadable file is an error naming it.
  static Result<CsvReader> Open(const std::string& path);
  // Parses text held in memory; `name` is used in messages.
  static CsvReader FromString(std::string text, std::string name);

  // Next record into `fields` (views valid until the next call). Skips blank lines and lines starting with '#'
  // before the header and between records. Returns false at the end or on a malformed record (see status()).
  bool Next(std::vector<std::string_view>& fields);
  // 1-based line where the last record returned by Next() started.
  long line() const { return record_line_; }
  const std::string& name() const { return name_; }
  const Status& status() const { return status_; }
  // Comment lines ('#...') seen so far, without the '#'.
  const std::vector<std::string>& comments() const { return comments_; }

  Error ErrorAt(const std::string& field, const std::string& reason) const {
    return Error::At(name_, record_line_, field, reason);
  }

 private:
  std::string name_;
  std::string text_;
  size_t pos_ = 0;
  long next_line_ = 1;
  long record_line_ = 0;
  std::string scratch_;  // unescaped quoted fields
  std::vector<std::pair<size_t, size_t>> spans_;
  std::vector<std::string> comments_;
  Status status_;
};

// Maps header names to column indices; lookups of a missing required column produce a clear error.
class CsvHeader {
 public:
  explicit CsvHeader(const std::vector<std::string_view>& fields);
  // Index (the first, when a name repeats) or -1.
  int Find(std::string_view name) const;
  // An error at the header line when a column name appears twice (which of the two a reader would take is a
  // guess): among `names`, or among all columns when `names` is empty.
  Status CheckUnique(const CsvReader& csv, const std::vector<std::string>& names = {}) const;
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::vector<std::string> names_;
};

// Strict number parsing of a whole field (surrounding spaces allowed). Empty fields are errors unless the caller
// handles them first.
bool ParseInt64(std::string_view s, int64_t& out);
bool ParseDouble(std::string_view s, double& out);

// Quotes a field for CSV output when needed (separators, quotes, line breaks, or a leading '#', which would
// otherwise read back as a comment line when the field starts a record).
std::string CsvQuote(std::string_view s);

// Writes `content` to `path` atomically (temporary file `path.tmp.PID` in the same folder, fsync'ed, then
// renamed), so a reader never sees a half-written file and an existing file is replaced only on success.
// Temporary files of earlier writers that were killed (their PID no longer runs) are removed. A symbolic link is
// written through (its target replaced, the link kept); a device or FIFO (/dev/null, /dev/stdout, a pipe) is
// written to directly, never replaced; a folder is an error.
Status WriteFileAtomic(const std::string& path, std::string_view content);
Result<std::string> ReadFile(const std::string& path);

}  // namespace mmtwin
