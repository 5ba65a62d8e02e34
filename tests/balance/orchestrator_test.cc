// SPDX-License-Identifier: Apache-2.0
#include "core/balance/orchestrator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/model/model.h"
#include "core/util/rng.h"

namespace mmtwin {
namespace {

struct Iteration {
  std::vector<int> origin;
  std::vector<PhaseInput> phases;
};

// d ranks x per_rank samples; about half have an image, a third have audio; every sample has text.
Iteration MakeIteration(uint64_t seed, int d, int per_rank) {
  Rng rng(seed);
  Iteration it;
  const int n = d * per_rank;
  PhaseInput vision{"vision", {}, {}, {PostBalanceAlgorithm::kLpt, 0, 0}, {}};
  PhaseInput audio{"audio", {}, {}, {PostBalanceAlgorithm::kPadded, 0, 0}, {}};
  PhaseInput llm{"llm", {}, {}, {PostBalanceAlgorithm::kKk, 0, 0}, {}};
  for (int i = 0; i < n; ++i) {
    it.origin.push_back(i / per_rank);
    const int64_t tiles = rng.Below(2) ? 1 + static_cast<int64_t>(rng.Below(6)) : 0;
    const int64_t audio_tokens = rng.Below(3) == 0 ? std::llround(rng.Normal(635, 180)) : 0;
    const int64_t text = 20 + static_cast<int64_t>(rng.Below(800));
    vision.lengths.push_back(tiles * 1024);
    vision.bytes.push_back(tiles * 3 * 448 * 448 * 2);
    vision.output_bytes.push_back(tiles * 256 * 4096 * 2);
    const int64_t a = std::max<int64_t>(0, audio_tokens);
    audio.lengths.push_back(a);
    audio.bytes.push_back(a * 2 * 128 * 2);
    audio.output_bytes.push_back(a / 2 * 4096 * 2);
    const int64_t llm_tokens = text + tiles * 256 + a / 2;
    llm.lengths.push_back(llm_tokens);
    llm.bytes.push_back(llm_tokens * 4096 * 2);
  }
  it.phases = {vision, audio, llm};
  return it;
}

TEST(OrchestratorTest, ConservesSamplesAndBytes) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    Iteration it = MakeIteration(seed, 16, 12);
    auto r = Orchestrate(it.origin, it.phases, {16, 4, true, true});
    ASSERT_TRUE(r.ok()) << r.error().message();
    ASSERT_EQ(r->phases.size(), 3u);
    for (size_t p = 0; p < 3; ++p) {
      const PhaseReport& rep = r->phases[p];
      const PhaseInput& ph = it.phases[p];
      ASSERT_EQ(rep.rank_samples.size(), 16u);
      std::vector<int> seen(it.origin.size(), 0);
      int64_t bytes = 0, present = 0;
      for (int rank = 0; rank < 16; ++rank)
        for (uint32_t s : rep.rank_samples[rank]) {
          ++seen[s];
          EXPECT_EQ(rep.rank_of_sample[s], rank);
          bytes += ph.bytes[s];
        }
      for (size_t s = 0; s < it.origin.size(); ++s) {
        const bool in_phase = p == 2 || ph.lengths[s] > 0;
        present += in_phase;
        EXPECT_EQ(seen[s], in_phase ? 1 : 0) << rep.name << " sample " << s;
        if (!in_phase) {
          EXPECT_EQ(rep.rank_of_sample[s], -1);
        }
      }
      EXPECT_EQ(rep.samples, present);
      EXPECT_EQ(rep.input_bytes, bytes);
      EXPECT_LE(rep.dispatch.bytes, rep.input_bytes);
      EXPECT_LE(rep.dispatch.inter_node_bytes, rep.dispatch.bytes);
      EXPECT_GE(rep.max_over_lower_bound, 1.0 - 1e-12);
      EXPECT_LE(rep.max_load, rep.max_load_before + 1e-9) << rep.name;
      EXPECT_GE(rep.max_load + 1e-9, rep.mean_load);
      // Strawman all-gather moves at least as much per rank (and in total) as the all-to-all.
      EXPECT_GE(rep.all_gather_bytes, rep.dispatch.max_rank_bytes);
      EXPECT_GE(rep.all_gather_total_bytes, rep.dispatch.bytes);
      if (p < 2) {
        int64_t out = 0;
        for (size_t s = 0; s < it.origin.size(); ++s)
          if (ph.lengths[s] > 0) out += ph.output_bytes[s];
        EXPECT_EQ(rep.output_bytes, out);
        // Per sample, enc -> llm moving implies enc -> origin or origin -> llm moving.
        EXPECT_LE(rep.composed.bytes, rep.two_step.bytes);
        EXPECT_LE(rep.composed.inter_node_bytes, rep.two_step.inter_node_bytes);
      }
    }
    EXPECT_GE(r->all_gather_bytes, r->max_rank_all_to_all_bytes);
  }
}

