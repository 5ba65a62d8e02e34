// SPDX-License-Identifier: Apache-2.0
#include "core/trace/import.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "core/util/csv.h"
#include "core/util/text.h"

namespace mmtwin {

// ---- Text estimates
// ---------------------------------------------------------------------------------------------

namespace {

bool IsSpace(uint32_t cp) {
  return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || cp == '\v' || cp == '\f' || cp == 0x85 ||
         cp == 0xA0 || cp == 0x3000 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029;
}

// Scripts a BPE tokenizer splits roughly one token per character.
bool IsCjk(uint32_t cp) {
  return (cp >= 0x2E80 && cp <= 0x2FFF) ||  // CJK radicals, Kangxi
         (cp >= 0x3001 && cp <= 0x30FF) ||  // CJK punctuation, Hiragana, Katakana
         (cp >= 0x3100 && cp <= 0x31FF) ||  // Bopomofo, Hangul compatibility jamo, Katakana ext.
         (cp >= 0x3400 && cp <= 0x4DBF) ||  // CJK extension A
         (cp >= 0x4E00 && cp <= 0x9FFF) ||  // CJK unified ideographs
         (cp >= 0xAC00 && cp <= 0xD7AF) ||  // Hangul syllables
         (cp >= 0xF900 && cp <= 0xFAFF) ||  // CJK compatibility ideographs
         (cp >= 0xFF00 && cp <= 0xFFEF) ||  // fullwidth and halfwidth forms
         (cp >= 0x20000 && cp <= 0x3FFFF);  // CJK extensions B..
}

uint32_t Saturate32(double v) {
  if (!(v > 0)) return 0;
  if (v >= 4294967295.0) return 0xFFFFFFFFu;
  return static_cast<uint32_t>(v);
}

}  // namespace

TextCounts CountText(std::string_view s) {
  TextCounts c;
  bool in_word = false;
  size_t i = 0;
  while (i < s.size()) {
    uint32_t cp;
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {  // ASCII fast path
      cp = b;
      ++i;
    } else {
      i += DecodeUtf8(s, i, cp);
    }
    if (IsSpace(cp)) {
      in_word = false;
    } else if (IsCjk(cp)) {
      ++c.cjk_chars;
      in_word = false;
    } else if (!in_word) {
      ++c.words;
      in_word = true;
    }
  }
  return c;
}

uint32_t EstimateTextTokens(const TextCounts& c) {
  // ceil(1.3 * words) in integers: (13 * words + 9) / 10.
  const double word_tokens = static_cast<double>((13 * c.words + 9) / 10);
  return Saturate32(word_tokens + static_cast<double>(c.cjk_chars));
}

uint32_t EstimateTextTokens(std::string_view utf8) { return EstimateTextTokens(CountText(utf8)); }

uint32_t EstimateSpeechTextTokens(double audio_seconds) {
  if (!(audio_seconds > 0) || !std::isfinite(audio_seconds)) return 0;
  return Saturate32(std::round(audio_seconds * kSpeechWordsPerSecond * kTokensPerWord));
}

// ---- Shared helpers
// ---------------------------------------------------------------------------------------------

namespace {

// Makes ids unique by suffixing `#2`, `#3`, ... to repeats.
class IdUniquer {
 public:
  void Apply(std::string& id) {
    auto [it, fresh] = seen_.try_emplace(id, 1);
    if (fresh) return;
    while (true) {
      std::string candidate = id + "#" + std::to_string(++it->second);
      if (seen_.try_emplace(candidate, 1).second) {
        id = std::move(candidate);
        return;
      }
    }
  }

