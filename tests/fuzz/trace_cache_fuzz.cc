// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the binary trace cache decoder (DecodeTraceCache) must accept or refuse any bytes, never
// crash or read out of bounds; an accepted cache must hold a trace whose every sample passes the per-sample
// checks and whose every id and meta can be read and written as CSV. The input's own header key (bytes 16-31:
// CSV size and hash) is passed as the expected key and the body checksum is not checked, so mutations reach the
// decoder behind it (the checksum's comparison is covered by TraceCacheTest).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "core/trace/trace_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint64_t csv_bytes = 0, csv_hash = 0;
  if (size >= 32) {
    std::memcpy(&csv_bytes, data + 16, 8);
    std::memcpy(&csv_hash, data + 24, 8);
  }
  std::FILE* f = fmemopen(const_cast<uint8_t*>(data), size, "rb");
  if (f == nullptr) return 0;
  mmtwin::Trace t;
  const bool ok = mmtwin::DecodeTraceCache(f, size, csv_bytes, csv_hash, t, /*check_body=*/false);
  std::fclose(f);
  if (!ok) return 0;
  if (t.ids.size() != t.samples.size()) __builtin_trap();
  for (size_t i = 0; i < t.size(); ++i) {
    const mmtwin::Sample& s = t.samples[i];
    if (s.subset >= t.subsets.size() || s.meta_ref > t.metas.size() || s.image_tiles < s.images ||
        !(s.audio_seconds >= 0) || !(s.audio_seconds <= mmtwin::kMaxTraceAudioSeconds))
      __builtin_trap();
    (void)t.id(i);
    (void)t.meta(i);
  }
  (void)mmtwin::FormatTrace(t);
  return 0;
}
