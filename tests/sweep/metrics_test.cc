#include "sweep/metrics.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace nodus::sweep {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "nodus-sweep-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

void append(const fs::path& path, std::string_view text) {
  std::ofstream out(path, std::ios::app | std::ios::binary);
  out << text;
}

std::vector<std::string> names(const std::vector<MetricPoint>& points) {
  std::vector<std::string> out;
  for (const auto& p : points) out.push_back(p.name);
  return out;
}

using V = std::vector<std::string>;

TEST(MetricsLine, EveryNumericFieldButTIsAPoint) {
  std::vector<MetricPoint> points;
  ASSERT_TRUE(parse_metrics_line(
      R"({"t": 1000.5, "step": 40, "samples_per_sec": 8400.2, "data_wait": 0.24, "ok": true,)"
      R"( "phase": "train", "nested": {"x": 1}, "list": [1, 2], "nothing": null})",
      5.0, &points));
  EXPECT_EQ(names(points), (V{"step", "samples_per_sec", "data_wait"}));
  for (const auto& p : points) EXPECT_EQ(p.t, 1000.5);
  EXPECT_DOUBLE_EQ(points[1].value, 8400.2);
}

TEST(MetricsLine, TimeDefaultsToNowWhenMissingOrNotNumeric) {
  std::vector<MetricPoint> points;
  ASSERT_TRUE(parse_metrics_line(R"({"loss": 0.5})", 42.0, &points));
  ASSERT_TRUE(parse_metrics_line(R"({"t": "noon", "loss": 0.4})", 43.0, &points));
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].t, 42.0);
  EXPECT_EQ(points[1].t, 43.0);
}

TEST(MetricsLine, NonObjectsAreMalformedAndBlankLinesAreNot) {
  std::vector<MetricPoint> points;
  for (auto line : {"[1,2]", "3", "\"x\"", "{\"a\":", "not json", "{\"a\":1}}", "null"})
    EXPECT_FALSE(parse_metrics_line(line, 0, &points)) << line;
  EXPECT_TRUE(parse_metrics_line("", 0, &points));
  EXPECT_TRUE(parse_metrics_line("  \r", 0, &points));
  EXPECT_TRUE(points.empty());
}

TEST(MetricsStream, PartialLineWaitsForItsNewline) {
  MetricsStream s;
  EXPECT_TRUE(s.feed(R"({"samples_per_sec": 10)", 1).empty());
  EXPECT_TRUE(s.feed("0.5, \"data", 2).empty());
  auto points = s.feed("_wait\": 0.1}\n{\"x\"", 3);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].name, "samples_per_sec");
  EXPECT_DOUBLE_EQ(points[0].value, 100.5);
  EXPECT_EQ(points[0].t, 3);
  EXPECT_EQ(s.feed(":1}\r\n", 4).size(), 1u);
  EXPECT_EQ(s.stats().lines, 2u);
  EXPECT_EQ(s.stats().malformed, 0u);
}

TEST(MetricsStream, FinishTakesAnUnterminatedLastLine) {
  MetricsStream s;
  EXPECT_TRUE(s.feed(R"({"loss": 1})", 1).empty());
  EXPECT_EQ(s.finish(2).size(), 1u);
  EXPECT_TRUE(s.finish(3).empty());
}

TEST(MetricsStream, GarbageIsSkippedAndCounted) {
  MetricsStream s;
  using namespace std::literals;
  auto points = s.feed(
      "Traceback (most recent call last):\n{\"a\": 1}\n\xff\xfe\x00garbage\n{\"b\":\n\n{\"c\": "
      "3}\n"sv,
      1);
  EXPECT_EQ(names(points), (V{"a", "c"}));
  EXPECT_EQ(s.stats().malformed, 3u);
  EXPECT_EQ(s.stats().lines, 5u);
  EXPECT_EQ(describe(s.stats()), "3 malformed lines skipped");
}

