// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the LLaVA JSON importer (ImportLlavaText) must return a trace or an Error for any input.
// Accepted traces keep the importer's invariants: tiles = images * tiles_per_image, unique ids, valid
// subsets.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/trace/import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  mmtwin::LlavaImportOptions opt;
  opt.tiles_per_image = 3;
  mmtwin::Result<mmtwin::Trace> t = mmtwin::ImportLlavaText(text, "fuzz.json", opt);
  if (!t.ok()) {
    if (t.error().message().rfind("fuzz.json:", 0) != 0) __builtin_trap();  // errors name the file
    return 0;
  }
  for (const mmtwin::Sample& s : t->samples)
    if (s.image_tiles != s.images * 3 || s.subset >= t->subsets.size()) __builtin_trap();
  if (!mmtwin::ValidateTrace(*t, "fuzz.json").ok()) __builtin_trap();
  (void)mmtwin::CountText(text);
  return 0;
}
