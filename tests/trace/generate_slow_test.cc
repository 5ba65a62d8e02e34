// SPDX-License-Identifier: Apache-2.0
// Full-size generator checks: exact published counts at the datasets' real sizes.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <unordered_set>

#include "core/trace/generate.h"

namespace mmtwin {
namespace {

std::map<std::string, int64_t> CountBySubset(const Trace& t) {
  std::map<std::string, int64_t> m;
  for (const Sample& s : t.samples) ++m[t.subsets[s.subset]];
  return m;
}

TEST(GenerateFullSizeTest, InternVlExactSubsetCounts) {
  Result<Trace> r = GenerateTrace("internvl-1.2m", 1267819, 1);
  ASSERT_TRUE(r.ok());
  const Trace& t = *r;
  ASSERT_EQ(t.size(), 1267819u);
  const std::map<std::string, int64_t> expected = {{"sharegpt4v_instruct_gpt4-vision_cap100k", 102025},
                                                   {"llava_instruct_150k_zh", 157712},
                                                   {"sharegpt4v_mix665k", 665058},
                                                   {"dvqa_train_200k", 200000},
                                                   {"chartqa_train_18k", 18317},
                                                   {"ai2d_train_12k", 12413},
                                                   {"docvqa_train_10k", 10211},
                                                   {"geoqa+", 72318},
                                                   {"synthdog_en", 29765}};
  EXPECT_EQ(CountBySubset(t), expected);
  int64_t text_only = 0;
  double llm = 0, llm2 = 0, tiles = 0;
  std::unordered_set<std::string> ids;
  for (const Sample& s : t.samples) {
    text_only += s.images == 0;
    const double l = s.text_tokens + 256.0 * s.image_tiles;
    ASSERT_LE(l, 4096);
    llm += l;
    llm2 += l * l;
    tiles += s.image_tiles;
    ids.insert(t.id(static_cast<size_t>(&s - t.samples.data())));
  }
  EXPECT_EQ(text_only, 40688);
  EXPECT_EQ(ids.size(), t.size());
  const double n = static_cast<double>(t.size()), mean = llm / n;
  std::printf("internvl-1.2m full: mean LLM %.0f std %.0f mean tiles %.3f ratio %.1f\n", mean,
              std::sqrt(llm2 / n - mean * mean), tiles / n, mean / (tiles / n));
  EXPECT_EQ(4096 / (((static_cast<int64_t>(mean / (tiles / n)) + 1) / 16) * 16), 9);
}

TEST(GenerateFullSizeTest, LlavaExactSourceCounts) {
  Result<Trace> r = GenerateTrace("llava-665k", 665298, 1);
  ASSERT_TRUE(r.ok());
  const std::map<std::string, int64_t> expected = {{"llava_instruct_158k", 157712},
                                                   {"sharegpt", 40688},
                                                   {"vqav2", 82783},
                                                   {"gqa", 72140},
                                                   {"okvqa", 8998},
                                                   {"ocrvqa", 80000},
                                                   {"a-okvqa", 66160},
                                                   {"textcaps", 21953},
                                                   {"refcoco", 48447},
                                                   {"vg", 86417}};
  EXPECT_EQ(CountBySubset(*r), expected);
  int64_t images = 0;
  for (const Sample& s : r->samples) images += s.images;
  EXPECT_EQ(images, 665298 - 40688);
}

TEST(GenerateFullSizeTest, LcsSize) {
  Result<Trace> r = GenerateTrace("lcs-558k", 558128, 1);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->size(), 558128u);
  EXPECT_TRUE(ValidateTrace(*r, "lcs").ok());
}

}  // namespace
}  // namespace mmtwin