 private:
  std::unordered_map<std::string, int> seen_;
};

// Sets the trace's ids, applying IdUniquer only when some id repeats: the common all-unique case is checked
// with a sorted vector of hashes, which is much cheaper than a hash map of strings.
void SetUniqueIds(Trace& t, std::vector<std::string>& ids) {
  std::vector<std::pair<uint64_t, uint32_t>> h(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) h[i] = {std::hash<std::string>{}(ids[i]), static_cast<uint32_t>(i)};
  std::sort(h.begin(), h.end());
  bool dup = false;
  for (size_t i = 0; i < h.size() && !dup; ++i)
    for (size_t j = i + 1; j < h.size() && h[j].first == h[i].first && !dup; ++j)
      dup = ids[h[i].second] == ids[h[j].second];
  if (dup) {
    IdUniquer u;
    for (std::string& id : ids) u.Apply(id);
  }
  t.ids = SampleIds();
  for (const std::string& id : ids) t.ids.Push(id);
}

// Subset index with a one-entry cache (consecutive rows usually share a subset) and the uint16 limit.
class SubsetCache {
 public:
  bool Index(Trace& t, std::string_view name, uint16_t& out) {
    if (valid_ && name == last_) {
      out = last_index_;
      return true;
    }
    last_.assign(name);
    if (t.subsets.size() >= 65535 && std::find(t.subsets.begin(), t.subsets.end(), last_) == t.subsets.end())
      return false;
    last_index_ = t.SubsetIndex(last_);
    valid_ = true;
    out = last_index_;
    return true;
  }

 private:
  bool valid_ = false;
  std::string last_;
  uint16_t last_index_ = 0;
};

bool ParseCountField(std::string_view f, uint32_t& out) {
  int64_t v;
  if (ParseInt64(f, v)) {
    if (v < 0 || v > 0xFFFFFFFFll) return false;
    out = static_cast<uint32_t>(v);
    return true;
  }
  double d;
  if (ParseDouble(f, d) && d >= 0 && d <= 4294967295.0 && d == std::floor(d)) {
    out = static_cast<uint32_t>(d);
    return true;
  }
  return false;
}

Status CountAt(const CsvReader& csv, std::string_view f, const char* field, uint32_t& out) {
  if (ParseCountField(f, out)) return Status();
  if (f.find_first_not_of(" \t") == std::string_view::npos)
    return csv.ErrorAt(field, "empty; expected a non-negative integer");
  return csv.ErrorAt(field, "'" + Abbreviate(std::string(f)) + "' is not a non-negative integer");
}

// Sample::image_px from a mapped image_px column, or image_width and image_height (round(sqrt(w x h))); an
// empty cell or 0 = not known. Columns < 0 are not mapped.
Status ImageSizeAt(const CsvReader& csv, const std::vector<std::string_view>& f, int c_px, int c_width,
                   int c_height, Sample& s) {
  auto side = [&](int c, const char* field, uint32_t& out) -> Status {
    out = 0;
    if (c < 0 || f[c].find_first_not_of(" \t") == std::string_view::npos) return Status();
    return CountAt(csv, f[c], field, out);
  };
  uint32_t px = 0, w = 0, h = 0;
  MMTWIN_RETURN_IF_ERROR(side(c_px, "image_px", px));
  MMTWIN_RETURN_IF_ERROR(side(c_width, "image_width", w));
  MMTWIN_RETURN_IF_ERROR(side(c_height, "image_height", h));
  if ((w == 0) != (h == 0))
    return csv.ErrorAt(w == 0 ? "image_width" : "image_height",
                       "not known while the other side is; give both or neither");
  const double side_px = c_px >= 0 ? px : std::round(std::sqrt(static_cast<double>(w) * h));
  const char* field = c_px >= 0 ? "image_px" : "image_width";
  if (side_px > 65535) return csv.ErrorAt(field, "image side above 65535 px");
  if (side_px > 0 && s.images == 0)
    return csv.ErrorAt(field, "an image size for a sample without images (map images too)");
  s.image_px = static_cast<uint16_t>(side_px);
  return Status();
}

Status SecondsAt(const CsvReader& csv, std::string_view f, const char* field, double& out) {
  if (ParseDouble(f, out) && out >= 0) {
    if (out > kMaxAudioSeconds)
      return csv.ErrorAt(field, "'" + Abbreviate(std::string(f)) + "' is more than " +
                                    std::to_string(kMaxAudioSeconds) +
                                    " seconds; expected a clip's duration");
    out += 0.0;  // -0 -> +0
    return Status();
  }
  if (f.find_first_not_of(" \t") == std::string_view::npos)
    return csv.ErrorAt(field, "empty; expected a non-negative number of seconds");
  return csv.ErrorAt(field, "'" + Abbreviate(std::string(f)) + "' is not a non-negative number of seconds");
}

std::string BaseName(const std::string& path) {
  const size_t p = path.find_last_of('/');
  return p == std::string::npos ? path : path.substr(p + 1);
}

// ---- LLaVA SAX handler
// ------------------------------------------------------------------------------------------

using json = nlohmann::json;

class LlavaHandler {
 public:
  LlavaHandler(std::string_view text, const std::string& name, const LlavaImportOptions& opt)
      : text_(text), name_(name), opt_(opt) {}

