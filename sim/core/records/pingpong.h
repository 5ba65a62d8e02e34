// SPDX-License-Identifier: Apache-2.0
// pingpong.csv: point-to-point round trips measured by `mmtwin-train launch --pingpong` (backend/README.md), the
// link calibration's dedicated input (calibrate/links.h). Rank 0 sends a message of `bytes` to rank `peer`,
// which sends it straight back; round_trip_us is rank 0's time from the send's post to the echo's arrival.
//
// Format: a version line `# mmtwin-pingpong v1`, the header `peer,bytes,round_trip_us`, one row per timed
// exchange (warm-up exchanges are not written).
//
//   rows = ParsePingPongCsv(text, "runs/pp/pingpong.csv").value();   // a run folder's: ReadRunFolder (run_folder.h)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/util/status.h"

namespace mmtwin {

struct PingPongSample {
  int32_t peer = 1;  // the echoing rank (rank 0 is the other end)
  int64_t bytes = 0;
  double round_trip_us = 0;
  long line = 0;  // where it was parsed from (messages); 0 when built in code
};

std::string PingPongCsv(const std::vector<PingPongSample>& rows);
// Strict: errors name `name:line: field`; another version or header, a peer < 1, bytes < 1 or a round trip
// that is not a finite number > 0 is an error.
Result<std::vector<PingPongSample>> ParsePingPongCsv(const std::string& text, const std::string& name);

}  // namespace mmtwin
