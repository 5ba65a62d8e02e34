// SPDX-License-Identifier: Apache-2.0
// layers.csv codec (layer_timings.h).
#include "core/records/layer_timings.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <sstream>

#include "core/util/csv.h"
#include "core/util/text.h"

namespace mmtwin {
namespace {

constexpr double kMaxLayerUs = 1e12, kMaxPairs = 1e19;  // ParseLayerTimings' bounds

constexpr const char* kHeader =
    "iteration,device,micro_batch,layer,label,kind,tokens,spans,attention_pairs,fwd_us,bwd_us,recompute_us,"
    "act_bytes,out_bytes,bwd_work_bytes";
constexpr const char* kFields[] = {"iteration",       "device",    "micro_batch",   "layer",
                                   "label",           "kind",      "tokens",        "spans",
                                   "attention_pairs", "fwd_us",    "bwd_us",        "recompute_us",
                                   "act_bytes",       "out_bytes", "bwd_work_bytes"};
constexpr size_t kFieldsV2 = std::size(kFields) - 1;  // v2: no bwd_work_bytes

}  // namespace

std::string LayerTimingsCsv(const std::vector<LayerTiming>& rows, const std::vector<Layer>& layers) {
  std::ostringstream out;
  out.precision(9);
  out << "# mmtwin-layers v" << kLayerTimingsVersion << "\n" << kHeader << "\n";
  for (const LayerTiming& r : rows) {
    const Layer& l = layers.at(static_cast<size_t>(r.layer));
    out << r.iteration << "," << r.device << "," << r.micro_batch << "," << r.layer << ","
        << CsvQuote(l.label) << "," << LayerKindName(l.kind) << "," << r.tokens << "," << r.spans << ","
        << r.attention_pairs << "," << r.fwd_us << "," << r.bwd_us << "," << r.recompute_us << ","
        << r.act_bytes << "," << r.out_bytes << "," << std::max<int64_t>(0, r.bwd_work_bytes) << "\n";
  }
  return out.str();
}

Result<std::vector<LayerTiming>> ParseLayerTimingsCsv(const std::string& text, const std::string& name) {
  const std::string version = "# mmtwin-layers v" + std::to_string(kLayerTimingsVersion);
  const size_t eol = text.find('\n');
  std::string first = text.substr(0, eol);
  if (!first.empty() && first.back() == '\r') first.pop_back();
  if (first.rfind("# mmtwin-layers v", 0) != 0)
    return Error::At(name, 1, "",
                     "not a per-layer timings file (expected the version line '" + version + "')");
  const bool v2 = first == "# mmtwin-layers v2";
  if (first != version && !v2)
    return Error::At(name, 1, "",
                     "unsupported version '" + first.substr(2) + "' (this mmtwin reads '" +
                         version.substr(2) + "' and 'mmtwin-layers v2')");
  const size_t fields = v2 ? kFieldsV2 : std::size(kFields);
  std::string header;
  for (size_t i = 0; i < fields; ++i) header += std::string(i ? "," : "") + kFields[i];
  CsvReader csv = CsvReader::FromString(text, name);
  std::vector<std::string_view> row;
  if (!csv.Next(row)) {
    if (!csv.status().ok()) return csv.status().error();
    return Error::At(name, 2, "", "missing the header " + header);
  }
  if (row.size() != fields) return csv.ErrorAt("", "expected the header " + header);
  for (size_t i = 0; i < row.size(); ++i)
    if (row[i] != kFields[i]) return csv.ErrorAt("", "expected the header " + header);
  std::vector<LayerTiming> out;
  while (csv.Next(row)) {
    if (row.size() != fields)
      return csv.ErrorAt("",
                         "expected " + std::to_string(fields) + " fields, got " + std::to_string(row.size()));
    LayerTiming t;
    t.line = csv.line();
    int64_t v = 0;
    auto int_field = [&](int i, int64_t lo, int64_t& dst) -> Status {
      if (!ParseInt64(row[i], v) || v < lo)
        return csv.ErrorAt(kFields[i],
                           "'" + std::string(row[i]) + "' is not an integer >= " + std::to_string(lo));
      dst = v;
      return Status();
    };
    // Bounded, so that one absurd value cannot overflow the least-squares fit that reads these (issue 34: a
    // fwd_us of 1e308 made a layer type's fit NaN): a layer's time at most 1e12 us (11.6 days), attention pairs
    // at most 1e19 (a 2^31-token sequence has 4.6e18).
    auto time_field = [&](int i, double& dst, double max) -> Status {
      if (!ParseDouble(row[i], dst) || !std::isfinite(dst) || dst < 0)
        return csv.ErrorAt(kFields[i], "'" + std::string(row[i]) + "' is not a finite number >= 0");
      if (dst > max)
        return csv.ErrorAt(kFields[i], "'" + std::string(row[i]) + "' is more than " + ShortNumber(max) +
                                           (i == 8 ? " pairs" : " us; not a measured layer time"));
      return Status();
    };
    int64_t device = 0, mb = 0, layer = 0, spans = 0;
    MMTWIN_RETURN_IF_ERROR(int_field(0, 0, t.iteration));
    MMTWIN_RETURN_IF_ERROR(int_field(1, 0, device));
    MMTWIN_RETURN_IF_ERROR(int_field(2, 0, mb));
    MMTWIN_RETURN_IF_ERROR(int_field(3, 0, layer));
    t.device = static_cast<int32_t>(device);
    t.micro_batch = static_cast<int32_t>(mb);
    t.layer = static_cast<int32_t>(layer);
    t.label = std::string(row[4]);
    if (!ParseLayerKind(std::string(row[5]), t.kind))
      return csv.ErrorAt("kind", "unknown layer kind '" + std::string(row[5]) +
                                     "'; valid values are: embedding, transformer, projector, head");
    MMTWIN_RETURN_IF_ERROR(int_field(6, 0, t.tokens));
    MMTWIN_RETURN_IF_ERROR(int_field(7, 0, spans));
    t.spans = static_cast<int32_t>(spans);
    MMTWIN_RETURN_IF_ERROR(time_field(8, t.attention_pairs, kMaxPairs));
    MMTWIN_RETURN_IF_ERROR(time_field(9, t.fwd_us, kMaxLayerUs));
    MMTWIN_RETURN_IF_ERROR(time_field(10, t.bwd_us, kMaxLayerUs));
    MMTWIN_RETURN_IF_ERROR(time_field(11, t.recompute_us, kMaxLayerUs));
    MMTWIN_RETURN_IF_ERROR(int_field(12, 0, t.act_bytes));
    MMTWIN_RETURN_IF_ERROR(int_field(13, 0, t.out_bytes));
    t.bwd_work_bytes = -1;
    if (!v2) MMTWIN_RETURN_IF_ERROR(int_field(14, 0, t.bwd_work_bytes));
    out.push_back(std::move(t));
  }
  if (!csv.status().ok()) return csv.status().error();
  return out;
}

}  // namespace mmtwin
