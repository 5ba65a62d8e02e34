// SPDX-License-Identifier: Apache-2.0
// The one copy of small text and statistics helpers the layers share.
//
//   Join({"a", "b"})                    -> "a, b"
//   Percentile({3, 1, 2}, 0.5)          -> 2 (linear interpolation between order statistics, numpy "linear")
//   ValidUtf8("caf\xc3\xa9")            -> true;  ValidUtf8("\xc0\xaf") -> false (overlong)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mmtwin {

std::string Join(const std::vector<std::string>& parts, std::string_view sep = ", ");

// Quantile q in [0, 1] of `sorted` (ascending) by linear interpolation between the order statistics at
// positions floor(q (n-1)) and the next one; 0 for an empty vector.
double PercentileSorted(const std::vector<double>& sorted, double q);
// The same of an unsorted vector (sorts a copy).
double Percentile(std::vector<double> values, double q);

// Decodes one UTF-8 code point at s[i] (i < s.size()) into cp and returns its length in bytes; an invalid or
// truncated sequence decodes as U+FFFD with length 1 (lenient: for importing third-party text).
size_t DecodeUtf8(std::string_view s, size_t i, uint32_t& cp);
// Strict UTF-8: no invalid or truncated sequences, overlong forms, surrogates or code points above U+10FFFF
// (for text that must round-trip, e.g. YAML).
bool ValidUtf8(std::string_view s);

// A name usable as one path component (a run folder runs/NAME, a database NAME.sqlite): not empty, not "." or
// "..", no '/', '\\' or control characters.
bool IsPlainName(std::string_view s);

// A number as printf's %g writes it, for messages: 1 -> "1", 0.5 -> "0.5", 1e12 -> "1e+12".
std::string ShortNumber(double v);

// An integer with thousands separators: 100000000 -> "100,000,000".
std::string GroupDigits(int64_t n);

// `s` cut to at most `max_chars` bytes (at a UTF-8 boundary) with "..." appended when cut: for echoing a user's
// value in a message without printing megabytes.
std::string Abbreviate(std::string_view s, size_t max_chars = 60);

}  // namespace mmtwin
