// SPDX-License-Identifier: Apache-2.0
// Synthetic, seeded dataset traces for the named presets (internvl-1.2m, llava-665k, lcs-558k, asr-sqa-mix,
// long-video, orchmllm-mix).
//
// Contract: GenerateTrace is pure: same (preset, samples, seed) -> byte-identical trace on every platform (it
// uses mmtwin::Rng only). Sizes follow the Sample units of core/trace/trace.h: images and image_tiles are
// counts (tiles include the InternVL thumbnail), video_frames are sampled frames, audio_seconds are seconds,
// text_tokens are estimated LLM text tokens, image_px the image's side (sqrt of its area; internvl-1.2m: the size
// its tiles were drawn from; llava-665k, lcs-558k, orchmllm-mix: drawn per source from an Rng::Fork of the seed's
// stream, so their other fields do not depend on it). The assumptions and the statistics each preset targets are in
// traces/generators.md. asr-sqa-mix and orchmllm-mix resample real derived traces read from MMTWIN_DATA_DIR
// (environment variable, else the compile-time default <repo>/traces); a missing file is an error, not a crash.
//
//   MMTWIN_ASSIGN_OR_RETURN(Trace t, GenerateTrace("internvl-1.2m", 1267819, /*seed=*/1));
//   for (const GeneratorPreset& p : GeneratorPresets()) std::cout << p.name << ": " << p.description << "\n";
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/trace/trace.h"
#include "core/util/status.h"

namespace mmtwin {

struct GeneratorPreset {
  std::string name;
  std::string description;
  int64_t default_samples;  // the real dataset's size
};

// The presets, in a fixed order (an explicit table, no static registration).
const std::vector<GeneratorPreset>& GeneratorPresets();

// Generates `samples` samples of `preset`. Unknown preset -> "unknown trace preset 'x'; valid values are:
// ..."; samples <= 0 or > 100,000,000 -> error; asr-sqa-mix or orchmllm-mix without its data files -> error
// naming the path.
// default_samples (the real dataset's size) gives the published subset counts exactly.
Result<Trace> GenerateTrace(const std::string& preset, int64_t samples, uint64_t seed);

// InternVL-1.5 dynamic_preprocess tile count for one image of width_px x height_px with grids of 1..max_tiles
// tiles: the grid count, plus 1 thumbnail when the grid has more than one tile (so 1..max_tiles+1). Exposed
// for tests.
int InternVlTiles(double width_px, double height_px, int max_tiles);

}  // namespace mmtwin
