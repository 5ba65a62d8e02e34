// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the generic CSV importer (ImportCsvText) with a mapping of every trace field must return a
// trace or an Error for any input; an accepted trace must validate and survive the trace CSV round trip.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/trace/import.h"
#include "core/trace/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  // The first byte picks how much of the mapping is used, so defaults (unmapped fields) are reached too.
  static const mmtwin::CsvMapping kFull = {
      {"sample_id", "id"},        {"subset", "src"},        {"images", "img"},      {"image_tiles", "tiles"},
      {"video_frames", "frames"}, {"audio_seconds", "dur"}, {"text_tokens", "tok"}, {"meta", "note"}};
  const size_t used = size == 0 ? 0 : static_cast<size_t>(data[0]) % (kFull.size() + 1);
  const mmtwin::CsvMapping mapping(kFull.begin(), kFull.begin() + static_cast<std::ptrdiff_t>(used));
  if (size > 0) text.erase(0, 1);
  mmtwin::Result<mmtwin::Trace> t = mmtwin::ImportCsvText(std::move(text), "fuzz.csv", mapping);
  if (!t.ok()) {
    if (t.error().message().empty()) __builtin_trap();
    return 0;
  }
  if (!mmtwin::ValidateTrace(*t, "fuzz.csv").ok()) __builtin_trap();
  mmtwin::Result<mmtwin::Trace> u = mmtwin::ParseTrace(mmtwin::FormatTrace(*t), "again.csv");
  if (!u.ok() || u->size() != t->size()) __builtin_trap();
  for (size_t i = 0; i < t->size(); ++i) {
    const mmtwin::Sample& a = t->samples[i];
    const mmtwin::Sample& b = u->samples[i];
    if (t->id(i) != u->id(i) || a.images != b.images || a.image_tiles != b.image_tiles ||
        a.video_frames != b.video_frames || a.text_tokens != b.text_tokens || t->meta(i) != u->meta(i))
      __builtin_trap();
  }
  return 0;
}
