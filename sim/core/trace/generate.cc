// SPDX-License-Identifier: Apache-2.0
// Synthetic trace generators. All tunable per-subset parameters sit in the tables at the top of this file;
// the assumptions behind them and the statistics they reproduce are documented in traces/generators.md.
#include "core/trace/generate.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>

#include "core/util/data_dir.h"
#include "core/util/rng.h"

namespace mmtwin {
namespace {

// ---------------------------------------------------------------------------------------------------------------
// internvl-1.2m: InternVL-Chat-1.2 SFT mix under InternVL-1.5 dynamic tiling (448 px tiles).
// ---------------------------------------------------------------------------------------------------------------

// OmniBal's main InternVL-1.2M runs (Table 3 baseline, 61.8 GPU days) use Max-Patch-Num 4 (Table 9), which is
// what gives its 4K..20K ViT tokens per mini-batch of 4 (1..5 tiles per sample). The grid rule is InternVL's
// dynamic_preprocess for any max; kIvlMaxTiles is the max_num argument.
constexpr int kIvlMaxTiles = 4;
// LLM tokens per tile after pixel shuffle (max_seq_length applies to these).
constexpr int kIvlTileTokens = 256;
constexpr int kIvlMaxSeqTokens = 4096;  // InternVL max_seq_length
constexpr double kIvlTilePx = 448;

// One kind of image within a subset: a nominal size, a log-normal scale spread and a log-normal aspect
// spread.
struct ImageKind {
  double weight;
  double width_px, height_px;
  double size_sigma;    // log-space sigma of a common scale factor
  double aspect_sigma;  // log-space sigma of the aspect ratio
};

struct IvlSubset {
  const char* name;
  int64_t samples;            // exact count in the 1,267,819-sample mix
  int64_t text_only;          // of which without image (ShareGPT text conversations)
  ImageKind kinds[3];         // weight 0 = unused
  double text_median_tokens;  // image samples: log-normal text tokens (template, prompts and answers)
  double text_sigma;
  double text_min_tokens;
  double text_only_median_tokens;  // text-only samples
  double text_only_sigma;
};

// clang-format off
const IvlSubset kIvlSubsets[] = {
  // GPT-4V detailed captions: LAION/CC/SBU web images, COCO, SAM (large), TextCaps; one long caption.
  {"sharegpt4v_instruct_gpt4-vision_cap100k", 102025, 0,
   {{0.45, 800, 600, 0.30, 0.10}, {0.30, 640, 480, 0.10, 0.10}, {0.25, 1500, 2250, 0.25, 0.05}},
   300, 0.20, 80, 0, 0},
  // LLaVA-Instruct-150K translated to Chinese: COCO images, multi-turn conversations.
  {"llava_instruct_150k_zh", 157712, 0,
   {{0.90, 640, 480, 0.10, 0.12}, {0.10, 1000, 750, 0.30, 0.05}, {0, 0, 0, 0, 0}},
   330, 0.30, 60, 0, 0},
  // LLaVA-1.5 mix665k with ShareGPT4V captions: COCO/GQA/VG/OCR-VQA/TextVQA/SAM images; merged multi-QA turns;
  // 40,688 ShareGPT text-only conversations.
  {"sharegpt4v_mix665k", 665058, 40688,
   {{0.77, 640, 480, 0.10, 0.12}, {0.15, 1000, 750, 0.30, 0.05}, {0.08, 320, 500, 0.25, 0.10}},
   285, 0.30, 30, 1200, 0.60},
  // DVQA synthetic bar charts, 448x448; one short question-answer.
  {"dvqa_train_200k", 200000, 0,
   {{1.0, 448, 448, 0.0, 0.0}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}},
   150, 0.25, 30, 0, 0},
  // ChartQA: rendered charts, mostly landscape, some wide.
  {"chartqa_train_18k", 18317, 0,
   {{0.7, 800, 600, 0.20, 0.15}, {0.3, 850, 420, 0.20, 0.15}, {0, 0, 0, 0, 0}},
   90, 0.35, 40, 0, 0},
  // AI2D science diagrams, multiple choice.
  {"ai2d_train_12k", 12413, 0,
   {{1.0, 900, 700, 0.40, 0.30}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}},
   110, 0.30, 50, 0, 0},
  // DocVQA scanned documents (portrait, ~1700x2200), several QA turns.
  {"docvqa_train_10k", 10211, 0,
   {{1.0, 1700, 2200, 0.15, 0.10}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}},
   160, 0.50, 50, 0, 0},
  // GeoQA+: small geometry figures; question with a worked solution.
  {"geoqa+", 72318, 0,
   {{1.0, 220, 160, 0.30, 0.20}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}},
   200, 0.35, 60, 0, 0},
  // SynthDoG-en: synthetic document renders; answer is the full text transcription.
  {"synthdog_en", 29765, 0,
   {{1.0, 1000, 750, 0.25, 0.25}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}},
   700, 0.45, 100, 0, 0},
};
// clang-format on

}  // namespace

