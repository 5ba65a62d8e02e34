// SPDX-License-Identifier: Apache-2.0
// The clock, PeerFailure and the status board of a rank (rank_support.h).
#include "backend/rank_support.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace mmtwin::backend {

double NowUs() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void ThrowPeerFailure(const std::string& context, const std::exception& e) {
  throw PeerFailure(context + ": " + std::string(e.what()).substr(0, 300));
}

StatusBoard::~StatusBoard() {
  if (fd_ >= 0) ::close(fd_);
}

void StatusBoard::Open(int rank) {
  const char* dir = std::getenv("MMTWIN_STATUS_DIR");
  if (!dir || !*dir) return;
  fd_ =
      ::open((std::string(dir) + "/rank" + std::to_string(rank)).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
}

void StatusBoard::Set(const std::string& what) {
  current_ = what;
  if (fd_ < 0) return;
  char buf[160];
  std::memset(buf, ' ', sizeof buf);
  std::memcpy(buf, what.data(), std::min(what.size(), sizeof buf - 1));
  buf[sizeof buf - 1] = '\n';
  if (::pwrite(fd_, buf, sizeof buf, 0) < 0) {
  }
}

}  // namespace mmtwin::backend
