// SPDX-License-Identifier: Apache-2.0
// pingpong.csv codec (pingpong.h).
#include "core/records/pingpong.h"

#include <cmath>
#include <sstream>

#include "core/util/csv.h"

namespace mmtwin {
namespace {
constexpr const char* kVersion = "# mmtwin-pingpong v1";
constexpr const char* kHeader = "peer,bytes,round_trip_us";
}  // namespace

std::string PingPongCsv(const std::vector<PingPongSample>& rows) {
  std::ostringstream out;
  out.precision(9);
  out << kVersion << "\n" << kHeader << "\n";
  for (const PingPongSample& r : rows) out << r.peer << "," << r.bytes << "," << r.round_trip_us << "\n";
  return out.str();
}

Result<std::vector<PingPongSample>> ParsePingPongCsv(const std::string& text, const std::string& name) {
  std::string first = text.substr(0, text.find('\n'));
  if (!first.empty() && first.back() == '\r') first.pop_back();
  if (first != kVersion)
    return Error::At(
        name, 1, "",
        "expected the version line '" + std::string(kVersion) + "' (a file of mmtwin-train --pingpong)");
  CsvReader csv = CsvReader::FromString(text, name);
  std::vector<std::string_view> row;
  if (!csv.Next(row)) {
    if (!csv.status().ok()) return csv.status().error();
    return Error::At(name, 2, "", std::string("missing the header ") + kHeader);
  }
  if (row.size() != 3 || row[0] != "peer" || row[1] != "bytes" || row[2] != "round_trip_us")
    return csv.ErrorAt("", std::string("expected the header ") + kHeader);
  std::vector<PingPongSample> out;
  while (csv.Next(row)) {
    if (row.size() != 3) return csv.ErrorAt("", "expected 3 fields, got " + std::to_string(row.size()));
    PingPongSample s;
    s.line = csv.line();
    int64_t v = 0;
    if (!ParseInt64(row[0], v) || v < 1 || v > (int64_t{1} << 30))
      return csv.ErrorAt("peer", "'" + std::string(row[0]) + "' is not a rank >= 1");
    s.peer = static_cast<int32_t>(v);
    if (!ParseInt64(row[1], s.bytes) || s.bytes < 1)
      return csv.ErrorAt("bytes", "'" + std::string(row[1]) + "' is not an integer >= 1");
    if (!ParseDouble(row[2], s.round_trip_us) || !std::isfinite(s.round_trip_us) || s.round_trip_us <= 0)
      return csv.ErrorAt("round_trip_us", "'" + std::string(row[2]) + "' is not a finite number > 0");
    out.push_back(s);
  }
  if (!csv.status().ok()) return csv.status().error();
  return out;
}

}  // namespace mmtwin