TEST(MetricsStream, OverLongLineIsSkippedAcrossFeeds) {
  MetricsLimits limits;
  limits.max_line_bytes = 100;
  MetricsStream s(limits);
  std::string long_line = "{\"x\": \"" + std::string(150, 'a') + "\", \"v\": 1}";
  // Fed in pieces, so the stream must remember to skip up to the newline.
  EXPECT_TRUE(s.feed(long_line.substr(0, 60), 1).empty());
  EXPECT_TRUE(s.feed(long_line.substr(60, 60), 1).empty());
  auto points = s.feed(long_line.substr(120) + "\n{\"ok\": 1}\n", 1);
  EXPECT_EQ(names(points), (V{"ok"}));
  EXPECT_EQ(s.stats().too_long, 1u);
  EXPECT_EQ(describe(s.stats()), "1 over-long line skipped");
  // A line of exactly the limit is kept.
  std::string exact = "{\"v\": " + std::string(100 - 8, ' ') + "7}";
  ASSERT_EQ(exact.size(), 100u);
  EXPECT_EQ(s.feed(exact + "\n", 1).size(), 1u);
}

TEST(MetricsStream, StopsAtTheByteLimit) {
  MetricsLimits limits;
  limits.max_total_bytes = 30;
  MetricsStream s(limits);
  EXPECT_EQ(s.feed("{\"a\": 1}\n{\"b\": 2}\n", 1).size(), 2u);  // 18 bytes
  auto points = s.feed("{\"c\": 3}\n{\"d\": 4}\n", 1);          // the limit falls inside "d"
  EXPECT_EQ(names(points), (V{"c"}));
  EXPECT_TRUE(s.stats().stopped);
  EXPECT_EQ(s.stats().bytes, 30u);
  EXPECT_EQ(s.stats().note,
            "stopped reading metrics after 30 bytes (the limit); later lines are ignored");
  EXPECT_TRUE(s.feed("{\"e\": 5}\n", 1).empty());
  EXPECT_TRUE(s.finish(1).empty());
}

TEST(MetricsStream, StopsAtThePointLimit) {
  MetricsLimits limits;
  limits.max_points = 5;
  MetricsStream s(limits);
  auto points = s.feed("{\"a\":1,\"b\":2}\n{\"c\":3,\"d\":4,\"e\":5,\"f\":6}\n{\"g\":7}\n", 1);
  EXPECT_EQ(names(points), (V{"a", "b", "c", "d", "e"}));
  EXPECT_TRUE(s.stats().stopped);
  EXPECT_EQ(s.stats().points, 5u);
  EXPECT_NE(describe(s.stats()).find("after 5 points"), std::string::npos);
}

TEST(MetricsFile, MissingFileGivesNothingUntilItAppears) {
  TempDir dir;
  MetricsFileReader reader((dir / "metrics.jsonl").string());
  EXPECT_TRUE(reader.poll(1).empty());
  append(dir / "metrics.jsonl", "{\"samples_per_sec\": 5}\n");
  EXPECT_EQ(reader.poll(2).size(), 1u);
}

TEST(MetricsFile, ReadsOnlyWhatWasAppendedSinceTheLastPoll) {
  TempDir dir;
  auto path = dir / "m.jsonl";
  MetricsFileReader reader(path.string());
  append(path, "{\"step\": 1}\n{\"step\": 2}\n{\"st");
  auto first = reader.poll(1);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[1].value, 2);
  EXPECT_TRUE(reader.poll(2).empty());
  append(path, "ep\": 3}\n");
  auto second = reader.poll(3);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].value, 3);
  EXPECT_EQ(reader.offset(), fs::file_size(path));
  append(path, "{\"step\": 4}");
  EXPECT_TRUE(reader.poll(4).empty());
  EXPECT_EQ(reader.finish(5).size(), 1u);
}

