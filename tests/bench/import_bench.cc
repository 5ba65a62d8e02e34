// SPDX-License-Identifier: Apache-2.0
// Importer throughput on generated inputs held in memory. Target: a 1.27M-row CSV (the InternVL-1.2M SFT
// size) imports in <= 3 s on one core.
//
//   build-*/tests/import_bench --benchmark_filter=Csv
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/trace/generate.h"
#include "core/trace/import.h"
#include "core/trace/stats.h"
#include "core/trace/trace.h"
#include "core/util/rng.h"

namespace mmtwin {
namespace {

constexpr int64_t kInternVlRows = 1267819;

// A trace-like CSV with columns named differently from the trace fields (so the mapping is exercised).
const std::string& GeneratedCsv() {
  static const std::string text = [] {
    Rng rng(1);
    const char* subsets[] = {"sharegpt4v", "llava_zh", "dvqa_train_200k", "chartqa", "ai2d",
                             "docvqa",     "geoqa+",   "synthdog_en",     "coco"};
    std::string o = "utt,task,n_images,n_tiles,frames,dur_s,tokens,note\n";
    o.reserve(kInternVlRows * 56);
    char buf[160];
    for (int64_t i = 0; i < kInternVlRows; ++i) {
      const uint64_t img = rng.Below(10) == 0 ? 0 : 1;
      const uint64_t tiles = img * (1 + rng.Below(7));
      const int n = std::snprintf(
          buf, sizeof buf, "%09lld,%s,%llu,%llu,0,%.3f,%llu,\n", static_cast<long long>(i),
          subsets[rng.Below(9)], static_cast<unsigned long long>(img), static_cast<unsigned long long>(tiles),
          rng.Uniform(0, 30), static_cast<unsigned long long>(20 + rng.Below(2000)));
      o.append(buf, static_cast<size_t>(n));
    }
    return o;
  }();
  return text;
}

void BM_ImportCsv_1_27M(benchmark::State& state) {
  const std::string& text = GeneratedCsv();
  const CsvMapping mapping = {{"sample_id", "utt"},       {"subset", "task"},
                              {"images", "n_images"},     {"image_tiles", "n_tiles"},
                              {"video_frames", "frames"}, {"audio_seconds", "dur_s"},
                              {"text_tokens", "tokens"},  {"meta", "note"}};
  for (auto _ : state) {
    Result<Trace> t = ImportCsvText(text, "bench.csv", mapping);
    if (!t.ok() || t->size() != static_cast<size_t>(kInternVlRows)) state.SkipWithError("import failed");
    benchmark::DoNotOptimize(t);
  }
  state.SetItemsProcessed(state.iterations() * kInternVlRows);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_ImportCsv_1_27M)->Unit(benchmark::kMillisecond)->Iterations(3);

// The trace format's own parser on the same rows (FormatTrace of the import), including its repeated-sample_id
// check (a sort of 1.27M (hash, index) pairs); compare with BM_ImportCsv_1_27M in the same run.
void BM_ParseTrace_1_27M(benchmark::State& state) {
  static const std::string text = [] {
    const CsvMapping mapping = {{"sample_id", "utt"},       {"subset", "task"},
                                {"images", "n_images"},     {"image_tiles", "n_tiles"},
                                {"video_frames", "frames"}, {"audio_seconds", "dur_s"},
                                {"text_tokens", "tokens"}};
    Result<Trace> t = ImportCsvText(GeneratedCsv(), "bench.csv", mapping);
    return t.ok() ? FormatTrace(*t) : std::string();
  }();
  for (auto _ : state) {
    Result<Trace> t = ParseTrace(text, "bench.csv");
    if (!t.ok() || t->size() != static_cast<size_t>(kInternVlRows)) state.SkipWithError("parse failed");
    benchmark::DoNotOptimize(t);
  }
  state.SetItemsProcessed(state.iterations() * kInternVlRows);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_ParseTrace_1_27M)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_ImportLibriSpeech_1_27M(benchmark::State& state) {
  static const std::string text = [] {
    Rng rng(2);
    std::string o = "sample_id,audio_samples_16k,audio_seconds\n";
    char buf[96];
    for (int64_t i = 0; i < kInternVlRows; ++i) {
      const uint64_t n = 16000 + rng.Below(16000 * 30);
      const int len =
          std::snprintf(buf, sizeof buf, "%lld-%lld-%04lld,%llu,%.4f\n", static_cast<long long>(i % 251),
                        static_cast<long long>(i / 251), static_cast<long long>(i % 97),
                        static_cast<unsigned long long>(n), static_cast<double>(n) / 16000.0);
      o.append(buf, static_cast<size_t>(len));
    }
    return o;
  }();
  for (auto _ : state) {
    Result<Trace> t = ImportLibriSpeechText(text, "train-clean-100.csv");
    if (!t.ok()) state.SkipWithError(t.error().message().c_str());
    benchmark::DoNotOptimize(t);
  }
  state.SetItemsProcessed(state.iterations() * kInternVlRows);
}
BENCHMARK(BM_ImportLibriSpeech_1_27M)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_ImportLlava_100k(benchmark::State& state) {
  static const std::string text = [] {
    Rng rng(3);
    std::string o = "[";
    for (int i = 0; i < 100000; ++i) {
      if (i) o += ",\n";
      o += R"({"id": ")" + std::to_string(i) + R"(", "image": "coco/train2017/)" + std::to_string(i) +
           R"(.jpg", "conversations": [{"from": "human", "value": "<image>\nWhat is shown in this picture? )";
      const int words = static_cast<int>(rng.Below(60));
      for (int w = 0; w < words; ++w) o += "word ";
      o += R"("}, {"from": "gpt", "value": "A description of a scene with several objects in it."}]})";
    }
    o += "]";
    return o;
  }();
  for (auto _ : state) {
    Result<Trace> t = ImportLlavaText(text, "llava.json");
    if (!t.ok()) state.SkipWithError(t.error().message().c_str());
    benchmark::DoNotOptimize(t);
  }
  state.SetItemsProcessed(state.iterations() * 100000);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_ImportLlava_100k)->Unit(benchmark::kMillisecond);