  Trace& trace() { return trace_; }
  std::vector<std::string>& ids() { return ids_; }
  const Error& error() const { return error_; }
  bool failed() const { return failed_; }

  // nlohmann::json SAX interface.
  bool null() { return Value(Kind::kNull, nullptr, 0); }
  bool boolean(bool) { return Value(Kind::kBool, nullptr, 0); }
  bool number_integer(json::number_integer_t v) {
    return Value(Kind::kInt, nullptr, static_cast<double>(v), v);
  }
  bool number_unsigned(json::number_unsigned_t v) {
    return Value(Kind::kUInt, nullptr, static_cast<double>(v), 0, v);
  }
  bool number_float(json::number_float_t v, const json::string_t&) { return Value(Kind::kFloat, nullptr, v); }
  bool string(json::string_t& s) { return Value(Kind::kString, &s, 0); }
  bool binary(json::binary_t&) { return Value(Kind::kOther, nullptr, 0); }
  bool key(json::string_t& k) {
    key_ = k;
    return true;
  }
  bool start_object(std::size_t) { return Value(Kind::kObject, nullptr, 0); }
  bool start_array(std::size_t) { return Value(Kind::kArray, nullptr, 0); }
  bool end_object() { return End(); }
  bool end_array() { return End(); }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) {
    std::string what = ex.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ..." -> "syntax error
    // ..."
    size_t p = what.find("column ");
    p = p == std::string::npos ? std::string::npos : what.find(": ", p);
    if (p != std::string::npos) what = what.substr(p + 2);
    const size_t offset = position > 0 ? position - 1 : 0;  // nlohmann counts bytes read, i.e. 1-based
    if (jsonl_line_ > 0)
      return Fail(Error(name_ + ":" + std::to_string(jsonl_line_) + ": column " + std::to_string(offset + 1) +
                        ": JSON syntax error: " + what));
    long line = 1 + static_cast<long>(
                        std::count(text_.begin(), text_.begin() + std::min(offset, text_.size()), '\n'));
    return Fail(Error(name_ + ": byte " + std::to_string(offset) + " (line " + std::to_string(line) +
                      "): JSON syntax error: " + what));
  }

  // JSON Lines mode: every following sax_parse call is one sample object from line `line` (1-based).
  void StartJsonl() {
    saw_top_ = true;
    stack_.assign(1, Ctx::kTop);
  }
  void SetJsonlLine(long line) { jsonl_line_ = line; }

  // After a successful parse: the document must have been a list.
  bool Finish() {
    if (!saw_top_) return Fail(Error(name_ + ": expected a JSON list of samples, found an empty document"));
    return true;
  }

 private:
  enum class Ctx { kTop, kSample, kImages, kConvs, kTurn, kSkip };
  enum class Kind { kNull, kBool, kInt, kUInt, kFloat, kString, kOther, kObject, kArray };

  static const char* KindName(Kind k) {
    switch (k) {
      case Kind::kNull:
        return "null";
      case Kind::kBool:
        return "a boolean";
      case Kind::kInt:
      case Kind::kUInt:
      case Kind::kFloat:
        return "a number";
      case Kind::kString:
        return "a string";
      case Kind::kOther:
        return "binary data";
      case Kind::kObject:
        return "an object";
      case Kind::kArray:
        return "a list";
    }
    return "a value";
  }

  bool Fail(Error e) {
    if (!failed_) error_ = std::move(e);
    failed_ = true;
    return false;
  }
  bool FailAt(const std::string& where, const std::string& reason) {
    if (jsonl_line_ > 0) {  // `file:LINE: conversations[1].value: reason`
      const std::string w = !where.empty() && where[0] == '.' ? where.substr(1) : where;
      return Fail(
          Error(name_ + ":" + std::to_string(jsonl_line_) + ": " + (w.empty() ? "" : w + ": ") + reason));
    }
    return Fail(Error(name_ + ": " + where + ": " + reason));
  }

  std::string SamplePath() const { return jsonl_line_ > 0 ? "" : "[" + std::to_string(index_) + "]"; }
  std::string TurnPath() const { return SamplePath() + ".conversations[" + std::to_string(turn_) + "]"; }

