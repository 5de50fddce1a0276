#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "core/proc.h"
#include "series_fixture.h"

namespace nodus::telemetry {
namespace {

TEST(ParseProcStat, ReadsTheFieldsOfARecordedLine) {
  auto st = parse_proc_stat(testing::read_text("proc_stat_python.txt"));
  ASSERT_TRUE(st);
  EXPECT_EQ(st->pid, 12345);
  EXPECT_EQ(st->state, 'S');
  EXPECT_EQ(st->ppid, 12000);
  EXPECT_EQ(st->pgrp, 12345);
  EXPECT_EQ(st->session, 12345);
  EXPECT_EQ(st->utime, 2500u);
  EXPECT_EQ(st->stime, 300u);
  EXPECT_EQ(st->starttime, 987654u);
  EXPECT_EQ(st->rss_pages, 250000);
}

TEST(ParseProcStat, CommWithSpacesAndParenthesesEndsAtTheLastParen) {
  auto st = parse_proc_stat(testing::read_text("proc_stat_odd_comm.txt"));
  ASSERT_TRUE(st);
  EXPECT_EQ(st->pid, 4242);
  EXPECT_EQ(st->state, 'R');
  EXPECT_EQ(st->ppid, 12345);
  EXPECT_EQ(st->utime, 777u);
  EXPECT_EQ(st->stime, 33u);
  EXPECT_EQ(st->starttime, 987700u);
  EXPECT_EQ(st->rss_pages, 51200);
}

TEST(ParseProcStat, ReadsThisProcess) {
  std::ifstream in("/proc/self/stat");
  std::stringstream ss;
  ss << in.rdbuf();
  auto st = parse_proc_stat(ss.str());
  ASSERT_TRUE(st);
  EXPECT_EQ(st->pid, getpid());
  EXPECT_EQ(st->ppid, getppid());
  EXPECT_EQ(st->session, getsid(0));
  EXPECT_GT(st->rss_pages, 0);
}

TEST(ParseProcStat, MalformedIsNullopt) {
  EXPECT_FALSE(parse_proc_stat(""));
  EXPECT_FALSE(parse_proc_stat("12 (x S 1 2 3"));
  EXPECT_FALSE(parse_proc_stat("12 (x) S 1 2 3 4 5"));
  EXPECT_FALSE(parse_proc_stat(
      "abc (x) S 1 1 1 0 -1 0 0 0 0 0 5 5 0 0 20 0 1 0 100 0 10 0 0 0 0 0 0 0 0 0 0 0 0 0"));
  EXPECT_FALSE(parse_proc_stat(
      "12 (x) S 1 1 1 0 -1 0 0 0 0 0 five 5 0 0 20 0 1 0 100 0 10 0 0 0 0 0 0 0 0 0 0 0 0 0"));
}

}  // namespace
}  // namespace nodus::telemetry
