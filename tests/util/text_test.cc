// SPDX-License-Identifier: Apache-2.0
// The shared text and statistics helpers (core/util/text.h) against closed forms.
#include "core/util/text.h"

#include <gtest/gtest.h>

namespace mmtwin {
namespace {

TEST(TextTest, Join) {
  EXPECT_EQ(Join({}), "");
  EXPECT_EQ(Join({"a"}), "a");
  EXPECT_EQ(Join({"a", "b", "c"}), "a, b, c");
  EXPECT_EQ(Join({"a", "b"}, "/"), "a/b");
}

TEST(TextTest, PercentileClosedForms) {
  EXPECT_EQ(Percentile({}, 0.5), 0);
  EXPECT_EQ(Percentile({7}, 0.99), 7);
  // n = 5: position q * 4.
  const std::vector<double> v = {50, 10, 40, 20, 30};
  EXPECT_DOUBLE_EQ(Percentile(v, 0), 10);
  EXPECT_DOUBLE_EQ(Percentile(v, 1), 50);
  EXPECT_DOUBLE_EQ(Percentile(v, 0.5), 30);
  EXPECT_DOUBLE_EQ(Percentile(v, 0.99), 40 + 0.96 * 10);  // position 3.96
  EXPECT_DOUBLE_EQ(Percentile({1, 2}, 0.25), 1.25);
  EXPECT_DOUBLE_EQ(PercentileSorted({1, 2, 3, 4}, 0.5), 2.5);
}

TEST(TextTest, Utf8StrictAndLenient) {
  EXPECT_TRUE(ValidUtf8(""));
  EXPECT_TRUE(ValidUtf8("plain ascii"));
  EXPECT_TRUE(ValidUtf8("caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80"));  // 2, 3 and 4 byte forms
  EXPECT_FALSE(ValidUtf8("\xc0\xaf"));                                  // overlong '/'
  EXPECT_FALSE(ValidUtf8("\xed\xa0\x80"));                              // surrogate U+D800
  EXPECT_FALSE(ValidUtf8("\xf4\x90\x80\x80"));                          // above U+10FFFF
  EXPECT_FALSE(ValidUtf8("\xe4\xb8"));                                  // truncated
  EXPECT_FALSE(ValidUtf8("\x80"));                                      // stray continuation
  uint32_t cp = 0;
  EXPECT_EQ(DecodeUtf8("\xe4\xb8\xad", 0, cp), 3u);
  EXPECT_EQ(cp, 0x4E2Du);
  EXPECT_EQ(DecodeUtf8("a\xff", 1, cp), 1u);  // invalid byte: U+FFFD, length 1
  EXPECT_EQ(cp, 0xFFFDu);
  EXPECT_EQ(DecodeUtf8("\xe4\xb8", 0, cp), 1u);  // truncated
  EXPECT_EQ(cp, 0xFFFDu);
}

}  // namespace
}  // namespace mmtwin