  void AddImage(const std::string& path) {
    if (image_paths_ == 0) first_image_ = path;
    ++image_paths_;
  }

  void AddTurnText(std::string_view v) {
    static constexpr std::string_view kPlaceholder = "<image>";
    size_t start = 0;
    while (true) {
      const size_t p = v.find(kPlaceholder, start);
      const std::string_view seg =
          v.substr(start, p == std::string_view::npos ? std::string_view::npos : p - start);
      const TextCounts c = CountText(seg);
      counts_.words += c.words;
      counts_.cjk_chars += c.cjk_chars;
      if (p == std::string_view::npos) break;
      ++placeholders_;
      start = p + kPlaceholder.size();
    }
  }

  bool Value(Kind k, const std::string* s, double num, int64_t ival = 0, uint64_t uval = 0) {
    const bool container = k == Kind::kObject || k == Kind::kArray;
    if (stack_.empty()) {
      if (k != Kind::kArray)
        return Fail(
            Error(name_ + ": expected a JSON list of samples at the top level, found " + KindName(k)));
      saw_top_ = true;
      stack_.push_back(Ctx::kTop);
      return true;
    }
    switch (stack_.back()) {
      case Ctx::kSkip:
        if (container) stack_.push_back(Ctx::kSkip);
        return true;
      case Ctx::kTop:
        if (k != Kind::kObject)
          return FailAt(SamplePath(), std::string("expected an object, found ") + KindName(k));
        BeginSample();
        stack_.push_back(Ctx::kSample);
        return true;
      case Ctx::kSample:
        if (key_ == "id") {
          if (k == Kind::kString) {
            id_ = *s;
          } else if (k == Kind::kInt) {
            id_ = std::to_string(ival);
          } else if (k == Kind::kUInt) {
            id_ = std::to_string(uval);
          } else {
            return FailAt(SamplePath() + ".id",
                          std::string("expected a string or an integer, found ") + KindName(k));
          }
          has_id_ = true;
          return true;
        }
        if (key_ == "image") {
          if (k == Kind::kString) {
            AddImage(*s);
          } else if (k == Kind::kArray) {
            image_index_ = 0;
            stack_.push_back(Ctx::kImages);
          } else if (k != Kind::kNull) {
            return FailAt(SamplePath() + ".image",
                          std::string("expected a string or a list of strings, found ") + KindName(k));
          }
          return true;
        }
        if (key_ == "conversations") {
          if (k != Kind::kArray)
            return FailAt(SamplePath() + ".conversations",
                          std::string("expected a list, found ") + KindName(k));
          if (has_convs_) return FailAt(SamplePath() + ".conversations", "appears twice");
          has_convs_ = true;
          turn_ = 0;
          stack_.push_back(Ctx::kConvs);
          return true;
        }
        if (container) stack_.push_back(Ctx::kSkip);
        return true;
      case Ctx::kImages:
        if (k != Kind::kString)
          return FailAt(SamplePath() + ".image[" + std::to_string(image_index_) + "]",
                        std::string("expected a string, found ") + KindName(k));
        AddImage(*s);
        ++image_index_;
        return true;
      case Ctx::kConvs:
        if (k != Kind::kObject)
          return FailAt(TurnPath(), std::string("expected an object, found ") + KindName(k));
        has_value_ = false;
        stack_.push_back(Ctx::kTurn);
        return true;
      case Ctx::kTurn:
        if (key_ == "value" || key_ == "from") {
          if (k != Kind::kString)
            return FailAt(TurnPath() + "." + key_, std::string("expected a string, found ") + KindName(k));
          if (key_ == "value") {
            has_value_ = true;
            AddTurnText(*s);
          }
          return true;
        }
        if (container) stack_.push_back(Ctx::kSkip);
        return true;
    }
    (void)num;
    return true;
  }

  bool End() {
    if (stack_.empty()) return true;  // unreachable: the parser balances brackets
    const Ctx c = stack_.back();
    stack_.pop_back();
    if (c == Ctx::kSample) return EndSample();
    if (c == Ctx::kTurn) {
      if (!has_value_) return FailAt(TurnPath() + ".value", "missing");
      ++turn_;
    }
    return true;
  }

