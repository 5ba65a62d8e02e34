// SPDX-License-Identifier: Apache-2.0
// SampleIds (trace.h): a compact column of sample ids, and Trace's sample-adding helpers.
#include <algorithm>
#include <charconv>
#include <functional>

#include "core/trace/trace.h"

namespace mmtwin {
namespace {

constexpr int kMaxDigits = 18;  // numbers below 10^18 fit uint64 with room

}  // namespace

void SampleIds::AppendFormatted(uint64_t number, std::string& out) const {
  char digits[24];
  const auto r = std::to_chars(digits, digits + sizeof digits, number);
  const int n = static_cast<int>(r.ptr - digits);
  out += prefix_;
  if (n < width_) out.append(static_cast<size_t>(width_ - n), '0');
  out.append(digits, static_cast<size_t>(n));
}

// True when `id` is prefix_ followed by a number that, zero-padded to width_, gives back exactly those digits.
bool SampleIds::ParseNumber(std::string_view id, uint64_t& number) const {
  if (!shaped_ || id.size() <= prefix_.size() || id.compare(0, prefix_.size(), prefix_) != 0) return false;
  const std::string_view d = id.substr(prefix_.size());
  const int n = static_cast<int>(d.size());
  if (n < width_ || n > kMaxDigits) return false;
  if (n > width_ && d[0] == '0') return false;  // "00042" is not 42 padded to a narrower width
  uint64_t v = 0;
  for (char c : d) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  number = v;
  return true;
}

std::string SampleIds::Get(size_t i) const {
  std::string out;
  switch (mode_) {
    case Mode::kCounting:
      AppendFormatted(first_ + i, out);
      break;
    case Mode::kNumbers:
      AppendFormatted(numbers_[i], out);
      break;
    case Mode::kPool: {
      const uint64_t b = i == 0 ? 0 : ends_[i - 1];
      out.assign(chars_, b, ends_[i] - b);
      break;
    }
  }
  return out;
}

void SampleIds::ToPool() {
  std::string chars;
  std::vector<uint64_t> ends;
  ends.reserve(n_);
  for (size_t i = 0; i < n_; ++i) {
    chars += Get(i);
    ends.push_back(chars.size());
  }
  chars_ = std::move(chars);
  ends_ = std::move(ends);
  numbers_ = {};
  numbers_.shrink_to_fit();
  mode_ = Mode::kPool;
}

void SampleIds::Push(std::string_view id) {
  if (n_ == 0 && mode_ != Mode::kPool) {
    // The first id sets the shape: its trailing digits (at most 18) are the number, the rest the prefix.
    size_t k = 0;
    while (k < id.size() && k < kMaxDigits && id[id.size() - 1 - k] >= '0' && id[id.size() - 1 - k] <= '9')
      ++k;
    if (k > 0) {
      shaped_ = true;
      prefix_.assign(id.substr(0, id.size() - k));
      width_ = static_cast<int>(k);
      uint64_t v = 0;
      ParseNumber(id, v);
      first_ = v;
      mode_ = Mode::kCounting;
      n_ = 1;
      return;
    }
    mode_ = Mode::kPool;
  }
  uint64_t v = 0;
  if (mode_ != Mode::kPool && ParseNumber(id, v)) {
    if (mode_ == Mode::kCounting && v == first_ + n_) {
      ++n_;
      return;
    }
    if (mode_ == Mode::kCounting) {
      numbers_.resize(n_);
      for (size_t i = 0; i < n_; ++i) numbers_[i] = first_ + i;
      mode_ = Mode::kNumbers;
    }
    numbers_.push_back(v);
    ++n_;
    return;
  }
  if (mode_ != Mode::kPool) ToPool();
  chars_.append(id);
  ends_.push_back(chars_.size());
  ++n_;
}

void SampleIds::PushNumbered(std::string_view prefix, int width, uint64_t first, size_t count) {
  width = std::clamp(width, 1, kMaxDigits);
  if (n_ == 0 && mode_ == Mode::kCounting && count > 0) {
    shaped_ = true;
    prefix_.assign(prefix);
    width_ = width;
    first_ = first;
    n_ = count;
    return;
  }
  std::string id;
  SampleIds shape;
  shape.shaped_ = true;
  shape.prefix_.assign(prefix);
  shape.width_ = width;
  for (size_t k = 0; k < count; ++k) {
    id.clear();
    shape.AppendFormatted(first + k, id);
    Push(id);
  }
}

size_t SampleIds::MemoryBytes() const {
  return sizeof *this + prefix_.capacity() + numbers_.capacity() * sizeof(uint64_t) + chars_.capacity() +
         ends_.capacity() * sizeof(uint64_t);
}

std::pair<size_t, size_t> SampleIds::FirstRepeat() const {
  const size_t n = n_;
  if (mode_ == Mode::kCounting) return {n, n};  // strictly increasing numbers
  // Exact keys (the number) or hashes (pool ids); ids are compared for real within a run of equal keys.
  auto key = [&](size_t i) -> uint64_t {
    if (mode_ == Mode::kNumbers) return numbers_[i];
    const uint64_t b = i == 0 ? 0 : ends_[i - 1];
    return std::hash<std::string_view>{}(std::string_view(chars_).substr(b, ends_[i] - b));
  };
  auto same = [&](size_t a, size_t b) {
    if (mode_ == Mode::kNumbers) return numbers_[a] == numbers_[b];
    return Get(a) == Get(b);
  };
  {
    // The common cases first: ascending keys (numbered ids in order), then sorted keys without an equal
    // neighbour (half the bytes of the (key, index) pairs below, which only a repeated key needs).
    bool ascending = true;
    if (mode_ == Mode::kNumbers)
      for (size_t i = 1; i < n && ascending; ++i) ascending = numbers_[i - 1] < numbers_[i];
    else
      ascending = false;
    if (ascending) return {n, n};
    std::vector<uint64_t> keys(n);
    for (size_t i = 0; i < n; ++i) keys[i] = key(i);
    std::sort(keys.begin(), keys.end());
    if (std::adjacent_find(keys.begin(), keys.end()) == keys.end()) return {n, n};
  }
  std::vector<std::pair<uint64_t, uint64_t>> h(n);
  for (size_t i = 0; i < n; ++i) h[i] = {key(i), i};
  std::sort(h.begin(), h.end());
  size_t first = n, second = n;
  // Within a run of equal keys the indices ascend: each member is compared with the earlier ones until the first
  // equal id (its first occurrence), which is the run's first member when an id repeats many times.
  for (size_t start = 0; start < n;) {
    size_t end = start + 1;
    while (end < n && h[end].first == h[start].first) ++end;
    for (size_t j = start + 1; j < end; ++j)
      for (size_t i = start; i < j; ++i)
        if (same(h[i].second, h[j].second)) {
          if (h[j].second < second) {
            first = h[i].second;
            second = h[j].second;
          }
          break;
        }
    start = end;
  }
  return {first, second};
}

bool SampleIds::FromParts(Mode mode, size_t n, std::string prefix, int width, uint64_t first,
                          std::vector<uint64_t> numbers, std::string chars, std::vector<uint64_t> ends,
                          SampleIds& out) {
  SampleIds c;
  c.mode_ = mode;
  c.n_ = n;
  switch (mode) {
    case Mode::kCounting:
    case Mode::kNumbers:
      if (n > 0 && (width < 1 || width > kMaxDigits)) return false;
      if (mode == Mode::kNumbers && numbers.size() != n) return false;
      if (mode == Mode::kCounting && n > 0 && first > (uint64_t{1} << 62)) return false;
      c.shaped_ = n > 0;
      c.prefix_ = std::move(prefix);
      c.width_ = width;
      c.first_ = first;
      c.numbers_ = std::move(numbers);
      for (uint64_t v : c.numbers_)
        if (v >= uint64_t{1000000000000000000}) return false;
      break;
    case Mode::kPool: {
      if (ends.size() != n) return false;
      uint64_t prev = 0;
      for (uint64_t e : ends) {
        if (e < prev || e > chars.size()) return false;
        prev = e;
      }
      if (prev != chars.size()) return false;
      c.chars_ = std::move(chars);
      c.ends_ = std::move(ends);
      break;
    }
    default:
      return false;
  }
  out = std::move(c);
  return true;
}

void Trace::Add(Sample s, std::string_view id, std::string_view meta) {
  s.meta_ref = 0;
  samples.push_back(s);
  ids.Push(id);
  if (!meta.empty()) SetMeta(samples.size() - 1, meta);
}

void Trace::SetMeta(size_t i, std::string_view meta) {
  if (meta.empty()) {
    samples[i].meta_ref = 0;
    return;
  }
  if (metas.empty() || metas.back() != meta) metas.emplace_back(meta);
  samples[i].meta_ref = static_cast<uint32_t>(metas.size());
}

}  // namespace mmtwin
