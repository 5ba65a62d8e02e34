// The per-sample dataset trace: what every data policy, generator and importer speaks.
//
// One row per training sample with its modality sizes. Model-independent: a sample's ViT and LLM token counts
// depend on the model (tokens per tile, downsampling) and are derived by SampleTokens() in core/model.
// On disk: a versioned CSV (traces/README.md documents it):
//
//   # mmtwin-trace v1
//   sample_id,subset,images,image_tiles,video_frames,audio_seconds,text_tokens,meta
//   000000017,dvqa_train_200k,1,1,0,0,58,
//
//   MMTWIN_ASSIGN_OR_RETURN(Trace t, ReadTrace("ivl.csv"));
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/util/status.h"

namespace mmtwin {

inline constexpr int kTraceFormatVersion = 1;
// Largest accepted audio duration (about 31 years): bounds formatting and catches unit mix-ups.
inline constexpr double kMaxTraceAudioSeconds = 1e9;

struct Sample {
  std::string id;
  uint16_t subset = 0;        // index into Trace::subsets
  uint32_t images = 0;        // distinct images (0 for text-only)
  uint32_t image_tiles = 0;   // vision tiles over all images, thumbnails included (= images without tiling)
  uint32_t video_frames = 0;  // sampled video frames
  double audio_seconds = 0;   // audio duration
  uint32_t text_tokens = 0;   // text tokens (estimated where no tokenizer ran; see traces/README.md)
  std::string meta;           // free-form, carried through untouched
};

struct Trace {
  std::vector<std::string> subsets;  // subset / task names; Sample::subset indexes it
  std::vector<Sample> samples;

  // Index of `name` in subsets, adding it if new.
  uint16_t SubsetIndex(const std::string& name);
  size_t size() const { return samples.size(); }
};

// Reads a trace CSV. Errors name file, line and field (`ivl.csv:12: image_tiles: not a non-negative integer`).
Result<Trace> ReadTrace(const std::string& path);
// Parses trace CSV text held in memory (`name` is used in messages); what ReadTrace and the fuzzer use.
Result<Trace> ParseTrace(std::string text, const std::string& name);
// Serializes (with the version line) and writes atomically.
std::string FormatTrace(const Trace& trace);
Status WriteTrace(const Trace& trace, const std::string& path);
// Checks invariants a consumer relies on: tiles >= images, finite non-negative audio, unique ids.
Status ValidateTrace(const Trace& trace, const std::string& name);
// Content digest of a trace: FNV-1a over 64-bit words of every sample's fields (id, subset name, images, tiles,
// frames, text tokens, audio seconds as IEEE bits, meta) in order, then an avalanche step; portable. Equal traces give equal digests; the plan records
// it (TraceIdentity) so a rank or a later run can check it holds the same samples.
uint64_t TraceDigest(const Trace& trace);

}  // namespace mmtwin