  void BeginSample() {
    has_id_ = has_convs_ = false;
    id_.clear();
    first_image_.clear();
    image_paths_ = placeholders_ = 0;
    counts_ = TextCounts();
  }

  bool EndSample() {
    if (!has_convs_) return FailAt(SamplePath() + ".conversations", "missing");
    Sample s;
    std::string id = has_id_ ? id_ : std::to_string(index_);
    if (id.empty()) return FailAt(SamplePath() + ".id", "empty");
    const int64_t images = std::max(image_paths_, placeholders_);
    // A count past uint32 is an error, not a silent 4294967295 (which would read as a plausible huge sample).
    const double tiles = static_cast<double>(images) * opt_.tiles_per_image;
    if (tiles > 4294967295.0)
      return FailAt(SamplePath(), std::to_string(images) + " images x " +
                                      std::to_string(opt_.tiles_per_image) +
                                      " tiles per image is above the limit of 4294967295 tiles per sample");
    s.images = static_cast<uint32_t>(images);
    s.image_tiles = static_cast<uint32_t>(tiles);
    s.text_tokens = EstimateTextTokens(counts_);
    std::string subset;
    if (!opt_.subset.empty()) {
      subset = opt_.subset;
    } else if (images == 0) {
      subset = "text-only";
    } else {
      // The first folder of the image path that names a dataset: "coco/train2017/x.jpg" -> coco. Folders that
      // are all digits are per-sample ids (ScienceQA's "12345/image.png"), not datasets: skipped, so such a file
      // gives one subset, not one per image.
      std::string_view p = first_image_;
      while (p.size() >= 2 && p.substr(0, 2) == "./") p.remove_prefix(2);
      subset = "images";
      for (size_t slash = p.find('/'); slash != std::string_view::npos; slash = p.find('/')) {
        const std::string_view dir = p.substr(0, slash);
        p.remove_prefix(slash + 1);
        if (dir.empty() || dir == "." || dir == "..") continue;
        if (dir.find_first_not_of("0123456789") == std::string_view::npos) continue;
        subset = std::string(dir);
        break;
      }
    }
    if (!subsets_.Index(trace_, subset, s.subset))
      return FailAt(SamplePath() + ".image", "more than 65535 distinct subsets");
    trace_.samples.push_back(s);
    ids_.push_back(std::move(id));
    ++index_;
    return true;
  }

  std::string_view text_;
  const std::string& name_;
  const LlavaImportOptions& opt_;
  Trace trace_;
  std::vector<std::string> ids_;  // the samples' ids (made unique afterwards)
  Error error_;
  bool failed_ = false;
  bool saw_top_ = false;
  long jsonl_line_ = 0;  // > 0 in JSON Lines mode
  std::vector<Ctx> stack_;
  std::string key_;
  int64_t index_ = 0;
  int64_t turn_ = 0;
  int64_t image_index_ = 0;
  // Current sample.
  bool has_id_ = false, has_convs_ = false, has_value_ = false;
  std::string id_, first_image_;
  int64_t image_paths_ = 0, placeholders_ = 0;
  TextCounts counts_;
  SubsetCache subsets_;
};

}  // namespace

// ---- LLaVA
// ------------------------------------------------------------------------------------------------------

Result<Trace> ImportLlavaText(std::string_view text, const std::string& name,
                              const LlavaImportOptions& options) {
  if (options.tiles_per_image < 1) return Error(name + ": tiles per image must be >= 1");
  LlavaHandler h(text, name, options);
  size_t first = 0;
  if (text.substr(0, 3) == "\xEF\xBB\xBF") first = 3;  // UTF-8 byte order mark
  while (first < text.size() &&
         (text[first] == ' ' || text[first] == '\t' || text[first] == '\n' || text[first] == '\r'))
    ++first;
  try {
    if (first < text.size() && text[first] == '{') {
      // JSON Lines (InternVL's fine-tuning files): one sample object per line.
      h.StartJsonl();
      size_t pos = 0;
      long line = 0;
      while (pos < text.size()) {
        size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) end = text.size();
        ++line;
        std::string_view l = text.substr(pos, end - pos);
        pos = end + 1;
        if (line == 1 && l.substr(0, 3) == "\xEF\xBB\xBF") l.remove_prefix(3);
        if (l.find_first_not_of(" \t\r") == std::string_view::npos) continue;
        h.SetJsonlLine(line);
        const bool ok = json::sax_parse(l.data(), l.data() + l.size(), &h);
        if (h.failed()) return h.error();
        if (!ok) return Error(name + ":" + std::to_string(line) + ": JSON parse failed");
      }
    } else {
      const bool ok = json::sax_parse(text.data(), text.data() + text.size(), &h);
      if (h.failed()) return h.error();
      if (!ok) return Error(name + ": JSON parse failed");
    }
  } catch (const std::exception& e) {  // nlohmann reports through the handler; this is belt and braces
    return Error(name + ": JSON error: " + e.what());
  }
  if (!h.Finish()) return h.error();
  SetUniqueIds(h.trace(), h.ids());
  return std::move(h.trace());
}

