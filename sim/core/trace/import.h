// SPDX-License-Identifier: Apache-2.0
// Importers: convert real dataset descriptions into a Trace (core/trace/trace.h). traces/README.md documents
// each importer, the columns it fills and the tokenizer-free text-token estimates below.
//
// Contract: pure functions of the input bytes (and options); every malformed input is an Error naming the
// file and the place (`llava.json: [12].conversations[1].value: expected a string`, `d.csv:7: audio_seconds:
// ...`, or `llava.json: byte 1234: JSON syntax error: ...`). Units follow Sample: counts, seconds, estimated
// text tokens. Sample ids are made unique: the second and later occurrences of an id get a suffix `#2`, `#3`,
// ...
//
//   LlavaImportOptions opt;
//   opt.tiles_per_image = 7;  // e.g. InternVL dynamic tiling: 6 tiles + thumbnail
//   MMTWIN_ASSIGN_OR_RETURN(Trace t, ImportLlava("llava_v1_5_mix665k.json", opt));
//   MMTWIN_ASSIGN_OR_RETURN(Trace a, ImportCsv("utts.csv", {{"sample_id", "utt"}, {"audio_seconds",
//   "dur"}}));
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/trace/trace.h"
#include "core/util/status.h"

namespace mmtwin {

// ---- Tokenizer-free text-token estimates
// -------------------------------------------------------------------------

// Tokens per whitespace-separated word of Latin-script text (BPE tokenizers of LLaMA/Qwen give ~1.3 on
// English).
inline constexpr double kTokensPerWord = 1.3;
// Words per second of read English speech (LibriSpeech train-clean-100: 990k words in 100.6 h = 2.73
// words/s).
inline constexpr double kSpeechWordsPerSecond = 2.7;

// Counts of a text, the inputs of the estimate: CJK characters (Han, Kana, Hangul, fullwidth forms) count one
// token each; every other maximal run of non-whitespace characters is one word.
struct TextCounts {
  int64_t words = 0;
  int64_t cjk_chars = 0;
};
TextCounts CountText(std::string_view utf8);
// ceil(kTokensPerWord * words) + cjk_chars, saturated to uint32.
uint32_t EstimateTextTokens(const TextCounts& counts);
uint32_t EstimateTextTokens(std::string_view utf8);
// Transcript tokens of `audio_seconds` of speech: round(seconds * kSpeechWordsPerSecond * kTokensPerWord).
uint32_t EstimateSpeechTextTokens(double audio_seconds);

// Largest audio duration an importer accepts (about 31.7 years): larger values are input errors, not audio.
inline constexpr int64_t kMaxAudioSeconds = 1000000000;

// ---- LLaVA conversation JSON
// -------------------------------------------------------------------------------------

struct LlavaImportOptions {
  // Vision tiles per image (1 = no dynamic tiling; InternVL-style tiling: tiles + 1 thumbnail). Must be >= 1.
  uint32_t tiles_per_image = 1;
  // When non-empty, every sample gets this subset instead of the one derived from its image path.
  std::string subset;
};

// Reads a LLaVA-format file: a JSON list of {"id", "image"?: string or list of strings, "conversations":
// [{"from", "value"}, ...]} (other keys are ignored), or JSON Lines (one such object per line, InternVL's
// format; chosen when the first non-blank character is '{'; errors then read `file:LINE:
// conversations[1].value: ...`).
//   images       = max(number of `<image>` placeholders in all turns, number of image paths)
//   image_tiles  = images * tiles_per_image
//   text_tokens  = EstimateTextTokens over all turn values with `<image>` placeholders removed
//   subset       = first directory of the first image path that is not all digits ("coco/train2017/x.jpg" ->
//                  "coco"; ScienceQA's "12345/image.png" -> "images", not one subset per sample); "images" when
//                  there is none; "text-only" when the sample has no image
//   sample_id    = "id" (string or integer), or the element index when absent
Result<Trace> ImportLlava(const std::string& path, const LlavaImportOptions& options = {});
// The same on text held in memory; `name` is used in messages (what tests and the fuzzer call).
Result<Trace> ImportLlavaText(std::string_view json_text, const std::string& name,
                              const LlavaImportOptions& options = {});

// ---- LibriSpeech durations CSV
// -----------------------------------------------------------------------------------

// Reads `sample_id,audio_samples_16k,audio_seconds` (either duration column suffices; when both are present
// they must agree within 10 ms). subset = the split named in the file name (train-clean-100, dev-other, ...)
// else "librispeech"; text_tokens = EstimateSpeechTextTokens(audio_seconds); no images.
Result<Trace> ImportLibriSpeech(const std::string& path);
Result<Trace> ImportLibriSpeechText(std::string csv_text, const std::string& name);
// The split named in a path ("librispeech_dev-clean_durations.csv" -> "dev-clean"), or "librispeech".
std::string LibriSpeechSplit(const std::string& path);

// ---- Generic CSV
// -------------------------------------------------------------------------------------------------

// Trace field -> source column, e.g. {{"audio_seconds", "duration_s"}, {"sample_id", "utt"}}.
using CsvMapping = std::vector<std::pair<std::string, std::string>>;

// The trace fields a mapping may name: sample_id, subset, images, image_tiles, video_frames, audio_seconds,
// text_tokens, meta.
const std::vector<std::string>& TraceFieldNames();

// Reads any CSV with a header row. Unmapped fields default to: sample_id = data row number (1-based), subset
// = "default", image_tiles = images, other numbers 0, meta empty. Count fields accept non-negative integers
// (also integral decimals like "3.0"); audio_seconds a finite non-negative number. Unknown trace field names
// in the mapping and source columns missing from the header are errors listing the valid names. A mapping of no
// modality (none of images, image_tiles, video_frames, audio_seconds, text_tokens), or a file whose samples are
// all empty, is an error: such a trace would simulate as nothing.
//
// Video from durations: the mapping may name `video_seconds` (a clip's length in seconds, not a trace field)
// instead of video_frames; each clip then gets VideoFrames(seconds, video) frames: uniform sampling at `fps`,
// at least one frame for a clip longer than 0 s, at most max_frames (0 = no cap). LongVILA samples a fixed
// frame budget per video uniformly (e.g. 256 frames at inference, up to 2048 in training): fps x duration capped
// at max_frames reproduces that for clips longer than max_frames / fps.
//
// Image sizes: the mapping may name `image_px` (Sample::image_px), or `image_width` and `image_height` (pixels;
// image_px = round(sqrt(width x height))). An empty cell or 0 is "not known"; a size on a sample without
// images is an error.
struct VideoSampling {
  double fps = 1.0;
  int64_t max_frames = 0;
};
uint32_t VideoFrames(double seconds, const VideoSampling& video);
Result<Trace> ImportCsv(const std::string& path, const CsvMapping& mapping, const VideoSampling& video = {});
Result<Trace> ImportCsvText(std::string csv_text, const std::string& name, const CsvMapping& mapping,
                            const VideoSampling& video = {});

}  // namespace mmtwin