// InternVL-1.5 dynamic_preprocess: the grid (i, j), i * j in [1, max_tiles], whose aspect i/j is closest to
// the image's; candidates visited by increasing area; an exact tie moves to the later (larger) grid when the
// image area exceeds half the grid's pixel area. Returns the tile count including the thumbnail added when
// the grid has > 1.
int InternVlTiles(double width_px, double height_px, int max_tiles) {
  const double aspect = width_px / height_px;
  const double area = width_px * height_px;
  int best_i = 1, best_j = 1;
  double best_diff = 1e300;
  for (int n = 1; n <= max_tiles; ++n) {  // by increasing area i*j == n
    for (int i = 1; i <= n; ++i) {
      if (n % i != 0) continue;
      const int j = n / i;
      const double diff = std::fabs(aspect - static_cast<double>(i) / j);
      if (diff < best_diff) {
        best_diff = diff;
        best_i = i;
        best_j = j;
      } else if (diff == best_diff && area > 0.5 * kIvlTilePx * kIvlTilePx * i * j) {
        best_i = i;
        best_j = j;
      }
    }
  }
  const int grid = best_i * best_j;
  return grid > 1 ? grid + 1 : 1;
}

namespace {

// Splits `n` into parts proportional to `weights` (largest remainder; exact when n equals the weights' sum).
std::vector<int64_t> Apportion(const std::vector<int64_t>& weights, int64_t n) {
  const int64_t total = std::accumulate(weights.begin(), weights.end(), int64_t{0});
  std::vector<int64_t> out(weights.size());
  std::vector<std::pair<double, size_t>> rem;
  int64_t used = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    const long double exact = static_cast<long double>(weights[i]) * n / total;
    out[i] = static_cast<int64_t>(exact);
    used += out[i];
    rem.push_back({static_cast<double>(exact - out[i]), i});
  }
  std::stable_sort(rem.begin(), rem.end(), [](auto& a, auto& b) { return a.first > b.first; });
  for (size_t k = 0; used < n; ++k, ++used) ++out[rem[k % rem.size()].second];
  return out;
}

// A list of subset indices with exact counts, shuffled, so subsets interleave.
std::vector<uint16_t> ShuffledSubsets(const std::vector<int64_t>& counts, Rng& rng) {
  std::vector<uint16_t> order;
  order.reserve(std::accumulate(counts.begin(), counts.end(), int64_t{0}));
  for (size_t s = 0; s < counts.size(); ++s) order.insert(order.end(), counts[s], static_cast<uint16_t>(s));
  rng.Shuffle(order);
  return order;
}

// Generated ids: prefix + the sample's index zero-padded to at least 7 digits ("ivl0000042"), stored as a
// counting SampleIds column (no bytes per sample).
constexpr int kIdDigits = 7;