Result<Trace> ImportLlava(const std::string& path, const LlavaImportOptions& options) {
  MMTWIN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ImportLlavaText(text, path, options);
}

// ---- LibriSpeech
// ------------------------------------------------------------------------------------------------

std::string LibriSpeechSplit(const std::string& path) {
  static const char* const kSplits[] = {"train-clean-100", "train-clean-360", "train-other-500", "dev-clean",
                                        "dev-other",       "test-clean",      "test-other"};
  const std::string base = BaseName(path);
  for (const char* s : kSplits)
    if (base.find(s) != std::string::npos) return s;
  return "librispeech";
}

Result<Trace> ImportLibriSpeechText(std::string text, const std::string& name) {
  CsvReader csv = CsvReader::FromString(std::move(text), name);
  std::vector<std::string_view> f;
  if (!csv.Next(f)) {
    if (!csv.status().ok()) return csv.status().error();
    return Error::At(name, 1, "",
                     "empty file: expected the header sample_id,audio_samples_16k,audio_seconds");
  }
  CsvHeader header(f);
  MMTWIN_RETURN_IF_ERROR(header.CheckUnique(csv, {"sample_id", "audio_samples_16k", "audio_seconds"}));
  const int c_id = header.Find("sample_id");
  const int c_samples = header.Find("audio_samples_16k");
  const int c_seconds = header.Find("audio_seconds");
  if (c_id < 0)
    return csv.ErrorAt("sample_id",
                       "missing column in header (expected sample_id,audio_samples_16k,audio_seconds)");
  if (c_samples < 0 && c_seconds < 0)
    return csv.ErrorAt("audio_seconds", "missing column in header: need audio_seconds or audio_samples_16k");
  const size_t width = header.names().size();
  Trace t;
  std::vector<std::string> ids;
  const uint16_t subset = t.SubsetIndex(LibriSpeechSplit(name));
  while (csv.Next(f)) {
    if (f.size() != width)
      return csv.ErrorAt("",
                         "expected " + std::to_string(width) + " fields, found " + std::to_string(f.size()));
    Sample s;
    if (f[c_id].empty()) return csv.ErrorAt("sample_id", "empty");
    if (!ValidUtf8(f[c_id]))
      return csv.ErrorAt("sample_id", "not valid UTF-8");  // as ParseTrace reads it back
    ids.emplace_back(f[c_id]);
    s.subset = subset;
    double seconds = 0;
    if (c_seconds >= 0) MMTWIN_RETURN_IF_ERROR(SecondsAt(csv, f[c_seconds], "audio_seconds", seconds));
    if (c_samples >= 0) {
      int64_t n;
      if (!ParseInt64(f[c_samples], n) || n < 0)
        return csv.ErrorAt("audio_samples_16k",
                           "'" + Abbreviate(std::string(f[c_samples])) + "' is not a non-negative integer");
      const double from_samples = static_cast<double>(n) / 16000.0;
      if (from_samples > kMaxAudioSeconds)
        return csv.ErrorAt("audio_samples_16k", std::string(f[c_samples]) + " samples is more than " +
                                                    std::to_string(kMaxAudioSeconds) + " seconds");
      if (c_seconds < 0) {
        seconds = from_samples;
      } else if (std::fabs(from_samples - seconds) > 0.01) {
        return csv.ErrorAt("audio_seconds", std::string(f[c_seconds]) +
                                                " s disagrees with audio_samples_16k " + std::to_string(n) +
                                                " (= " + std::to_string(from_samples) + " s)");
      }
    }
    s.audio_seconds = seconds;
    s.text_tokens = EstimateSpeechTextTokens(seconds);
    t.samples.push_back(s);
  }
  if (!csv.status().ok()) return csv.status().error();
  SetUniqueIds(t, ids);
  return t;
}

