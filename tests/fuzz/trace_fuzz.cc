// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the trace CSV parser (ParseTrace) must return a value or an Error for any input, never
// crash. Accepted traces must survive a format/parse round trip unchanged.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/trace/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  mmtwin::Result<mmtwin::Trace> t = mmtwin::ParseTrace(text, "fuzz.csv");
  if (!t.ok()) {
    if (t.error().message().empty()) __builtin_trap();  // every error must say something
    return 0;
  }
  (void)mmtwin::ValidateTrace(*t, "fuzz.csv");
  const std::string again = mmtwin::FormatTrace(*t);
  mmtwin::Result<mmtwin::Trace> u = mmtwin::ParseTrace(again, "again.csv");
  if (!u.ok() || u->size() != t->size()) __builtin_trap();
  for (size_t i = 0; i < t->size(); ++i) {
    const mmtwin::Sample& a = t->samples[i];
    const mmtwin::Sample& b = u->samples[i];
    if (t->id(i) != u->id(i) || a.images != b.images || a.image_tiles != b.image_tiles ||
        a.text_tokens != b.text_tokens || a.video_frames != b.video_frames || t->meta(i) != u->meta(i) ||
        t->subsets[a.subset] != u->subsets[b.subset])
      __builtin_trap();
  }
  return 0;
}
