// Issue 28, case 3: a job's output is bounded on disk. A job that prints far more than
// --log-limit leaves a log that takes at most about the limit (its first half and its last half
// kept, the middle punched out of the file), and `nodus logs` prints the head, says on stderr how
// much was dropped, then prints the tail: never the zeros of the hole. Before the limit, a job
// printing 8 M lines a second wrote 1.6 GB of log in 5 s.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

#include "cli/fixtures.h"

namespace nodus::testing {
namespace {

// What `seq 1 N` prints.
std::string seq_output(int n) {
  std::string s;
  s.reserve(static_cast<size_t>(n) * 8);
  for (int i = 1; i <= n; ++i) s += std::to_string(i) + "\n";
  return s;
}

// "" when a == b, else where they first differ, in a few bytes of each: megabytes of lines must
// not reach EXPECT_EQ, whose line diff of two such strings takes gigabytes.
std::string difference(const std::string& a, const std::string& b) {
  if (a == b) return "";
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  auto near = [i](const std::string& s) {
    size_t from = i > 20 ? i - 20 : 0;
    return "'" + s.substr(from, 40) + "'";
  };
  return "sizes " + std::to_string(a.size()) + " and " + std::to_string(b.size()) +
         ", first difference at byte " + std::to_string(i) + ": " + near(a) + " vs " + near(b);
}

uint64_t disk_bytes(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

constexpr int kLines = 2'000'000;  // 14.9 MB of output
constexpr uint64_t kLimit = 2ull << 20;
constexpr uint64_t kHead = 1ull << 20;  // half the limit (a multiple of the 64 KiB alignment)

TEST(LogLimit, AFloodKeepsTheHeadAndTheTailAndTheDiskWithinTheLimit) {
  NodusHome home;
  const std::string all = seq_output(kLines);
  auto r = home.run({"run", "--log-limit", "2M", "--", "seq", "1", std::to_string(kLines)});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(difference(r.out, all), "") << "the attached run still copies all of it";
  EXPECT_NE(r.err.find("passed --log-limit 2.0 MiB"), std::string::npos) << r.err;

  auto job = show_json(home, "1");
  const std::string log = job["log_path"].get<std::string>();
  // The head, the kept tail, and at most one step (limit / 16) of tail not yet dropped.
  EXPECT_LE(disk_bytes(log), kLimit + kLimit / 16 + (64u << 10)) << log;

  auto logs = home.run({"logs", "1"});
  ASSERT_EQ(logs.code, 0) << logs.err;
  ASSERT_GT(logs.out.size(), kHead);
  EXPECT_LE(logs.out.size(), kLimit + kLimit / 16 + (64u << 10));
  EXPECT_EQ(logs.out.find('\0'), std::string::npos) << "the hole's zeros were printed";
  EXPECT_EQ(difference(logs.out.substr(0, kHead), all.substr(0, kHead)), "") << "the head";
  const size_t tail = std::min(logs.out.size() - kHead, all.size());
  EXPECT_EQ(difference(logs.out.substr(kHead), all.substr(all.size() - tail)), "") << "the tail";
  // The note says how much is missing: exactly what was not printed.
  const uint64_t dropped = all.size() - logs.out.size();
  EXPECT_NE(logs.err.find("of output dropped here by --log-limit"), std::string::npos) << logs.err;
  char mib[32];
  std::snprintf(mib, sizeof mib, "%.1f MiB", static_cast<double>(dropped) / (1 << 20));
  EXPECT_NE(logs.err.find(mib), std::string::npos) << logs.err << " (dropped " << dropped << ")";

  // The last lines come from the tail; a stream of the log skips the hole too.
  auto last = home.run({"logs", "1", "--tail", "2"});
  EXPECT_EQ(last.out, "1999999\n2000000\n") << last.err;
  auto out = home.run({"logs", "1", "--stream", "stdout"});
  EXPECT_EQ(difference(out.out, logs.out), "") << out.err;
  auto out_tail = home.run({"logs", "1", "--stream", "stdout", "--tail", "1"});
  EXPECT_EQ(out_tail.out, "2000000\n") << out_tail.err;
}

TEST(LogLimit, NoneKeepsEverythingAndADetachedRunIsLimitedToo) {
  NodusHome home;
  const int lines = 400'000;  // 2.7 MB
  auto r = home.run({"run", "--log-limit", "none", "--", "seq", "1", std::to_string(lines)});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(difference(home.run({"logs", "1"}).out, seq_output(lines)), "");

  auto d = home.run({"run", "-d", "--log-limit", "1M", "--", "seq", "1", std::to_string(lines)});
  ASSERT_EQ(d.code, 0) << d.err;
  ASSERT_EQ(home.run({"wait", "2"}).code, 0);
  auto logs = home.run({"logs", "2"});
  EXPECT_LT(logs.out.size(), (1u << 20) + (128u << 10)) << "a detached run's log is bounded";
  EXPECT_EQ(logs.out.substr(0, 7), "1\n2\n3\n4");
  EXPECT_NE(logs.err.find("dropped here by --log-limit"), std::string::npos) << logs.err;
}

TEST(LogLimit, BadSizesAreRefusedBeforeAnythingRuns) {
  NodusHome home;
  for (std::string bad : {"10k", "banana", "", "-1G", "1.5.G", "nan", "inf", "1Q", "0"}) {
    auto r = home.run({"run", "--log-limit", bad, "--", "true"});
    EXPECT_EQ(r.code, 125) << bad << ": " << r.err;
    EXPECT_NE(r.err.find("--log-limit"), std::string::npos) << bad << ": " << r.err;
  }
  auto tiny = home.run({"run", "--log-limit", "10k", "--", "true"});
  EXPECT_NE(tiny.err.find("at least 1.0 MiB"), std::string::npos) << tiny.err;
  write_file(home.file("job.yaml"), "command: [true]\nlog_limit: \"\"\n");
  auto spec = home.run({"run", "-f", home.file("job.yaml")});
  EXPECT_EQ(spec.code, 125) << spec.err;
  EXPECT_NE(spec.err.find("log_limit"), std::string::npos) << spec.err;
  EXPECT_EQ(home.run({"ps", "-a", "--format", "json"}).out, "[]\n") << "nothing was stored";
}

}  // namespace
}  // namespace nodus::testing