TEST(MetricsFile, TruncatedFileIsReadAgainFromItsStart) {
  TempDir dir;
  auto path = dir / "m.jsonl";
  MetricsFileReader reader(path.string());
  append(path, "{\"step\": 1}\n{\"step\": 2}\n{\"partial");
  EXPECT_EQ(reader.poll(1).size(), 2u);
  fs::resize_file(path, 0);
  append(path, "{\"step\": 9}\n");
  auto points = reader.poll(2);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].value, 9);
  EXPECT_EQ(reader.stats().malformed, 0u);  // the dropped partial line did not join the new one
}

TEST(MetricsFile, BoundedByASmallByteLimit) {
  TempDir dir;
  auto path = dir / "m.jsonl";
  std::string lines;
  for (int i = 0; i < 1000; ++i) lines += "{\"step\": " + std::to_string(i) + "}\n";
  append(path, lines);
  MetricsLimits limits;
  limits.max_total_bytes = 4096;
  MetricsFileReader reader(path.string(), limits);
  auto points = reader.poll(1);
  EXPECT_TRUE(reader.stats().stopped);
  EXPECT_EQ(reader.stats().bytes, 4096u);
  EXPECT_LT(points.size(), 400u);
  EXPECT_GT(points.size(), 200u);
  append(path, "{\"step\": -1}\n");
  EXPECT_TRUE(reader.poll(2).empty());
}