// An image side in Sample::image_px's range (1..65535 px).
uint16_t SidePx(double side) { return static_cast<uint16_t>(std::clamp(std::round(side), 1.0, 65535.0)); }

uint32_t ClampTokens(double v, double lo, double hi) {
  v = std::round(v);
  if (v < lo) v = lo;
  if (v > hi) v = hi;
  return static_cast<uint32_t>(v);
}

Trace GenerateInternVl(int64_t n, Rng& rng) {
  Trace t;
  std::vector<int64_t> counts;
  for (const IvlSubset& s : kIvlSubsets) {
    t.subsets.push_back(s.name);
    counts.push_back(s.samples);
  }
  counts = Apportion(counts, n);
  // Text-only share per subset, exact at full size (a sample is text-only with that subset's exact
  // proportion).
  std::vector<int64_t> text_only_left(counts.size()), left(counts);
  for (size_t s = 0; s < counts.size(); ++s)
    text_only_left[s] = static_cast<int64_t>(std::llround(static_cast<long double>(kIvlSubsets[s].text_only) *
                                                          counts[s] / kIvlSubsets[s].samples));
  const std::vector<uint16_t> order = ShuffledSubsets(counts, rng);
  t.samples.resize(order.size());
  t.ids.PushNumbered("ivl", kIdDigits, 0, order.size());
  for (size_t k = 0; k < order.size(); ++k) {
    const uint16_t si = order[k];
    const IvlSubset& spec = kIvlSubsets[si];
    Sample& smp = t.samples[k];
    smp.subset = si;
    // Sequential sampling without replacement keeps the text-only count exact.
    const bool text_only = text_only_left[si] > 0 && rng.Below(static_cast<uint64_t>(left[si])) <
                                                         static_cast<uint64_t>(text_only_left[si]);
    --left[si];
    if (text_only) {
      --text_only_left[si];
      smp.text_tokens = ClampTokens(rng.LogNormal(spec.text_only_median_tokens, spec.text_only_sigma),
                                    spec.text_min_tokens, kIvlMaxSeqTokens);
      continue;
    }
    double u = rng.Uniform() * (spec.kinds[0].weight + spec.kinds[1].weight + spec.kinds[2].weight);
    int ki = 0;
    while (ki < 2 && (u >= spec.kinds[ki].weight || spec.kinds[ki].weight == 0)) u -= spec.kinds[ki++].weight;
    const ImageKind& kind = spec.kinds[ki];
    const double scale = std::exp(kind.size_sigma * rng.Normal());
    const double aspect = std::exp(0.5 * kind.aspect_sigma * rng.Normal());
    const int tiles =
        InternVlTiles(kind.width_px * scale * aspect, kind.height_px * scale / aspect, kIvlMaxTiles);
    smp.images = 1;
    // The drawn image's size (the aspect factor cancels in the area): no further draw.
    smp.image_px = SidePx(std::sqrt(kind.width_px * kind.height_px) * scale);
    smp.image_tiles = static_cast<uint32_t>(tiles);
    smp.text_tokens = ClampTokens(rng.LogNormal(spec.text_median_tokens, spec.text_sigma),
                                  spec.text_min_tokens, kIvlMaxSeqTokens - kIvlTileTokens * tiles);
  }
  return t;
}

// ---------------------------------------------------------------------------------------------------------------
// llava-665k and lcs-558k: one 336 px image (1 tile) or none; text from LLaVA's length proxy (whitespace
// words).
// ---------------------------------------------------------------------------------------------------------------

constexpr double kTokensPerWord = 1.3;  // English rule of thumb (Llama/Vicuna tokenizer), see generators.md
constexpr double kLlavaMaxTextTokens = 2048;  // LLaVA-1.5 model_max_length