TEST(OrchestratorTest, CompositionSavesAllToAlls) {
  Iteration it = MakeIteration(9, 32, 8);
  auto composed = Orchestrate(it.origin, it.phases, {32, 8, true, true});
  auto two_step = Orchestrate(it.origin, it.phases, {32, 8, true, false});
  ASSERT_TRUE(composed.ok() && two_step.ok());
  EXPECT_EQ(composed->all_to_all_ops, 2 * 2 + 1);
  EXPECT_EQ(two_step->all_to_all_ops, 3 * 2 + 1);
  EXPECT_LT(composed->all_to_all_ops, two_step->all_to_all_ops);
  EXPECT_LT(composed->all_to_all_bytes, two_step->all_to_all_bytes);
  // Encoder phases do not depend on the mode.
  EXPECT_EQ(composed->phases[0].rank_samples, two_step->phases[0].rank_samples);
  // The backward all-to-alls mirror the encoder-output moves: composed, each sample's output gradient goes
  // from its LLM rank back to its encoder rank; their bytes are the moved encoder outputs (composed traffic).
  for (const auto* r : {&*composed, &*two_step}) {
    int64_t grad_bytes = 0;
    for (const Transfer& t : r->gradient_transfers) {
      EXPECT_NE(t.src, t.dst);
      grad_bytes += t.bytes;
    }
    int64_t moved = 0;
    for (size_t e = 0; e + 1 < r->phases.size(); ++e)
      moved += r == &*composed ? r->phases[e].composed.bytes : r->phases[e].two_step.bytes;
    EXPECT_EQ(grad_bytes, moved);
  }
  // Reversed pairs of the composed moves: (enc rank -> LLM rank) becomes (LLM rank -> enc rank).
  std::multiset<std::tuple<int, int, int64_t>> fwd, bwd;
  for (const Transfer& t : composed->transfers) fwd.insert({t.src, t.dst, t.bytes});
  for (const Transfer& t : composed->gradient_transfers) bwd.insert({t.dst, t.src, t.bytes});
  for (const auto& x : bwd) EXPECT_GT(fwd.count(x), 0u);
}

TEST(OrchestratorTest, NodeWiseNeverWorseAndDeterministic) {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    Iteration it = MakeIteration(seed, 32, 8);
    auto nw = Orchestrate(it.origin, it.phases, {32, 8, true, true});
    auto nw2 = Orchestrate(it.origin, it.phases, {32, 8, true, true});
    auto id = Orchestrate(it.origin, it.phases, {32, 8, false, true});
    ASSERT_TRUE(nw.ok() && id.ok());
    for (size_t p = 0; p < 3; ++p) {
      EXPECT_EQ(nw->phases[p].rank_samples, nw2->phases[p].rank_samples);
      // Encoders: the dispatch is exactly what the placement optimizes.
      if (p < 2) {
        EXPECT_LE(nw->phases[p].dispatch.max_rank_inter_node_bytes,
                  id->phases[p].dispatch.max_rank_inter_node_bytes);
      }
      // Placement does not change the balance.
      EXPECT_DOUBLE_EQ(nw->phases[p].max_load, id->phases[p].max_load);
    }
  }
}

// keep_own (PostBalanceKeepOwn in every phase): the bins hold mostly their seed rank's draw, so node-wise
// placement saves inter-node bytes that identity placement (the bins in seed order, heaviest draw first) moves,
// and it moves fewer inter-node bytes than the plain balancers with node-wise placement; every sample is still
// placed once per phase.
TEST(OrchestratorTest, KeepOwnGivesNodeWisePlacementSomethingToSave) {
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    Iteration it = MakeIteration(seed, 32, 8);
    OrchestratorOptions keep{32, 8, true, true, true}, keep_identity{32, 8, false, true, true};
    auto nw = Orchestrate(it.origin, it.phases, keep);
    auto id = Orchestrate(it.origin, it.phases, keep_identity);
    auto plain = Orchestrate(it.origin, it.phases, {32, 8, true, true});
    ASSERT_TRUE(nw.ok() && id.ok() && plain.ok());
    for (size_t p : {size_t{0}, size_t{2}}) {  // vision and LLM
      const std::string what = "seed " + std::to_string(seed) + " phase " + nw->phases[p].name;
      EXPECT_LT(nw->phases[p].dispatch.inter_node_bytes, 0.8 * id->phases[p].dispatch.inter_node_bytes)
          << what;
      EXPECT_LT(nw->phases[p].dispatch.inter_node_bytes, plain->phases[p].dispatch.inter_node_bytes) << what;
      size_t placed = 0;
      for (const auto& r : nw->phases[p].rank_samples) placed += r.size();
      EXPECT_EQ(static_cast<int>(placed), nw->phases[p].samples) << what;
    }
  }
}

