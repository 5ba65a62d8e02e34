// SPDX-License-Identifier: Apache-2.0
// Synthetic op records for the GUI's timeline tests and benchmark: n ops spread round-robin over `devices`
// devices, on the compute lane (forwards and backwards by turns) with every fifth round on the p2p lane, each
// lane's ops back to back with gaps; durations 5..101 us. Deterministic.
#pragma once

#include <vector>

#include "core/records/records.h"

namespace mmtwin::gui::testing {

inline std::vector<OpRecord> SyntheticOps(int n, int devices) {
  std::vector<OpRecord> ops;
  ops.reserve(n);
  std::vector<double> t(2 * static_cast<size_t>(devices), 0.0);
  for (int i = 0; i < n; ++i) {
    OpRecord op;
    op.device = i % devices;
    op.lane = (i / devices) % 5 == 4 ? Lane::kP2pForward : Lane::kCompute;
    op.kind = op.lane == Lane::kCompute ? ((i / devices) % 2 ? OpKind::kBackward : OpKind::kForward)
                                        : OpKind::kP2pSendActivation;
    op.micro_batch = i / devices;
    const int slot = op.device * 2 + (op.lane == Lane::kCompute ? 0 : 1);
    op.duration_us = 5 + (i * 7919 % 97);
    op.start_us = t[slot];
    t[slot] += op.duration_us + (i % 3 == 0 ? 11 : 0);
    ops.push_back(op);
  }
  return ops;
}

}  // namespace mmtwin::gui::testing
