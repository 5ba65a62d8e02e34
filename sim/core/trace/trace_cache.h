// SPDX-License-Identifier: Apache-2.0
// The binary trace cache's decoder (trace_cache.cc), exposed for its fuzzer and tests; ReadTrace (trace.h) is
// what everything else uses.
#pragma once

#include <cstdint>
#include <cstdio>

#include "core/trace/trace.h"

namespace mmtwin {

// Decodes a cache of `stream_bytes` bytes from `f` into `out` when its header names this format, cache version
// and the CSV stamp (csv_bytes, csv_mtime_ns), its counts fit the stream, every sample passes ParseTrace's
// per-sample checks (subset and meta in range, tiles >= images, audio in [0, 1e9]) and the stream ends exactly
// after the last sample. False otherwise, `out` untouched. Ids are not checked for repeats (a cache is written
// only from a trace that passed them).
bool DecodeTraceCache(std::FILE* f, uint64_t stream_bytes, uint64_t csv_bytes, int64_t csv_mtime_ns,
                      Trace& out);

}  // namespace mmtwin