Result<Trace> ImportLibriSpeech(const std::string& path) {
  MMTWIN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ImportLibriSpeechText(std::move(text), path);
}

// ---- Generic CSV
// ------------------------------------------------------------------------------------------------

const std::vector<std::string>& TraceFieldNames() {
  static const std::vector<std::string> kNames = {
      "sample_id", "subset", "images", "image_tiles", "video_frames", "audio_seconds", "text_tokens", "meta"};
  return kNames;
}

Result<Trace> ImportCsvText(std::string text, const std::string& name, const CsvMapping& mapping,
                            const VideoSampling& video) {
  enum Field {
    kId,
    kSubset,
    kImages,
    kTiles,
    kFrames,
    kAudio,
    kText,
    kMeta,
    kVideoSeconds,
    kImagePx,
    kImageWidth,
    kImageHeight,
    kFields
  };
  std::vector<std::string> names = TraceFieldNames();
  for (const char* extra : {"video_seconds", "image_px", "image_width", "image_height"})
    names.push_back(extra);
  if (!(video.fps > 0) || !std::isfinite(video.fps) || video.max_frames < 0)
    return Error(name + ": video sampling needs fps > 0 and max_frames >= 0 (0 = no cap), got fps " +
                 std::to_string(video.fps) + ", max_frames " + std::to_string(video.max_frames));
  std::string source[kFields];
  for (const auto& [field, column] : mapping) {
    const auto it = std::find(names.begin(), names.end(), field);
    if (it == names.end())
      return Error(name + ": unknown trace field '" + field +
                   "' in the column mapping; valid values are: " + Join(names));
    const int i = static_cast<int>(it - names.begin());
    if (!source[i].empty()) return Error(name + ": trace field '" + field + "' is mapped twice");
    if (column.empty())
      return Error(name + ": trace field '" + field + "' is mapped to an empty column name");
    source[i] = column;
  }
  // An import that fills no modality writes a trace of empty samples that simulates as nothing: an error.
  if (source[kImages].empty() && source[kTiles].empty() && source[kFrames].empty() &&
      source[kAudio].empty() && source[kText].empty() && source[kVideoSeconds].empty())
    return Error(
        name +
        ": the column mapping fills no modality, so every sample would be empty; map at least one of "
        "images, image_tiles, video_frames, video_seconds, audio_seconds, text_tokens (--map FIELD=COLUMN)");
  if (!source[kFrames].empty() && !source[kVideoSeconds].empty())
    return Error(name + ": map video_frames or video_seconds, not both (video_seconds becomes video_frames)");
  if (source[kImageWidth].empty() != source[kImageHeight].empty())
    return Error(name + ": map image_width and image_height together (they become image_px)");
  if (!source[kImagePx].empty() && !source[kImageWidth].empty())
    return Error(name + ": map image_px or image_width and image_height, not both");
  CsvReader csv = CsvReader::FromString(std::move(text), name);
  std::vector<std::string_view> f;
  if (!csv.Next(f)) {
    if (!csv.status().ok()) return csv.status().error();
    return Error::At(name, 1, "", "empty file: expected a header row");
  }
  CsvHeader header(f);
  MMTWIN_RETURN_IF_ERROR(header.CheckUnique(csv, std::vector<std::string>(source, source + kFields)));
  int col[kFields];
  for (int i = 0; i < kFields; ++i) {
    col[i] = -1;
    if (source[i].empty()) continue;
    col[i] = header.Find(source[i]);
    if (col[i] < 0)
      return csv.ErrorAt(names[i], "column '" + source[i] + "' not found in the header; valid columns are: " +
                                       Join(header.names()));
  }
  const size_t width = header.names().size();
  Trace t;
  std::vector<std::string> ids;
  SubsetCache subsets;
  uint16_t default_subset = 0;
  if (col[kSubset] < 0) default_subset = t.SubsetIndex("default");
  int64_t row = 0;
  while (csv.Next(f)) {
    ++row;
    if (f.size() != width)
      return csv.ErrorAt("",
                         "expected " + std::to_string(width) + " fields, found " + std::to_string(f.size()));
    Sample s;
    if (col[kId] >= 0) {
      if (f[col[kId]].empty()) return csv.ErrorAt("sample_id", "empty");
      // Text fields must be UTF-8, as ParseTrace reads the written trace back (issue 34).
      if (!ValidUtf8(f[col[kId]])) return csv.ErrorAt("sample_id", "not valid UTF-8");
      ids.emplace_back(f[col[kId]]);
    } else {
      ids.push_back(std::to_string(row));
    }
    if (col[kSubset] >= 0) {
      std::string_view sub = f[col[kSubset]];
      if (sub.empty()) return csv.ErrorAt("subset", "empty");
      if (!ValidUtf8(sub)) return csv.ErrorAt("subset", "not valid UTF-8");
      if (!subsets.Index(t, sub, s.subset)) return csv.ErrorAt("subset", "more than 65535 distinct subsets");
    } else {
      s.subset = default_subset;
    }
    if (col[kImages] >= 0) MMTWIN_RETURN_IF_ERROR(CountAt(csv, f[col[kImages]], "images", s.images));
    if (col[kTiles] >= 0) {
      MMTWIN_RETURN_IF_ERROR(CountAt(csv, f[col[kTiles]], "image_tiles", s.image_tiles));
      if (s.image_tiles < s.images)
        return csv.ErrorAt("image_tiles", std::to_string(s.image_tiles) + " tiles is fewer than the " +
                                              std::to_string(s.images) + " images");
    } else {
      s.image_tiles = s.images;
    }
    if (col[kFrames] >= 0)
      MMTWIN_RETURN_IF_ERROR(CountAt(csv, f[col[kFrames]], "video_frames", s.video_frames));
    if (col[kVideoSeconds] >= 0) {
      double seconds = 0;
      MMTWIN_RETURN_IF_ERROR(SecondsAt(csv, f[col[kVideoSeconds]], "video_seconds", seconds));
      // More frames than a trace's 32-bit count would saturate silently (issue 34): refused, naming the row.
      const double frames = seconds > 0 ? std::round(seconds * video.fps) : 0;
      if (frames > 4294967295.0 && (video.max_frames <= 0 || video.max_frames > 4294967295))
        return csv.ErrorAt("video_seconds", Abbreviate(std::string(f[col[kVideoSeconds]])) + " s at " +
                                                ShortNumber(video.fps) +
                                                " fps is more frames than a trace holds (4294967295); set "
                                                "--max-frames or a lower --fps");
      s.video_frames = VideoFrames(seconds, video);
    }
    if (col[kAudio] >= 0)
      MMTWIN_RETURN_IF_ERROR(SecondsAt(csv, f[col[kAudio]], "audio_seconds", s.audio_seconds));
    if (col[kText] >= 0) MMTWIN_RETURN_IF_ERROR(CountAt(csv, f[col[kText]], "text_tokens", s.text_tokens));
    MMTWIN_RETURN_IF_ERROR(ImageSizeAt(csv, f, col[kImagePx], col[kImageWidth], col[kImageHeight], s));
    t.samples.push_back(s);
    if (col[kMeta] >= 0) {
      if (!ValidUtf8(f[col[kMeta]])) return csv.ErrorAt("meta", "not valid UTF-8");
      t.SetMeta(t.samples.size() - 1, f[col[kMeta]]);
    }
  }
  if (!csv.status().ok()) return csv.status().error();
  const bool any = std::any_of(t.samples.begin(), t.samples.end(), [](const Sample& x) {
    return x.images > 0 || x.video_frames > 0 || x.audio_seconds > 0 || x.text_tokens > 0;
  });
  if (!t.samples.empty() && !any)
    return Error(name + ": every sample is empty (the mapped columns hold no images, frames, audio or text)");
  SetUniqueIds(t, ids);
  return t;
}

Result<Trace> ImportCsv(const std::string& path, const CsvMapping& mapping, const VideoSampling& video) {
  MMTWIN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ImportCsvText(std::move(text), path, mapping, video);
}

uint32_t VideoFrames(double seconds, const VideoSampling& v) {
  if (!(seconds > 0) || !(v.fps > 0)) return 0;
  double frames = std::max(1.0, std::round(seconds * v.fps));
  if (v.max_frames > 0) frames = std::min(frames, static_cast<double>(v.max_frames));
  return static_cast<uint32_t>(std::min(frames, 4294967295.0));
}

}  // namespace mmtwin
