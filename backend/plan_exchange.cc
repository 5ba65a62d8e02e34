// SPDX-License-Identifier: Apache-2.0
// The plan's sample shapes as text for the store (plan_exchange.h).
#include "backend/plan_exchange.h"

#include <cstdint>
#include <sstream>
#include <vector>

#include "core/util/csv.h"

namespace mmtwin::backend {
namespace {

std::vector<std::string> SplitCsvLine(const std::string& line) {
  std::vector<std::string> f;
  size_t start = 0;
  while (true) {
    const size_t c = line.find(',', start);
    f.push_back(line.substr(start, c == std::string::npos ? std::string::npos : c - start));
    if (c == std::string::npos) break;
    start = c + 1;
  }
  return f;
}

}  // namespace

std::string SamplesText(const Trace& t, const Plan& plan) {
  std::vector<uint8_t> used(t.size(), 0);
  for (const IterationData& it : plan.iterations)
    for (const auto& dp : it.micro_batches)
      for (const auto& mb : dp)
        for (uint32_t i : mb) used[i] = 1;
  std::ostringstream o;
  o.precision(17);
  o << t.size() << "\n";
  for (size_t i = 0; i < t.size(); ++i)
    if (used[i]) {
      const Sample& s = t.samples[i];
      o << i << "," << s.image_tiles << "," << s.video_frames << "," << s.audio_seconds << ","
        << s.text_tokens << "," << s.images << "," << s.image_px << "\n";
    }
  return o.str();
}

Result<Trace> TraceFromText(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  Trace t;
  if (!std::getline(in, line)) return Error("plan samples: empty");
  int64_t n = 0;
  if (!ParseInt64(line, n) || n < 0) return Error("plan samples: bad size");
  t.samples.resize(static_cast<size_t>(n));
  t.ids.PushNumbered("", 1, 0, t.samples.size());  // the plan's sample indices: the backend needs no ids
  while (std::getline(in, line)) {
    std::vector<std::string> f = SplitCsvLine(line);
    int64_t i = 0, tiles = 0, frames = 0, text_tokens = 0, images = 0, image_px = 0;
    double audio = 0;
    // images and image_px: what `fixed` and `if_larger` encoders count (core/model/model.h TokensFor).
    if (f.size() != 7 || !ParseInt64(f[0], i) || !ParseInt64(f[1], tiles) || !ParseInt64(f[2], frames) ||
        !ParseDouble(f[3], audio) || !ParseInt64(f[4], text_tokens) || !ParseInt64(f[5], images) ||
        !ParseInt64(f[6], image_px) || i < 0 || i >= n || image_px > 65535)
      return Error("plan samples: bad line '" + line + "'");
    Sample& s = t.samples[i];
    s.image_tiles = static_cast<uint32_t>(tiles);
    s.video_frames = static_cast<uint32_t>(frames);
    s.audio_seconds = audio;
    s.text_tokens = static_cast<uint32_t>(text_tokens);
    s.images = static_cast<uint32_t>(images);
    s.image_px = static_cast<uint16_t>(image_px);
  }
  return t;
}

}  // namespace mmtwin::backend
