#include "telemetry/smi_csv.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <sstream>

#include "series_fixture.h"

namespace nodus::telemetry {
namespace {

// nvidia-smi prints local time; the tests pin the zone so the expected unix times are fixed.
class SmiCsv : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* tz = std::getenv("TZ")) saved_ = tz, had_ = true;
    setenv("TZ", "UTC", 1);
    tzset();
  }
  void TearDown() override {
    if (had_)
      setenv("TZ", saved_.c_str(), 1);
    else
      unsetenv("TZ");
    tzset();
  }
  std::string saved_;
  bool had_ = false;
};

TEST_F(SmiCsv, ParsesTheRecordedH200Line) {
  auto s = parse_smi_line("2026/11/29 15:17:35.651, 0, 27, 7, 883, 192.65, 1965");
  ASSERT_TRUE(s);
  EXPECT_NEAR(s->t, 1795965455.651, 1e-3);
  EXPECT_EQ(s->gpu_index, 0);
  EXPECT_EQ(s->util_gpu, 27);
  EXPECT_EQ(s->util_mem, 7);
  EXPECT_EQ(s->mem_used_mib, 883);
  EXPECT_DOUBLE_EQ(*s->power_w, 192.65);
  EXPECT_EQ(s->sm_clock_mhz, 1965);
  EXPECT_FALSE(s->pcie_rx_kbs);
  EXPECT_FALSE(s->pcie_tx_kbs);
}

TEST_F(SmiCsv, NotAvailableFieldsAreEmpty) {
  auto s =
      parse_smi_line("2026/11/29 15:17:36.404, 1, 45, [N/A], [N/A], [Not Supported], 1410, [N/A]");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->gpu_index, 1);
  EXPECT_EQ(s->util_gpu, 45);
  EXPECT_FALSE(s->util_mem);
  EXPECT_FALSE(s->mem_used_mib);
  EXPECT_FALSE(s->power_w);
  EXPECT_EQ(s->sm_clock_mhz, 1410);
}

TEST_F(SmiCsv, LineWithoutUtilizationIsNoSample) {
  EXPECT_FALSE(parse_smi_line("2026/11/29 15:17:36.655, 2, [N/A], 3, 883, 70.10, 1410"));
}

TEST_F(SmiCsv, RejectsErrorTextAndShortLines) {
  EXPECT_FALSE(
      parse_smi_line("NVIDIA-SMI has failed because it couldn't communicate with the "
                     "NVIDIA driver. Make sure that the latest NVIDIA driver is "
                     "installed and running."));
  EXPECT_FALSE(parse_smi_line(""));
  EXPECT_FALSE(parse_smi_line("2026/11/29 15:17:35.651, 0, 27"));
  EXPECT_FALSE(parse_smi_line("2026/11/29 15:17:35.651, -1, 27, 7, 883, 192.65, 1965"));
  EXPECT_FALSE(parse_smi_line("2026/11/29 15:17:35.651, 0.5, 27, 7, 883, 192.65, 1965"));
  EXPECT_FALSE(parse_smi_line("yesterday, 0, 27, 7, 883, 192.65, 1965"));
}

TEST_F(SmiCsv, TimestampWithAndWithoutMilliseconds) {
  EXPECT_NEAR(*parse_smi_timestamp("2026/11/29 15:17:36"), 1795965456.0, 1e-9);
  EXPECT_NEAR(*parse_smi_timestamp(" 2026/01/01 00:00:00.5 "), 1767225600.5, 1e-9);
  EXPECT_FALSE(parse_smi_timestamp("2026/13/01 00:00:00"));
  EXPECT_FALSE(parse_smi_timestamp("2026/11/29 15:17:36."));
  EXPECT_FALSE(parse_smi_timestamp("2026-11-29 15:17:36"));
}

TEST_F(SmiCsv, NumberFields) {
  EXPECT_EQ(parse_smi_number(" 192.65 "), 192.65);
  EXPECT_EQ(parse_smi_number("0"), 0);
  EXPECT_FALSE(parse_smi_number("[N/A]"));
  EXPECT_FALSE(parse_smi_number("[Not Supported]"));
  EXPECT_FALSE(parse_smi_number(""));
  EXPECT_FALSE(parse_smi_number("1e3"));
  EXPECT_FALSE(parse_smi_number("12 W"));
}

TEST_F(SmiCsv, FixtureFileYieldsItsSamplesOnly) {
  std::stringstream in(testing::read_text("smi_lines.csv"));
  std::vector<GpuSample> samples;
  for (std::string line; std::getline(in, line);)
    if (auto s = parse_smi_line(line)) samples.push_back(*s);
  ASSERT_EQ(samples.size(), 5u);
  EXPECT_EQ(samples[2].gpu_index, 3);
  EXPECT_EQ(samples[2].util_gpu, 100);
  EXPECT_EQ(samples[2].mem_used_mib, 80917);
  EXPECT_NEAR(samples[4].t, 1795965456.0, 1e-9);
}

TEST(SmiArguments, AskForTheFieldsTheParserReads) {
  auto args = smi_arguments(250);
  ASSERT_EQ(args.size(), 4u);
  EXPECT_EQ(args[0],
            "--query-gpu=timestamp,index,utilization.gpu,utilization.memory,memory.used,"
            "power.draw,clocks.sm,pcie.link.gen.current");
  EXPECT_EQ(args[1], "--format=csv,noheader,nounits");
  EXPECT_EQ(args[2], "-lms");
  EXPECT_EQ(args[3], "250");
}

}  // namespace
}  // namespace nodus::telemetry
