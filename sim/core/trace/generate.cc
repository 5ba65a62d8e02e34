// Synthetic trace generators (work in progress: presets are being filled in).
#include "core/trace/generate.h"

namespace mmtwin {

const std::vector<GeneratorPreset>& GeneratorPresets() {
  static const std::vector<GeneratorPreset> kPresets = {
      {"internvl-1.2m", "InternVL-Chat-1.2 SFT mix (9 subsets), InternVL-1.5 dynamic tiling", 1267819},
      {"llava-665k", "LLaVA-1.5 mix665k instruction data, 0 or 1 image per sample", 665298},
      {"lcs-558k", "LLaVA LCS-558K pretraining captions, 1 image and a short caption", 558128},
      {"asr-sqa-mix", "audio: LibriSpeech ASR resampled + AIR-Bench spoken QA resampled", 100000},
      {"long-video", "LongVILA-style long-video SFT, heavy-tailed frame counts", 100000},
  };
  return kPresets;
}

Result<Trace> GenerateTrace(const std::string& preset, int64_t samples, uint64_t seed) {
  (void)samples;
  (void)seed;
  return Error("trace preset '" + preset + "' is not implemented yet");
}

}  // namespace mmtwin