// The images of a source: side = sqrt(width x height) log-normal (median, log sigma), clamped to [lo, hi] and
// rounded (Sample::image_px). Where the figures come from: traces/generators.md ("Image sizes").
struct ImageSides {
  double median_px, sigma, lo_px, hi_px;
};
// COCO (LLaVA-Instruct, VQAv2, OK-VQA, A-OKVQA, RefCOCO): 90% of train images hold 167,500..355,840 pixels,
// i.e. sides 409..597 px (a published summary of instances_train2014.json, generators.md): median
// sqrt(409.3 x 596.5) = 494 px, sigma ln(596.5 / 409.3) / (2 x 1.645) = 0.1145; at most 640 px per side.
constexpr ImageSides kCocoSides = {494, 0.1145, 64, 640};
// Visual Genome (GQA, VG), OCR-VQA book covers, TextCaps (TextVQA's Open Images), LCS-558K: assumptions.
constexpr ImageSides kVgSides = {600, 0.20, 100, 1280};
constexpr ImageSides kOcrVqaSides = {360, 0.30, 64, 1600};
constexpr ImageSides kTextCapsSides = {870, 0.20, 100, 1600};
constexpr ImageSides kLcsSides = {400, 0.35, 64, 1600};
constexpr ImageSides kNoImage = {0, 0, 0, 0};

struct WordSource {
  const char* name;
  int64_t samples;
  bool image;
  double words_median;
  double words_sigma;
  double words_min;
  ImageSides sides;
};

// clang-format off
const WordSource kLlavaSources[] = {
  {"llava_instruct_158k", 157712, true,  170, 0.55, 20, kCocoSides},  // conversation / detail / reasoning
  {"sharegpt",             40688, false, 650, 0.90, 10, kNoImage},    // text-only multi-turn chats
  {"vqav2",                82783, true,   85, 0.45, 16, kCocoSides},  // ~5.4 merged QA turns + short-answer prompt
  {"gqa",                  72140, true,  220, 0.50, 16, kVgSides},    // ~13 merged QA turns
  {"okvqa",                 8998, true,   18, 0.25, 12, kCocoSides},  // ~1 QA turn
  {"ocrvqa",               80000, true,   85, 0.35, 16, kOcrVqaSides},  // ~5 QA turns on book covers
  {"a-okvqa",              66160, true,   35, 0.30, 20, kCocoSides},  // multiple choice with options and letter prompt
  {"textcaps",             21953, true,   21, 0.25, 12, kTextCapsSides},  // one-sentence caption prompt + caption
  {"refcoco",              48447, true,  100, 0.50, 14, kCocoSides},  // region description / grounding with boxes
  {"vg",                   86417, true,  120, 0.50, 14, kVgSides},    // region description turns with boxes
};
// LCS-558K: brief-description instruction (~6 words) + BLIP caption (~10 words).
const WordSource kLcsSources[] = {
  {"lcs_558k", 558128, true, 16, 0.30, 6, kLcsSides},
};
// clang-format on

// The image sizes come from their own stream (`sizes`), so the other fields are what they were before traces
// carried sizes.
void FillWords(const WordSource& src, Rng& rng, Rng& sizes, Sample& s) {
  s.images = src.image ? 1 : 0;
  s.image_tiles = s.images;
  const double words = std::max(src.words_min, rng.LogNormal(src.words_median, src.words_sigma));
  s.text_tokens = ClampTokens(words * kTokensPerWord, 1, kLlavaMaxTextTokens);
  if (src.image) {
    const ImageSides& d = src.sides;
    s.image_px = SidePx(std::clamp(sizes.LogNormal(d.median_px, d.sigma), d.lo_px, d.hi_px));
  }
}

// The stream of a generator's image sizes: Rng::Fork of the generator's stream (which it does not advance).
constexpr uint64_t kImageSizeStream = 0x1A6E;