TEST(MetricsFile, StopsAfter64MiBWithDefaultLimits) {
  // 65 MiB of over-long garbage lines, then a valid line that must never be read. Over-long lines
  // are dropped without parsing, so this stays fast.
  TempDir dir;
  auto path = dir / "huge.jsonl";
  {
    std::ofstream out(path, std::ios::binary);
    std::string mib((1 << 20) - 1, 'x');
    for (int i = 0; i < 65; ++i) out << mib << '\n';
    out << "{\"samples_per_sec\": 1}\n";
  }
  MetricsFileReader reader(path.string());
  auto start = std::chrono::steady_clock::now();
  auto points = reader.poll(1);
  points = reader.finish(2);
  EXPECT_TRUE(points.empty());
  EXPECT_TRUE(reader.stats().stopped);
  EXPECT_EQ(reader.stats().bytes, 64ull << 20);
  EXPECT_EQ(reader.stats().too_long, 64u);
  EXPECT_EQ(describe(reader.stats()),
            "64 over-long lines skipped; stopped reading metrics after 64 MiB (the limit); later "
            "lines are ignored");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

TEST(MetricsThroughput, MeanOfReportsAfterTheFirst) {
  std::vector<MetricPoint> points = {{1, "samples_per_sec", 100},
                                     {1, "data_wait", 0.9},
                                     {2, "samples_per_sec", 900},
                                     {3, "samples_per_sec", 1100},
                                     {3, "data_wait", 0.1}};
  EXPECT_DOUBLE_EQ(*steady_mean(points, kDefaultThroughputMetric), 1000);
  EXPECT_DOUBLE_EQ(*steady_mean(points, "data_wait"), 0.1);
  EXPECT_FALSE(steady_mean(points, "tokens_per_sec").has_value());
}

TEST(MetricsThroughput, SingleReportIsUsedAsIs) {
  EXPECT_DOUBLE_EQ(*steady_mean({{1, "samples_per_sec", 250}}, "samples_per_sec"), 250);
}

// The job owns its NODUS_METRICS path: whatever it puts there, poll() returns at once and a
// non-regular file is refused for good with a note naming what it is.
TEST(MetricsFile, FifoIsRefusedWithoutBlocking) {
  TempDir dir;
  auto path = dir / "m.jsonl";
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  MetricsFileReader reader(path.string());
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(reader.poll(1).empty());
  EXPECT_TRUE(reader.finish(2).empty());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_TRUE(reader.stats().stopped);
  EXPECT_NE(reader.stats().note.find("is a FIFO: not read"), std::string::npos)
      << reader.stats().note;
  EXPECT_EQ(reader.stats().note.find('\n'), std::string::npos);
}

TEST(MetricsFile, SymlinkIsRefusedNotFollowed) {
  TempDir dir;
  auto target = dir / "elsewhere.jsonl";
  append(target, "{\"step\": 1}\n");
  auto path = dir / "m.jsonl";
  fs::create_symlink(target, path);
  MetricsFileReader reader(path.string());
  EXPECT_TRUE(reader.poll(1).empty());
  EXPECT_NE(reader.stats().note.find("is a symbolic link"), std::string::npos);
}

TEST(MetricsFile, SocketAndDeviceAreRefused) {
  TempDir dir;
  auto path = dir / "m.sock";
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  MetricsFileReader sock(path.string());
  EXPECT_TRUE(sock.poll(1).empty());
  EXPECT_NE(sock.stats().note.find("is a socket"), std::string::npos);
  ::close(fd);
  MetricsFileReader dev("/dev/zero");  // would never end if it were read
  EXPECT_TRUE(dev.poll(1).empty());
  EXPECT_NE(dev.stats().note.find("is a device"), std::string::npos);
}

TEST(MetricsFile, FileRenamedOverIsReadFromItsStart) {
  TempDir dir;
  auto path = dir / "m.jsonl";
  append(path, "{\"step\": 1}\n{\"step\": 2}\n{\"step\": 3}\n");
  MetricsFileReader reader(path.string());
  EXPECT_EQ(reader.poll(1).size(), 3u);
  // A longer file renamed over the old one: the same size check alone would miss its start.
  auto fresh = dir / "fresh.jsonl";
  append(fresh, "{\"step\": 10}\n{\"step\": 20}\n{\"step\": 30}\n{\"step\": 40}\n");
  fs::rename(fresh, path);
  auto points = reader.poll(2);
  ASSERT_EQ(points.size(), 4u);
  EXPECT_EQ(points[0].value, 10);
  EXPECT_EQ(reader.stats().replaced, 1u);
}

TEST(MetricsFile, FloodIsSampledWithinThePollBudget) {
  TempDir dir;
  auto path = dir / "m.jsonl";
  std::string lines;
  for (int i = 0; i < 100000; ++i) lines += "{\"step\": " + std::to_string(i) + "}\n";
  append(path, lines);
  MetricsLimits limits;
  limits.max_poll_bytes = 64 << 10;
  MetricsFileReader reader(path.string(), limits);
  auto points = reader.poll(1);
  EXPECT_LE(reader.stats().bytes, 64u << 10);
  EXPECT_GT(reader.stats().skipped_bytes, lines.size() - (65u << 10));
  ASSERT_FALSE(points.empty());
  EXPECT_EQ(points.back().value, 99999);    // the newest lines are the ones read
  EXPECT_EQ(reader.stats().malformed, 0u);  // reading resumed at a line boundary
  EXPECT_NE(describe(reader.stats()).find("skipped unread"), std::string::npos);
}

TEST(MetricsValues, FractionsAndThroughputAreChecked) {
  EXPECT_TRUE(plausible_metric({1, "data_wait", 0.25}, "samples_per_sec"));
  EXPECT_FALSE(plausible_metric({1, "data_wait", 1.5}, "samples_per_sec"));
  EXPECT_FALSE(plausible_metric({1, "data_wait", -0.1}, "samples_per_sec"));
  EXPECT_FALSE(plausible_metric({1, "gpu_fraction", 2}, "samples_per_sec"));
  EXPECT_TRUE(plausible_metric({1, "samples_per_sec", 8000}, "samples_per_sec"));
  EXPECT_FALSE(plausible_metric({1, "samples_per_sec", 0}, "samples_per_sec"));
  EXPECT_FALSE(plausible_metric({1, "tokens", -5}, "tokens"));
  EXPECT_FALSE(plausible_metric({1, "loss", HUGE_VAL}, "samples_per_sec"));
  EXPECT_TRUE(plausible_metric({1, "loss", -3}, "samples_per_sec"));  // any finite value
}

}  // namespace
}  // namespace nodus::sweep
