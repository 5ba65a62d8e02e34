// SPDX-License-Identifier: Apache-2.0
// Errors as values with kinds (core/util/status.h): a kind survives Wrap and the macros, a cancellation carries no
// context (it happened to the run, not at a place in the input), and Error::At is invalid input.
#include <string>

#include <gtest/gtest.h>

#include "core/util/status.h"

namespace mmtwin {
namespace {

Status Fails(Error e) { return e; }
Result<int> FailsWith(Error e) { return e; }

Status Propagates(Error e) {
  MMTWIN_RETURN_IF_ERROR(Fails(std::move(e)));
  return Status();
}

Result<int> AssignsOrPropagates(Error e) {
  MMTWIN_ASSIGN_OR_RETURN(int x, FailsWith(std::move(e)));
  return x + 1;
}

TEST(StatusTest, KindsAndNames) {
  EXPECT_EQ(Error("bad").kind(), ErrorKind::kInvalidInput);
  EXPECT_EQ(Error::At("a.yaml", 3, "x", "bad").kind(), ErrorKind::kInvalidInput);
  EXPECT_EQ(Error::At("a.yaml", 3, "x", "bad").message(), "a.yaml:3: x: bad");
  EXPECT_EQ(Error::Io("a.csv: cannot open").kind(), ErrorKind::kIo);
  EXPECT_EQ(Error::External("sqlite").kind(), ErrorKind::kExternal);
  EXPECT_EQ(Error::Internal("bug").kind(), ErrorKind::kInternal);
  EXPECT_TRUE(Error::Cancelled().cancelled());
  EXPECT_EQ(Error::Cancelled().message(), "cancelled");
  EXPECT_FALSE(Error("cancelled").cancelled());  // the kind decides, never the text
  EXPECT_STREQ(ErrorKindName(ErrorKind::kInvalidInput), "invalid input");
  EXPECT_STREQ(ErrorKindName(ErrorKind::kCancelled), "cancelled");
  EXPECT_STREQ(ErrorKindName(ErrorKind::kIo), "I/O");
  EXPECT_STREQ(ErrorKindName(ErrorKind::kExternal), "external");
  EXPECT_STREQ(ErrorKindName(ErrorKind::kInternal), "internal");
}

TEST(StatusTest, WrapKeepsTheKindAndLeavesACancellationAlone) {
  const Error io = Error::Io("x.csv: cannot open").Wrap("reading the trace");
  EXPECT_EQ(io.message(), "reading the trace: x.csv: cannot open");
  EXPECT_EQ(io.kind(), ErrorKind::kIo);
  const Error c =
      Error::Cancelled().Wrap("partition policy 'bmp': evaluating candidate 0").Wrap("long.yaml:14");
  EXPECT_TRUE(c.cancelled());
  EXPECT_EQ(c.message(), "cancelled");
  const Error ext = Error("child said no").WrapAs("simgrid engine", ErrorKind::kExternal);
  EXPECT_EQ(ext.kind(), ErrorKind::kExternal);
  EXPECT_EQ(ext.message(), "simgrid engine: child said no");
  EXPECT_TRUE(Error::Cancelled().WrapAs("x", ErrorKind::kExternal).cancelled());
}

TEST(StatusTest, MacrosAndConversionsKeepTheKind) {
  for (const Error& e :
       {Error("bad"), Error::Cancelled(), Error::Io("io"), Error::External("ext"), Error::Internal("bug")}) {
    const Status s = Propagates(e);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().kind(), e.kind());
    EXPECT_EQ(s.error().message(), e.message());
    const Result<int> r = AssignsOrPropagates(e);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind(), e.kind());
    EXPECT_EQ(r.status().error().kind(), e.kind());
  }
  const Result<int> ok = 41;
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 41);
}

}  // namespace
}  // namespace mmtwin