Trace GenerateWords(const WordSource* sources, size_t count, const char* prefix, int64_t n, Rng& rng) {
  Rng sizes = rng.Fork(kImageSizeStream);
  Trace t;
  std::vector<int64_t> counts;
  for (size_t i = 0; i < count; ++i) {
    t.subsets.push_back(sources[i].name);
    counts.push_back(sources[i].samples);
  }
  const std::vector<uint16_t> order = ShuffledSubsets(Apportion(counts, n), rng);
  t.samples.resize(order.size());
  t.ids.PushNumbered(prefix, kIdDigits, 0, order.size());
  for (size_t k = 0; k < order.size(); ++k) {
    t.samples[k].subset = order[k];
    FillWords(sources[order[k]], rng, sizes, t.samples[k]);
  }
  return t;
}

// ---------------------------------------------------------------------------------------------------------------
// asr-sqa-mix: LibriSpeech ASR and AIR-Bench spoken QA, resampled from the committed real-derived traces.
// ---------------------------------------------------------------------------------------------------------------

constexpr double kAsrShare = 0.7;         // 70% ASR, 30% spoken QA
constexpr uint32_t kAsrPromptTokens = 8;  // "Transcribe the audio." plus role tokens

// AIR-Bench rows without a known duration: nominal clip lengths of the source datasets (public dataset facts:
// MusicCaps and AudioCaps are 10 s AudioSet clips, Clotho 15..30 s, Common Voice / IEMOCAP utterances a few
// s).
struct AudioPrior {
  const char* dataset;
  double median_seconds;
  double sigma;  // log-normal; 0 = fixed
  double lo, hi;
};
// clang-format off
const AudioPrior kAudioPriors[] = {
  {"musiccaps",       10.0, 0.0,  10, 10},
  {"musiccaps_cv",    10.0, 0.0,  10, 10},
  {"audiocaps_cv",    10.0, 0.0,  10, 10},
  {"clotho",          22.0, 0.20, 15, 30},
  {"common_voice_en",  5.0, 0.30,  1, 12},
  {"iemocap",          4.5, 0.50,  1, 20},
};
// clang-format on

Result<Trace> ReadDataTrace(const std::string& preset, const std::string& rel) {
  const std::string path = DataDir() + "/" + rel;
  Result<Trace> r = ReadTrace(path);
  if (!r) return r.error().Wrap(preset + " needs the real-derived trace " + path + " (set MMTWIN_DATA_DIR)");
  if (r->samples.empty()) return Error(preset + ": " + path + " has no samples");
  return r;
}

// The two real-derived audio traces, shared by asr-sqa-mix and orchmllm-mix.
struct AudioSources {
  Trace asr;                  // LibriSpeech train-clean-100
  Trace qa;                   // AIR-Bench Chat
  std::vector<double> known;  // AIR-Bench durations known from file names, for datasets without a prior
};

Result<AudioSources> ReadAudioSources(const std::string& preset) {
  AudioSources a;
  MMTWIN_ASSIGN_OR_RETURN(a.asr, ReadDataTrace(preset, "librispeech/train-clean-100.csv"));
  MMTWIN_ASSIGN_OR_RETURN(a.qa, ReadDataTrace(preset, "airbench/chat.csv"));
  for (size_t i = 0; i < a.qa.samples.size(); ++i)
    if (a.qa.meta(i).find("audio_seconds=unknown") == std::string_view::npos &&
        a.qa.samples[i].audio_seconds > 0)
      a.known.push_back(a.qa.samples[i].audio_seconds);
  return a;
}

// Sample k of `t` becomes LibriSpeech utterance j: its real duration, its transcript estimate + the ASR prompt.
void FillAsr(const AudioSources& a, size_t j, uint16_t subset, Trace& t, size_t k) {
  Sample& s = t.samples[k];
  const Sample& src = a.asr.samples[j];
  s.subset = subset;
  s.audio_seconds = src.audio_seconds;
  s.text_tokens = src.text_tokens + kAsrPromptTokens;
  t.SetMeta(k, a.asr.id(j));
}

