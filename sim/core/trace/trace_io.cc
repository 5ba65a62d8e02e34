// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <utility>
#include <vector>

#include "core/trace/trace.h"
#include "core/util/csv.h"
#include "core/util/text.h"

namespace mmtwin {

uint16_t Trace::SubsetIndex(const std::string& name) {
  for (size_t i = 0; i < subsets.size(); ++i)
    if (subsets[i] == name) return static_cast<uint16_t>(i);
  subsets.push_back(name);
  return static_cast<uint16_t>(subsets.size() - 1);
}

namespace {

const char* const kColumns[] = {"sample_id",    "subset",        "images",      "image_tiles",
                                "video_frames", "audio_seconds", "text_tokens", "meta"};
constexpr int kRequired = 7;  // meta is optional

// The optional image-size columns: image_px (the side of a square of the images' area), or image_width and
// image_height, read into Sample::image_px as round(sqrt(width x height)). An empty cell = not known (0).
struct SizeColumns {
  int px = -1, width = -1, height = -1;
};

Result<SizeColumns> FindSizeColumns(const CsvReader& csv, const CsvHeader& header) {
  SizeColumns c{header.Find("image_px"), header.Find("image_width"), header.Find("image_height")};
  if ((c.width >= 0) != (c.height >= 0))
    return csv.ErrorAt(c.width >= 0 ? "image_height" : "image_width",
                       "missing column in header: image_width and image_height come together");
  if (c.px >= 0 && c.width >= 0)
    return csv.ErrorAt("image_px", "give image_px or image_width and image_height, not both");
  return c;
}

Status ParseSide(const CsvReader& csv, std::string_view field, const char* name, int64_t max, int64_t& out) {
  out = 0;
  if (field.empty()) return Status();
  if (!ParseInt64(field, out) || out < 0 || out > max)
    return csv.ErrorAt(name, "'" + Abbreviate(std::string(field)) + "' is not an integer in [0, " +
                                 std::to_string(max) + "] pixels (empty or 0 = not known)");
  return Status();
}

Status ParseImageSize(const CsvReader& csv, const std::vector<std::string_view>& f, const SizeColumns& c,
                      Sample& s) {
  int64_t px = 0;
  if (c.px >= 0) {
    MMTWIN_RETURN_IF_ERROR(ParseSide(csv, f[c.px], "image_px", 65535, px));
  } else if (c.width >= 0) {
    int64_t w = 0, h = 0;
    MMTWIN_RETURN_IF_ERROR(ParseSide(csv, f[c.width], "image_width", 1 << 20, w));
    MMTWIN_RETURN_IF_ERROR(ParseSide(csv, f[c.height], "image_height", 1 << 20, h));
    if ((w == 0) != (h == 0))
      return csv.ErrorAt(w == 0 ? "image_width" : "image_height",
                         "not known while the other side is; give both or neither");
    px = std::llround(std::sqrt(static_cast<double>(w) * static_cast<double>(h)));
    if (px > 65535)
      return csv.ErrorAt("image_width", std::to_string(w) + " x " + std::to_string(h) +
                                            " px is above the 65535 x 65535 limit");
  }
  if (px > 0 && s.images == 0)
    return csv.ErrorAt(c.px >= 0 ? "image_px" : "image_width",
                       std::to_string(px) + " px given for a sample without images");
  s.image_px = static_cast<uint16_t>(px);
  return Status();
}

Status ParseCount(const CsvReader& csv, std::string_view field, const char* name, uint32_t& out) {
  int64_t v;
  if (!ParseInt64(field, v) || v < 0 || v > 0xFFFFFFFFll)
    return csv.ErrorAt(name, "'" + Abbreviate(std::string(field)) + "' is not a non-negative integer");
  out = static_cast<uint32_t>(v);
  return Status();
}

// The first repeated sample_id (by the line of its second occurrence) as an error naming both lines.
Status CheckUniqueIds(const Trace& t, const std::vector<long>& lines, const std::string& name) {
  const auto [first, second] = t.ids.FirstRepeat();
  if (second >= t.ids.size()) return Status();
  std::string id = t.id(second);
  if (id.size() > 80) id = id.substr(0, 77) + "...";
  return Error::At(name, lines[second], "sample_id",
                   "duplicate '" + id + "' (first at line " + std::to_string(lines[first]) +
                       "); sample ids must be unique in a trace");
}

}  // namespace

Result<Trace> ParseTrace(std::string text, const std::string& name) {
  CsvReader csv = CsvReader::FromString(std::move(text), name);
  std::vector<std::string_view> f;
  if (!csv.Next(f)) {
    if (!csv.status().ok()) return csv.status().error();
    return Error::At(name, 1, "", "empty trace: expected the header line");
  }
  for (const auto& c : csv.comments()) {
    int v = 0;
    if (std::sscanf(c.c_str(), " mmtwin-trace v%d", &v) == 1 && v != kTraceFormatVersion)
      return Error::At(name, 1, "",
                       "trace format v" + std::to_string(v) + " is not supported (this mmtwin reads v" +
                           std::to_string(kTraceFormatVersion) + ")");
  }
  CsvHeader header(f);
  MMTWIN_RETURN_IF_ERROR(header.CheckUnique(csv));
  int col[8];
  for (int i = 0; i < 8; ++i) {
    col[i] = header.Find(kColumns[i]);
    if (i < kRequired && col[i] < 0)
      return csv.ErrorAt(kColumns[i],
                         "missing column in header (a trace needs sample_id, subset, images, "
                         "image_tiles, video_frames, audio_seconds, text_tokens[, image_px][, meta])");
  }
  MMTWIN_ASSIGN_OR_RETURN(const SizeColumns size_cols, FindSizeColumns(csv, header));
  const size_t width = header.names().size();
  Trace t;
  std::vector<long> lines;  // each sample's line, for duplicate-id messages
  std::string last_subset;
  uint16_t last_index = 0;
  while (csv.Next(f)) {
    if (f.size() != width)
      return csv.ErrorAt("",
                         "expected " + std::to_string(width) + " fields, found " + std::to_string(f.size()));
    Sample s;
    if (f[col[0]].empty()) return csv.ErrorAt("sample_id", "empty");
    // Text fields must be UTF-8: they are written into JSON and CSV outputs (issue 34).
    if (!ValidUtf8(f[col[0]])) return csv.ErrorAt("sample_id", "not valid UTF-8");
    if (col[7] >= 0 && !ValidUtf8(f[col[7]])) return csv.ErrorAt("meta", "not valid UTF-8");
    std::string_view subset = f[col[1]];
    if (t.subsets.empty() || subset != last_subset) {
      if (!ValidUtf8(subset)) return csv.ErrorAt("subset", "not valid UTF-8");
      last_subset.assign(subset);
      if (t.subsets.size() >= 65535) {
        bool known = false;
        for (auto& n : t.subsets) known |= n == last_subset;
        if (!known) return csv.ErrorAt("subset", "more than 65535 distinct subsets");
      }
      last_index = t.SubsetIndex(last_subset);
    }
    s.subset = last_index;
    MMTWIN_RETURN_IF_ERROR(ParseCount(csv, f[col[2]], "images", s.images));
    MMTWIN_RETURN_IF_ERROR(ParseCount(csv, f[col[3]], "image_tiles", s.image_tiles));
    MMTWIN_RETURN_IF_ERROR(ParseCount(csv, f[col[4]], "video_frames", s.video_frames));
    if (!ParseDouble(f[col[5]], s.audio_seconds) || s.audio_seconds < 0)
      return csv.ErrorAt("audio_seconds",
                         "'" + Abbreviate(std::string(f[col[5]])) + "' is not a non-negative number");
    if (s.audio_seconds > kMaxTraceAudioSeconds)
      return csv.ErrorAt("audio_seconds",
                         "'" + Abbreviate(std::string(f[col[5]])) + "' is above the limit of 1e9 seconds");
    MMTWIN_RETURN_IF_ERROR(ParseCount(csv, f[col[6]], "text_tokens", s.text_tokens));
    if (s.image_tiles < s.images)
      return csv.ErrorAt("image_tiles", std::to_string(s.image_tiles) + " tiles is fewer than the " +
                                            std::to_string(s.images) + " images");
    MMTWIN_RETURN_IF_ERROR(ParseImageSize(csv, f, size_cols, s));
    t.Add(s, f[col[0]], col[7] >= 0 ? f[col[7]] : std::string_view());
    lines.push_back(csv.line());
  }
  if (!csv.status().ok()) return csv.status().error();
  MMTWIN_RETURN_IF_ERROR(CheckUniqueIds(t, lines, name));
  return t;
}

std::string FormatTrace(const Trace& t) {
  std::string o;
  o.reserve(64 + t.samples.size() * 64);
  o += "# mmtwin-trace v" + std::to_string(kTraceFormatVersion) + "\n";
  // The image_px column only when some sample has a size: traces without sizes keep their v1 bytes.
  const bool sizes =
      std::any_of(t.samples.begin(), t.samples.end(), [](const Sample& s) { return s.image_px != 0; });
  o += sizes ? "sample_id,subset,images,image_tiles,video_frames,audio_seconds,text_tokens,image_px,meta\n"
             : "sample_id,subset,images,image_tiles,video_frames,audio_seconds,text_tokens,meta\n";
  char num[96];
  // snprintf returns the untruncated length; never append more than the buffer holds.
  auto put = [&](int n) {
    o.append(num, static_cast<size_t>(std::clamp(n, 0, static_cast<int>(sizeof num) - 1)));
  };
  for (size_t i = 0; i < t.samples.size(); ++i) {
    const Sample& s = t.samples[i];
    o += CsvQuote(t.id(i));
    o += ',';
    o += CsvQuote(t.subsets[s.subset]);
    int n = std::snprintf(num, sizeof num, ",%u,%u,%u,", s.images, s.image_tiles, s.video_frames);
    put(n);
    // Audio to 4 decimals (LibriSpeech sample resolution is 1/16000 s; 0.1 ms is enough); integral values
    // plain.
    if (s.audio_seconds == std::floor(s.audio_seconds))
      n = std::snprintf(num, sizeof num, "%.0f", s.audio_seconds);
    else
      n = std::snprintf(num, sizeof num, "%.4f", s.audio_seconds);
    put(n);
    if (sizes)
      n = std::snprintf(num, sizeof num, ",%u,%u,", s.text_tokens, static_cast<unsigned>(s.image_px));
    else
      n = std::snprintf(num, sizeof num, ",%u,", s.text_tokens);
    put(n);
    o += CsvQuote(std::string(t.meta(i)));
    o += '\n';
  }
  return o;
}

Status WriteTrace(const Trace& trace, const std::string& path) {
  return WriteFileAtomic(path, FormatTrace(trace));
}

Status ValidateTrace(const Trace& t, const std::string& name) {
  if (t.ids.size() != t.samples.size())
    return Error(name + ": " + std::to_string(t.ids.size()) + " sample ids for " +
                 std::to_string(t.samples.size()) + " samples");
  for (size_t i = 0; i < t.samples.size(); ++i) {
    const Sample& s = t.samples[i];
    if (s.subset >= t.subsets.size())
      return Error(name + ": sample " + t.id(i) + ": subset index out of range");
    if (s.image_tiles < s.images) return Error(name + ": sample " + t.id(i) + ": fewer tiles than images");
    if (!(s.audio_seconds >= 0) || !(s.audio_seconds <= kMaxTraceAudioSeconds))
      return Error(name + ": sample " + t.id(i) + ": audio_seconds must be in [0, 1e9]");
    if (s.meta_ref > t.metas.size()) return Error(name + ": sample " + t.id(i) + ": meta index out of range");
    if (s.image_px != 0 && s.images == 0)
      return Error(name + ": sample " + t.id(i) + ": image_px given for a sample without images");
  }
  const auto [first, second] = t.ids.FirstRepeat();
  if (second < t.ids.size()) return Error(name + ": duplicate sample_id '" + t.id(second) + "'");
  return Status();
}

uint64_t TraceDigest(const Trace& trace) {
  // FNV-1a over 64-bit words (strings in 8-byte little-endian chunks, zero-padded, after their length), then a
  // final avalanche: portable and ~8x faster than byte-wise FNV on a 1.27M-sample trace.
  uint64_t h = 1469598103934665603ull;
  auto word = [&h](uint64_t w) { h = (h ^ w) * 1099511628211ull; };
  auto str = [&](std::string_view s) {
    word(s.size());
    size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
      uint64_t w = 0;
      for (int b = 0; b < 8; ++b) w |= static_cast<uint64_t>(static_cast<unsigned char>(s[i + b])) << (8 * b);
      word(w);
    }
    uint64_t w = 0;
    for (int b = 0; i < s.size(); ++i, ++b)
      w |= static_cast<uint64_t>(static_cast<unsigned char>(s[i])) << (8 * b);
    word(w);
  };
  trace.ids.ForEach([&](size_t i, std::string_view id) {
    if (i >= trace.samples.size()) return;
    const Sample& x = trace.samples[i];
    str(id);
    str(x.subset < trace.subsets.size() ? std::string_view(trace.subsets[x.subset]) : std::string_view());
    word(static_cast<uint64_t>(x.images) | static_cast<uint64_t>(x.image_tiles) << 32);
    word(static_cast<uint64_t>(x.video_frames) | static_cast<uint64_t>(x.text_tokens) << 32);
    uint64_t audio_bits = 0;
    static_assert(sizeof audio_bits == sizeof x.audio_seconds);
    std::memcpy(&audio_bits, &x.audio_seconds, sizeof audio_bits);
    word(audio_bits);
    if (x.image_px != 0) word(uint64_t{0x1A6E} << 48 | x.image_px);  // tagged: cannot read as a string length
    str(trace.meta(i));
  });
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

}  // namespace mmtwin
