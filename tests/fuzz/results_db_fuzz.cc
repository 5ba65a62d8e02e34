// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the results database opened on arbitrary file contents (corrupt, foreign or truncated SQLite
// files, text). Open must return a database or an Error; when it refuses, the file must be byte for byte what it
// was (nothing of the user's is changed); when it accepts, reading, exporting and writing a run must not crash,
// and the run written must read back.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "sweep/results_db.h"

namespace {
std::string Bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/mmtwin-results-db-fuzz-" + std::to_string(::getpid()) + ".sqlite";
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::remove((path + suffix).c_str());
  const std::string contents(reinterpret_cast<const char*>(data), size);
  {
    std::ofstream out(path, std::ios::binary);
    out << contents;
  }
  {
    mmtwin::Result<std::unique_ptr<mmtwin::ResultsDb>> db = mmtwin::ResultsDb::Open(path);
    if (!db.ok()) {
      if (db.error().message().empty() || Bytes(path) != contents) __builtin_trap();
    } else {
      (void)(*db)->OkKeys();
      (void)(*db)->Runs();
      (void)(*db)->Sweeps();
      (void)(*db)->ExportCsv();
      mmtwin::RunRecord r;
      r.run_key = "fuzz-key";
      r.sweep = "fuzz";
      r.axes = {{"x", "1"}};
      r.summary = mmtwin::RunSummary{};
      if ((*db)->Put(r).ok()) {
        mmtwin::Result<std::set<std::string>> keys = (*db)->OkKeys("fuzz");
        if (keys.ok() && !keys->count("fuzz-key")) __builtin_trap();
      }
    }
  }
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::remove((path + suffix).c_str());
  return 0;
}