// Sample k of `t` becomes AIR-Bench Chat item j (subset qa_subset[its task]); an unknown duration is drawn from
// the source dataset's prior (the only use of `rng`).
void FillSqa(const AudioSources& a, size_t j, const std::vector<uint16_t>& qa_subset, Rng& rng, Trace& t,
             size_t k) {
  Sample& s = t.samples[k];
  const Sample& src = a.qa.samples[j];
  s.subset = qa_subset[src.subset];
  s.text_tokens = src.text_tokens;
  t.SetMeta(k, a.qa.id(j));
  s.audio_seconds = src.audio_seconds;
  const std::string_view src_meta = a.qa.meta(j);
  if (src_meta.find("audio_seconds=unknown") != std::string_view::npos || s.audio_seconds <= 0) {
    const std::string dataset(src_meta.substr(0, src_meta.find(';')));
    const AudioPrior* prior = nullptr;
    for (const AudioPrior& p : kAudioPriors)
      if (dataset == p.dataset) prior = &p;
    if (prior != nullptr) {
      const double v =
          prior->sigma > 0 ? rng.LogNormal(prior->median_seconds, prior->sigma) : prior->median_seconds;
      s.audio_seconds = std::round(std::clamp(v, prior->lo, prior->hi) * 1e4) / 1e4;
    } else if (!a.known.empty()) {
      s.audio_seconds = a.known[rng.Below(a.known.size())];
    } else {
      s.audio_seconds = 10;
    }
  }
}

// The sqa_<task> subsets of `t`, indexed by the AIR-Bench trace's subset index.
std::vector<uint16_t> SqaSubsets(const AudioSources& a, Trace& t) {
  std::vector<uint16_t> qa_subset(a.qa.subsets.size());
  for (size_t i = 0; i < a.qa.subsets.size(); ++i) qa_subset[i] = t.SubsetIndex("sqa_" + a.qa.subsets[i]);
  return qa_subset;
}

Result<Trace> GenerateAsrSqa(int64_t n, Rng& rng) {
  MMTWIN_ASSIGN_OR_RETURN(const AudioSources a, ReadAudioSources("asr-sqa-mix"));
  Trace t;
  const uint16_t asr_subset = t.SubsetIndex("asr_librispeech");
  const std::vector<uint16_t> qa_subset = SqaSubsets(a, t);
  const std::vector<int64_t> counts = Apportion({static_cast<int64_t>(std::llround(kAsrShare * 1000)),
                                                 static_cast<int64_t>(std::llround((1 - kAsrShare) * 1000))},
                                                n);
  const std::vector<uint16_t> order = ShuffledSubsets(counts, rng);
  t.samples.resize(order.size());
  t.ids.PushNumbered("audio", kIdDigits, 0, order.size());
  for (size_t k = 0; k < order.size(); ++k) {
    if (order[k] == 0)
      FillAsr(a, rng.Below(a.asr.samples.size()), asr_subset, t, k);
    else
      FillSqa(a, rng.Below(a.qa.samples.size()), qa_subset, rng, t, k);
  }
  return t;
}

// ---------------------------------------------------------------------------------------------------------------
// orchmllm-mix: OrchMLLM's evaluation data (§8 "Datasets"): LLaVA-1.5's instruction data for vision, LibriSpeech
// ASR and AIR-Bench spoken QA for audio, "randomly sampling the example from the whole dataset". So each source
// enters in proportion to its size: the 10 mix665k sources at their published counts, LibriSpeech as the
// train-clean-100 split (the split whose durations are committed; the paper names none) and AIR-Bench as its
// 2,200 Chat items (the open-ended spoken-QA part). One sample is one dataset example: an image or an audio
// clip, never both (the paper: audio "is evidently absent" from image examples and vice versa). At the default
// size every utterance and every Chat item appears exactly once; larger traces cycle through fresh shuffles.
// ---------------------------------------------------------------------------------------------------------------

