// SPDX-License-Identifier: Apache-2.0
#include "calibrate/allocator_trace.h"

#include <algorithm>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/plan/caching_allocator.h"
#include "core/util/csv.h"

namespace mmtwin {

Result<AllocatorReplay> ReplayAllocatorTrace(const std::string& csv_text, const std::string& name) {
  AllocatorReplay out;
  CachingAllocatorModel model;
  std::unordered_map<int64_t, int64_t> address_of;  // the trace's block address -> the model's
  // The initial segment being read: its size, first address and blocks (size, handed out, trace address).
  struct Pending {
    int64_t bytes = 0;
    std::vector<std::pair<int64_t, bool>> blocks;
    std::vector<int64_t> trace_addresses;
  };
  Pending pending;
  bool in_segment = false;
  const auto flush = [&]() -> Status {
    if (!in_segment) return Status();
    in_segment = false;
    MMTWIN_ASSIGN_OR_RETURN(std::vector<int64_t> addresses, model.AddSegment(pending.bytes, pending.blocks));
    for (size_t i = 0; i < addresses.size(); ++i)
      if (pending.blocks[i].second) address_of[pending.trace_addresses[i]] = addresses[i];
    pending = Pending{};
    return Status();
  };
  int64_t traced_reserved = 0;
  CsvReader csv = CsvReader::FromString(csv_text, name);
  std::vector<std::string_view> f;
  bool header = false, started = false;
  while (csv.Next(f)) {
    if (!header) {
      if (f.size() != 4 || f[0] != "seq" || f[1] != "action" || f[2] != "addr" || f[3] != "size")
        return csv.ErrorAt("", "expected the header seq,action,addr,size");
      header = true;
      continue;
    }
    const std::string at = name + ":" + std::to_string(csv.line());
    if (f.size() != 4) return csv.ErrorAt("", "expected 4 fields, found " + std::to_string(f.size()));
    int64_t addr = 0, size = 0;
    if (!ParseInt64(f[2], addr)) return csv.ErrorAt("addr", "not an integer");
    if (!ParseInt64(f[3], size) || size < 0) return csv.ErrorAt("size", "not an integer >= 0");
    const std::string action(f[1]);
    if (action == "initial_segment") {
      if (started) return csv.ErrorAt("action", "initial_segment after the recorded events began");
      if (Status st = flush(); !st) return st.error().Wrap(at);
      in_segment = true;
      pending.bytes = size;
      out.traced_start_reserved_bytes += size;
      traced_reserved += size;
    } else if (action == "initial_active_block" || action == "initial_inactive_block") {
      if (!in_segment) return csv.ErrorAt("action", action + " outside an initial_segment");
      pending.blocks.push_back({size, action == "initial_active_block"});
      pending.trace_addresses.push_back(addr);
    } else {
      if (!started) {
        if (Status st = flush(); !st) return st.error().Wrap(at);
        started = true;
        model.ResetPeaks();
        out.traced_peak_reserved_bytes = traced_reserved;
      }
      if (action == "alloc") {
        address_of[addr] = model.Allocate(size);
        ++out.events;
      } else if (action == "free_completed") {
        const auto it = address_of.find(addr);
        if (it == address_of.end()) return csv.ErrorAt("addr", "free_completed of a block never allocated");
        if (Status st = model.Free(it->second); !st) return st.error().Wrap(at);
        address_of.erase(it);
        ++out.events;
      } else if (action == "segment_alloc") {
        traced_reserved += size;
        ++out.traced_segments_created;
        out.traced_peak_reserved_bytes = std::max(out.traced_peak_reserved_bytes, traced_reserved);
      } else if (action == "segment_free") {
        traced_reserved -= size;
      } else if (action != "free_requested" && action != "snapshot" && action != "oom") {
        return csv.ErrorAt("action", "unknown action '" + action + "'");
      }
    }
  }
  if (!csv.status().ok()) return csv.status().error();
  if (!header) return Error(name + ": empty (expected the header seq,action,addr,size)");
  MMTWIN_RETURN_IF_ERROR(flush());
  out.traced_peak_reserved_bytes = std::max(out.traced_peak_reserved_bytes, traced_reserved);
  out.model_peak_reserved_bytes = model.peak_reserved_bytes();
  out.model_peak_allocated_bytes = model.peak_allocated_bytes();
  out.model_segments_created = model.segments_created();
  return out;
}

}  // namespace mmtwin