TEST(OrchestratorTest, BalancesBetterThanTheDrawnMiniBatches) {
  Iteration it = MakeIteration(3, 64, 16);
  auto r = Orchestrate(it.origin, it.phases, {64, 8, true, true});
  ASSERT_TRUE(r.ok());
  const PhaseReport& llm = r->phases[2];
  EXPECT_LT(llm.max_load, llm.max_load_before);
  EXPECT_LT(llm.max_over_lower_bound, 1.02);
  EXPECT_EQ(llm.name, "llm");
  EXPECT_EQ(llm.algorithm, PostBalanceAlgorithm::kKk);
}

TEST(OrchestratorTest, SingleRankMovesNothing) {
  Iteration it = MakeIteration(2, 1, 20);
  auto r = Orchestrate(it.origin, it.phases, {1, 8, true, true});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->all_to_all_bytes, 0);
  EXPECT_EQ(r->all_gather_bytes, 0);
  EXPECT_EQ(r->phases[2].rank_samples[0].size(), 20u);
}

TEST(OrchestratorTest, ErrorsAreValues) {
  Iteration it = MakeIteration(1, 4, 4);
  EXPECT_FALSE(Orchestrate(it.origin, it.phases, {0, 8, true, true}).ok());
  EXPECT_FALSE(Orchestrate(it.origin, it.phases, {4, 0, true, true}).ok());
  EXPECT_FALSE(Orchestrate(it.origin, {}, {4, 8, true, true}).ok());
  std::vector<int> bad_origin = it.origin;
  bad_origin[3] = 7;
  auto r = Orchestrate(bad_origin, it.phases, {4, 8, true, true});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "orchestrator: origin_rank[3]: 7 is not a rank in [0, 4)");
  auto phases = it.phases;
  phases[1].lengths.pop_back();
  r = Orchestrate(it.origin, phases, {4, 8, true, true});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(),
            "orchestrator: phase 'audio': lengths has 15 entries, expected 16 (one per sample)");
}

TEST(OrchestratorTest, AccountTrafficClosedForm) {
  // 4 ranks, 2 per node: 0 -> 1 intra (5 B), 0 -> 2 inter (7 B), 3 -> 2 intra (2 B), 1 -> 1 stays (9 B).
  std::vector<Transfer> t = {{0, 1, 5}, {0, 2, 7}, {3, 2, 2}, {1, 1, 9}};
  Traffic x = AccountTraffic(t, 4, 2);
  EXPECT_EQ(x.bytes, 14);
  EXPECT_EQ(x.max_rank_bytes, 12);  // rank 0 sends 12
  EXPECT_EQ(x.inter_node_bytes, 7);
  EXPECT_EQ(x.max_rank_inter_node_bytes, 7);
}

TEST(OrchestratorTest, PhasesFromModel) {
  auto model = LoadModel("orchmllm-10b");
  ASSERT_TRUE(model.ok()) << model.error().message();
  std::vector<Sample> samples(4);
  samples[0].images = samples[0].image_tiles = 1;
  samples[0].text_tokens = 100;
  samples[1].audio_seconds = 10;
  samples[1].text_tokens = 50;
  samples[2].text_tokens = 30;
  samples[3].images = 1;
  samples[3].image_tiles = 2;
  samples[3].audio_seconds = 4;
  samples[3].text_tokens = 10;
  auto phases = PhaseInputsForModel(*model, samples, {});
  ASSERT_TRUE(phases.ok()) << phases.error().message();
  ASSERT_EQ(phases->size(), 3u);
  const PhaseInput& vision = (*phases)[0];
  const PhaseInput& audio = (*phases)[1];
  const PhaseInput& llm = (*phases)[2];
  EXPECT_EQ(vision.name, "vision");
  EXPECT_EQ(audio.name, "audio");
  EXPECT_EQ(llm.name, "llm");
  EXPECT_EQ(audio.options.algorithm, PostBalanceAlgorithm::kPadded);
  const int64_t hidden = model->llm().tf.hidden;
  for (size_t i = 0; i < samples.size(); ++i) {
    const SampleTokens t = TokensFor(*model, samples[i]);
    EXPECT_EQ(vision.lengths[i], t.vit_tokens);
    EXPECT_EQ(audio.lengths[i], t.audio_tokens);
    EXPECT_EQ(llm.lengths[i], t.llm_tokens);
    EXPECT_EQ(llm.bytes[i], t.llm_tokens * hidden * 2);
    EXPECT_EQ(vision.bytes[i], t.vision_units * 3 * 448 * 448 * 2);
    // Text + encoder outputs make up the LLM sequence.
    EXPECT_EQ(llm.bytes[i] - vision.output_bytes[i] - audio.output_bytes[i],
              static_cast<int64_t>(samples[i].text_tokens) * hidden * 2)
        << "sample " << i;
  }
  EXPECT_EQ(vision.lengths[2], 0);
  EXPECT_EQ(audio.lengths[0], 0);
  EXPECT_GT(audio.bytes[1], 0);
  std::vector<int> origin = {0, 1, 0, 1};
  auto r = Orchestrate(origin, *phases, {2, 1, true, true});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->phases[0].samples, 2);
  EXPECT_EQ(r->phases[1].samples, 2);
}

}  // namespace
}  // namespace mmtwin