constexpr int64_t kOrchLibriSpeechUtterances = 28539;  // train-clean-100 (traces/librispeech/SOURCES.md)
constexpr int64_t kOrchAirBenchChatItems = 2200;       // AIR-Bench Chat (traces/airbench/SOURCES.md)
constexpr int64_t kLlavaMix665k = 665298;              // sum of kLlavaSources
constexpr int64_t kOrchMixSamples = kLlavaMix665k + kOrchLibriSpeechUtterances + kOrchAirBenchChatItems;

// Index k of a source of `size` items in fresh shuffles of 0..size-1, one shuffle per pass over the source.
class Cycler {
 public:
  explicit Cycler(size_t size) : perm_(size) {}
  size_t Next(Rng& rng) {
    if (pos_ == 0) {
      std::iota(perm_.begin(), perm_.end(), uint32_t{0});
      rng.Shuffle(perm_);
    }
    const size_t j = perm_[pos_];
    pos_ = (pos_ + 1) % perm_.size();
    return j;
  }

 private:
  std::vector<uint32_t> perm_;
  size_t pos_ = 0;
};

Result<Trace> GenerateOrchMix(int64_t n, Rng& rng) {
  MMTWIN_ASSIGN_OR_RETURN(const AudioSources a, ReadAudioSources("orchmllm-mix"));
  if (static_cast<int64_t>(a.asr.samples.size()) != kOrchLibriSpeechUtterances ||
      static_cast<int64_t>(a.qa.samples.size()) != kOrchAirBenchChatItems)
    return Error("orchmllm-mix: expected " + std::to_string(kOrchLibriSpeechUtterances) +
                 " LibriSpeech and " + std::to_string(kOrchAirBenchChatItems) + " AIR-Bench rows, found " +
                 std::to_string(a.asr.samples.size()) + " and " + std::to_string(a.qa.samples.size()) +
                 " under " + DataDir());
  Trace t;
  Rng sizes = rng.Fork(kImageSizeStream);
  std::vector<int64_t> weights;
  for (const WordSource& src : kLlavaSources) {
    t.subsets.push_back(src.name);
    weights.push_back(src.samples);
  }
  const size_t asr_group = weights.size(), qa_group = weights.size() + 1;
  weights.push_back(kOrchLibriSpeechUtterances);
  weights.push_back(kOrchAirBenchChatItems);
  const uint16_t asr_subset = t.SubsetIndex("asr_librispeech");
  const std::vector<uint16_t> qa_subset = SqaSubsets(a, t);
  const std::vector<uint16_t> order = ShuffledSubsets(Apportion(weights, n), rng);
  t.samples.resize(order.size());
  t.ids.PushNumbered("omix", kIdDigits, 0, order.size());
  Cycler asr_items(a.asr.samples.size()), qa_items(a.qa.samples.size());
  for (size_t k = 0; k < order.size(); ++k) {
    const uint16_t g = order[k];
    if (g == asr_group) {
      FillAsr(a, asr_items.Next(rng), asr_subset, t, k);
    } else if (g == qa_group) {
      FillSqa(a, qa_items.Next(rng), qa_subset, rng, t, k);
    } else {
      t.samples[k].subset = g;
      FillWords(kLlavaSources[g], rng, sizes, t.samples[k]);
    }
  }
  return t;
}

// ---------------------------------------------------------------------------------------------------------------
// long-video: LongVILA stage-5 long-video SFT (Shot2Story long videos, 196 tokens per frame). Sources and the
// closed-form quantiles of the frame distribution: traces/generators.md.
// ---------------------------------------------------------------------------------------------------------------

// Log-normal body (assumed; the paper's benchmarks use 256 frames).
constexpr double kVideoFramesMedian = 256;
constexpr double kVideoFramesSigma = 0.9;
constexpr double kVideoTailShare = 0.05;  // heavy tail: Pareto(alpha) from 1024 frames
constexpr double kVideoTailAlpha = 1.5;
// At most 2,048 frames: LongVILA "extends the number of video frames of VILA from 8 to 2048" and its model is
// "trained on 2048 frames" (arXiv 2408.10188, abstract and Figure 2).
constexpr double kVideoFramesMin = 32, kVideoFramesMax = 2048;
constexpr double kVideoTextMedian = 350, kVideoTextSigma = 0.6;  // caption or QA turns

