// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the LibriSpeech manifest importer (ImportLibriSpeechText) must return a trace or an Error
// for any input, and an accepted trace must validate and survive the trace CSV round trip (FormatTrace ->
// ParseTrace) with the same samples.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/trace/import.h"
#include "core/trace/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  mmtwin::Result<mmtwin::Trace> t = mmtwin::ImportLibriSpeechText(std::move(text), "fuzz.csv");
  if (!t.ok()) {
    if (t.error().message().empty()) __builtin_trap();
    return 0;
  }
  if (!mmtwin::ValidateTrace(*t, "fuzz.csv").ok()) __builtin_trap();
  mmtwin::Result<mmtwin::Trace> u = mmtwin::ParseTrace(mmtwin::FormatTrace(*t), "again.csv");
  if (!u.ok() || u->size() != t->size()) __builtin_trap();
  for (size_t i = 0; i < t->size(); ++i)
    if (t->id(i) != u->id(i) || t->samples[i].text_tokens != u->samples[i].text_tokens) __builtin_trap();
  return 0;
}