void BM_Stats_1_27M(benchmark::State& state) {
  Result<Trace> t =
      ImportCsvText(GeneratedCsv(), "bench.csv",
                    {{"images", "n_images"}, {"image_tiles", "n_tiles"}, {"text_tokens", "tokens"}});
  if (!t.ok()) {
    state.SkipWithError("import failed");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(ComputeStats(*t));
  state.SetItemsProcessed(state.iterations() * kInternVlRows);
}
BENCHMARK(BM_Stats_1_27M)->Unit(benchmark::kMillisecond)->Iterations(3);

// ReadTrace of a 2M-sample generated trace CSV (89 MB), parsed and through its binary cache (issue 15: a re-read
// costs a copy, not a parse). The file is written once under $TMPDIR (or /tmp) and removed at exit.
const std::string& TraceCsvPath() {
  // Never destroyed: the atexit handler below runs after static destructors of objects built before it.
  static const std::string* const path = [] {
    const char* dir = std::getenv("TMPDIR");
    auto* p = new std::string(std::string(dir != nullptr ? dir : "/tmp") + "/mmtwin_read_bench_" +
                              std::to_string(::getpid()) + ".csv");
    Result<Trace> t = GenerateTrace("internvl-1.2m", 2000000, 1);
    if (!t.ok() || !WriteTrace(*t, *p).ok()) std::abort();
    std::atexit([] {
      std::remove(TraceCachePath(TraceCsvPath()).c_str());
      std::remove(TraceCsvPath().c_str());
    });
    return p;
  }();
  return *path;
}

void BM_ReadTrace_2M(benchmark::State& state, TraceCache cache) {
  const std::string& path = TraceCsvPath();
  if (cache == TraceCache::kAlways && !ReadTrace(path, cache).ok()) std::abort();  // writes the cache
  for (auto _ : state) {
    Result<Trace> t = ReadTrace(path, cache);
    if (!t.ok()) state.SkipWithError(t.error().message().c_str());
    benchmark::DoNotOptimize(t);
  }
  state.SetItemsProcessed(state.iterations() * 2000000);
}
BENCHMARK_CAPTURE(BM_ReadTrace_2M, csv, TraceCache::kOff)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(BM_ReadTrace_2M, cache, TraceCache::kAlways)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace mmtwin
