// SPDX-License-Identifier: Apache-2.0
// The per-sample dataset trace: what every data policy, generator and importer speaks.
//
// One row per training sample with its modality sizes. Model-independent: a sample's ViT and LLM token counts
// depend on the model (tokens per tile, downsampling) and are derived by SampleTokens() in core/model.
// On disk: a versioned CSV (traces/README.md documents it):
//
//   # mmtwin-trace v1
//   sample_id,subset,images,image_tiles,video_frames,audio_seconds,text_tokens,image_px,meta
//   000000017,dvqa_train_200k,1,1,0,0,58,448,
//
//   MMTWIN_ASSIGN_OR_RETURN(Trace t, ReadTrace("ivl.csv"));
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/util/status.h"

namespace mmtwin {

inline constexpr int kTraceFormatVersion = 1;
// Largest accepted audio duration (about 31 years): bounds formatting and catches unit mix-ups.
inline constexpr double kMaxTraceAudioSeconds = 1e9;

// One sample's sizes: 32 bytes (20M samples fit in 640 MB). Its id and meta live in the Trace (SampleIds,
// Trace::metas), which stores them compactly.
struct Sample {
  double audio_seconds = 0;   // audio duration
  uint32_t images = 0;        // distinct images (0 for text-only)
  uint32_t image_tiles = 0;   // vision tiles over all images, thumbnails included (= images without tiling)
  uint32_t video_frames = 0;  // sampled video frames
  uint32_t text_tokens = 0;   // text tokens (estimated where no tokenizer ran; see traces/README.md)
  uint32_t meta_ref = 0;      // 0 = no meta; else 1 + index into Trace::metas (free-form, carried through)
  uint16_t subset = 0;        // index into Trace::subsets
  // The images' size: the side of a square of the same area, sqrt(width x height) in pixels, averaged over the
  // sample's images (before any resize or tiling); 0 = not known (the model then prices every image at its
  // encoder's resolution, an upper bound for encoders that keep smaller images: EncoderInput::resize).
  uint16_t image_px = 0;
};
static_assert(sizeof(Sample) == 32, "Sample is the unit of trace memory: keep it 32 bytes");

// The sample ids of a trace, stored compactly. Ids of one shape — a fixed prefix and a decimal number
// zero-padded to a fixed width ("ivl0000042", COCO's "000000033471", a row number "17") — keep only the number
// (8 bytes per id), or nothing per id while the numbers count up by one from the first (generated traces). The
// first id of any other shape turns the column into a string pool (the characters plus an 8-byte end offset per
// id). Get() returns the exact id in every mode.
class SampleIds {
 public:
  enum class Mode : uint8_t { kCounting, kNumbers, kPool };

  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  std::string Get(size_t i) const;
  void Push(std::string_view id);
  // Calls fn(i, id) for every id in order, without formatting each counting id from scratch (the digits are
  // incremented in place): what TraceDigest uses.
  template <class Fn>
  void ForEach(Fn fn) const;
  // Appends `count` ids prefix + (first + k) zero-padded to at least `width` digits (1..18), k = 0..count-1:
  // what the generators write, without formatting each id.
  void PushNumbered(std::string_view prefix, int width, uint64_t first, size_t count);
  // Index pairs (first, second) of the repeated id whose second occurrence comes first, or (n, n) when all are
  // unique. O(n) for counting ids, O(n log n) otherwise.
  std::pair<size_t, size_t> FirstRepeat() const;
  size_t MemoryBytes() const;

  // The representation, for the binary trace cache (trace_cache.cc).
  Mode mode() const { return mode_; }
  const std::string& prefix() const { return prefix_; }
  int width() const { return width_; }
  uint64_t first() const { return first_; }
  const std::vector<uint64_t>& numbers() const { return numbers_; }
  const std::string& chars() const { return chars_; }
  const std::vector<uint64_t>& ends() const { return ends_; }
  // Rebuilds a column from its parts; false when they are inconsistent.
  static bool FromParts(Mode mode, size_t n, std::string prefix, int width, uint64_t first,
                        std::vector<uint64_t> numbers, std::string chars, std::vector<uint64_t> ends,
                        SampleIds& out);

 private:
  bool ParseNumber(std::string_view id, uint64_t& number) const;
  void ToPool();
  void AppendFormatted(uint64_t number, std::string& out) const;

