// SPDX-License-Identifier: Apache-2.0
// What every part of a rank shares (rank.cc and the parts it composes: pipeline.h, grad_reducer.h,
// optimizer.h, op_recorder.h), without Torch: the clock, the failure that ends the job, and the status board
// that says what the rank is doing.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace mmtwin::backend {

// This rank's steady clock, in microseconds (OpRecorder shifts measured times to rank 0's clock).
double NowUs();

// A peer gone or timed out: RunRank ends the rank with exit code 3 and the message, which names the iteration,
// the op and the peer ("measured iteration 0 (epoch index 7): waiting for the activation of mb 1 chunk 1 from
// rank 2: ...").
struct PeerFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws PeerFailure("CONTEXT: " + the first 300 characters of e.what()).
[[noreturn]] void ThrowPeerFailure(const std::string& context, const std::exception& e);

// What this rank is doing, for messages and for the launcher: $MMTWIN_STATUS_DIR/rankR (set by mmtwin-train
// launch) holds one fixed-size line (160 bytes, rewritten in place), which the launcher quotes when the job fails.
class StatusBoard {
 public:
  StatusBoard() = default;
  StatusBoard(const StatusBoard&) = delete;
  StatusBoard& operator=(const StatusBoard&) = delete;
  ~StatusBoard();

  // Opens $MMTWIN_STATUS_DIR/rank<rank>; without the variable the board keeps the line for messages only.
  void Open(int rank);
  void Set(const std::string& what);
  const std::string& current() const { return current_; }

  // The iteration being run ("warm-up iteration 1", "measured iteration 2 (epoch index 49)"): the prefix of
  // the ops' status lines and of their failure messages.
  void SetIteration(std::string label) { iteration_ = std::move(label); }
  const std::string& iteration() const { return iteration_; }
  // Set(iteration() + ": " + what).
  void SetOp(const std::string& what) { Set(iteration_ + ": " + what); }

 private:
  int fd_ = -1;
  std::string current_, iteration_;
};

}  // namespace mmtwin::backend
