// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the model spec parser (ParseModel, YAML) must return a spec or an Error for any input;
// yaml-cpp exceptions must not escape. Component references resolve against the model zoo, so valid specs get
// deep coverage.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/model/model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  static const std::string zoo = mmtwin::ModelZooDir();
  mmtwin::Result<mmtwin::ModelSpec> m = mmtwin::ParseModel(text, "fuzz.yaml", zoo);
  if (!m.ok()) return 0;
  // Exercise the consumers of a parsed spec.
  (void)mmtwin::TotalParams(*m);
  (void)mmtwin::Layers(*m);
  mmtwin::Sample s;
  s.images = 1;
  s.image_tiles = 3;
  s.video_frames = 2;
  s.audio_seconds = 12.5;
  s.text_tokens = 100;
  (void)mmtwin::TokensFor(*m, s);
  return 0;
}