  Mode mode_ = Mode::kCounting;
  size_t n_ = 0;
  bool shaped_ = false;  // prefix_ and width_ are set (the first id had a number)
  std::string prefix_;
  int width_ = 0;
  uint64_t first_ = 0;             // kCounting: the first number
  std::vector<uint64_t> numbers_;  // kNumbers
  std::string chars_;              // kPool
  std::vector<uint64_t> ends_;     // kPool: end offset of each id in chars_
};

template <class Fn>
void SampleIds::ForEach(Fn fn) const {
  if (mode_ != Mode::kCounting) {
    std::string id;
    for (size_t i = 0; i < n_; ++i) {
      if (mode_ == Mode::kPool) {
        const uint64_t b = i == 0 ? 0 : ends_[i - 1];
        fn(i, std::string_view(chars_).substr(b, ends_[i] - b));
      } else {
        id = Get(i);
        fn(i, std::string_view(id));
      }
    }
    return;
  }
  if (n_ == 0) return;
  std::string id = Get(0);
  for (size_t i = 0; i < n_; ++i) {
    if (i > 0) {
      // prefix + digits: add one to the digits; a carry out of the first digit widens the number ("99" -> "100").
      size_t k = id.size();
      while (k > prefix_.size() && id[k - 1] == '9') id[--k] = '0';
      if (k > prefix_.size())
        ++id[k - 1];
      else
        id.insert(prefix_.size(), 1, '1');
    }
    fn(i, std::string_view(id));
  }
}

struct Trace {
  std::vector<std::string> subsets;  // subset / task names; Sample::subset indexes it
  std::vector<Sample> samples;
  SampleIds ids;                   // ids.Get(i) is samples[i]'s id; as many as samples
  std::vector<std::string> metas;  // Sample::meta_ref - 1 indexes it (non-empty strings)

  // Index of `name` in subsets, adding it if new.
  uint16_t SubsetIndex(const std::string& name);
  size_t size() const { return samples.size(); }
  std::string id(size_t i) const { return ids.Get(i); }
  std::string_view meta(size_t i) const {
    const uint32_t r = samples[i].meta_ref;
    return r == 0 ? std::string_view() : std::string_view(metas[r - 1]);
  }
  // Appends a sample with its id and meta (sets s.meta_ref; a meta equal to the previous one is shared).
  void Add(Sample s, std::string_view id, std::string_view meta = {});
  // Sets sample i's meta (generators that fill samples in place).
  void SetMeta(size_t i, std::string_view meta);
};

// Reads a trace CSV. Errors name file, line and field (`ivl.csv:12: image_tiles: not a non-negative integer`).
// A large CSV (TraceCache) is read through a binary cache beside it, PATH.mmtwin-cache, written on the first
// read and used while the CSV's bytes are those it was made from (its size and content hash; a rewrite with the
// same size and time is caught) and its own checksum holds: a re-read costs a hash and a copy, not a parse.
Result<Trace> ReadTrace(const std::string& path);
// kAuto: through the cache for CSVs of at least kTraceCacheMinBytes; the environment variable
// MMTWIN_TRACE_CACHE=off turns the cache off, =always uses it for every CSV. A cache that cannot be written (a
// read-only folder) is skipped without a word; a damaged or stale one is replaced.
enum class TraceCache { kAuto, kOff, kAlways };
inline constexpr uint64_t kTraceCacheMinBytes = uint64_t{16} << 20;
Result<Trace> ReadTrace(const std::string& path, TraceCache cache);
std::string TraceCachePath(const std::string& csv_path);
// Parses trace CSV text held in memory (`name` is used in messages); what ReadTrace and the fuzzer use.
Result<Trace> ParseTrace(std::string text, const std::string& name);
// Serializes (with the version line) and writes atomically.
std::string FormatTrace(const Trace& trace);
Status WriteTrace(const Trace& trace, const std::string& path);
// Checks invariants a consumer relies on: tiles >= images, finite non-negative audio, unique ids, no image size
// without images.
Status ValidateTrace(const Trace& trace, const std::string& name);
// Content digest of a trace: FNV-1a over 64-bit words of every sample's fields (id, subset name, images, tiles,
// frames, text tokens, audio seconds as IEEE bits, image_px when not 0 (so traces without sizes keep the
// digests they had before the column existed), meta) in order, then an avalanche step; portable. Equal traces give equal digests; the plan records
// it (TraceIdentity) so a rank or a later run can check it holds the same samples.
uint64_t TraceDigest(const Trace& trace);

}  // namespace mmtwin
