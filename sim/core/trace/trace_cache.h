// SPDX-License-Identifier: Apache-2.0
// The binary trace cache's decoder (trace_cache.cc), exposed for its fuzzer and tests; ReadTrace (trace.h) is
// what everything else uses.
#pragma once

#include <cstdint>
#include <cstdio>

#include "core/trace/trace.h"

namespace mmtwin {

// Decodes a cache of `stream_bytes` bytes from `f` into `out` when its header names this format, cache version
// and the CSV key (csv_bytes, csv_hash: the Hash64 of the CSV's bytes, core/util/hash.h), its counts fit the
// stream, every sample passes ParseTrace's per-sample checks (subset and meta in range, tiles >= images, audio
// in [0, 1e9]), the stream ends exactly after the last sample and (check_body) the body's checksum holds. False
// otherwise, `out` untouched. Ids are not checked for repeats (a cache is written only from a trace that passed
// them). check_body false is for the fuzzer, so that its mutations reach the decoder behind the checksum.
bool DecodeTraceCache(std::FILE* f, uint64_t stream_bytes, uint64_t csv_bytes, uint64_t csv_hash, Trace& out,
                      bool check_body = true);

}  // namespace mmtwin