Trace GenerateLongVideo(int64_t n, Rng& rng) {
  Trace t;
  const uint16_t caption = t.SubsetIndex("longvideo_caption");
  const uint16_t qa = t.SubsetIndex("longvideo_qa");
  t.samples.resize(static_cast<size_t>(n));
  t.ids.PushNumbered("video", kIdDigits, 0, static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    Sample& s = t.samples[static_cast<size_t>(k)];
    s.subset = rng.Below(2) == 0 ? caption : qa;
    double frames;
    if (rng.Uniform() < kVideoTailShare)
      frames = 1024 * std::pow(1 - rng.Uniform(), -1 / kVideoTailAlpha);
    else
      frames = rng.LogNormal(kVideoFramesMedian, kVideoFramesSigma);
    frames =
        std::clamp(std::round(frames / 8) * 8, kVideoFramesMin, kVideoFramesMax);  // uniform sampling, x8
    s.video_frames = static_cast<uint32_t>(frames);
    const double text = rng.LogNormal(kVideoTextMedian * (s.subset == caption ? 1.5 : 0.6), kVideoTextSigma);
    s.text_tokens = ClampTokens(text, 20, 8192);
  }
  return t;
}

}  // namespace

const std::vector<GeneratorPreset>& GeneratorPresets() {
  static const std::vector<GeneratorPreset> kPresets = {
      {"internvl-1.2m",
       "InternVL-Chat-1.2 SFT mix (9 subsets), InternVL-1.5 dynamic tiling up to 4 tiles + thumbnail",
       1267819},
      {"llava-665k", "LLaVA-1.5 mix665k instruction data (10 sources), 0 or 1 image per sample", 665298},
      {"lcs-558k", "LLaVA LCS-558K pretraining captions, 1 image and a short caption", 558128},
      {"asr-sqa-mix", "audio: 70% LibriSpeech ASR + 30% AIR-Bench spoken QA, resampled from real traces",
       40000},
      {"long-video", "LongVILA-style long-video SFT, 32..2048 frames, heavy tail", 15292},
      {"orchmllm-mix",
       "OrchMLLM's vision+audio data: LLaVA-1.5 mix665k + LibriSpeech ASR + AIR-Bench spoken QA, by source "
       "size",
       kOrchMixSamples},
  };
  return kPresets;
}

Result<Trace> GenerateTrace(const std::string& preset, int64_t samples, uint64_t seed) {
  const auto& presets = GeneratorPresets();
  bool known = false;
  std::string names;
  for (const GeneratorPreset& p : presets) {
    known |= p.name == preset;
    names += (names.empty() ? "" : ", ") + p.name;
  }
  if (!known) return Error("unknown trace preset '" + preset + "'; valid values are: " + names);
  if (samples <= 0)
    return Error("trace preset '" + preset + "': samples must be positive, got " + std::to_string(samples));
  if (samples > 100'000'000)
    return Error("trace preset '" + preset + "': samples must be at most 100000000, got " +
                 std::to_string(samples));
  Rng rng(seed);
  if (preset == "internvl-1.2m") return GenerateInternVl(samples, rng);
  if (preset == "llava-665k")
    return GenerateWords(kLlavaSources, std::size(kLlavaSources), "llava", samples, rng);
  if (preset == "lcs-558k") return GenerateWords(kLcsSources, std::size(kLcsSources), "lcs", samples, rng);
  if (preset == "asr-sqa-mix") return GenerateAsrSqa(samples, rng);
  if (preset == "orchmllm-mix") return GenerateOrchMix(samples, rng);
  return GenerateLongVideo(samples, rng);
}

}  // namespace mmtwin
