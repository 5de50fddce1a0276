#include <gtest/gtest.h>

#include "billing/catalog.h"

namespace nodus::billing {
namespace {

std::string type_of(const PriceEntry* e) { return e ? e->type : "(none)"; }

TEST(CatalogFind, FindsTypesAndAliasesIgnoringCase) {
  Catalog c = Catalog::builtin();
  EXPECT_EQ(type_of(c.find("H100-SXM")), "H100-SXM");
  EXPECT_EQ(type_of(c.find("h100-sxm")), "H100-SXM");
  EXPECT_EQ(type_of(c.find("H100")), "H100-SXM");
  EXPECT_EQ(type_of(c.find("h100-80gb")), "H100-SXM");
  EXPECT_EQ(type_of(c.find("a100")), "A100-40GB");
  EXPECT_EQ(type_of(c.find("l40s")), "L40S");
  EXPECT_EQ(type_of(c.find("l4")), "L4");
  EXPECT_EQ(c.find("X100"), nullptr);
  EXPECT_EQ(c.find(""), nullptr);
}

TEST(CatalogLookup, UnknownTypeListsTheKnownTypesSorted) {
  Catalog c = Catalog::builtin();
  auto r = c.lookup("X100");
  ASSERT_FALSE(r.ok());
  const std::string& msg = r.error().message;
  EXPECT_EQ(msg.rfind("--gpu: unknown GPU type 'X100'; did you mean H100 (H100-SXM)?; known "
                      "types: A100-40GB, A100-80GB, A10G, ",
                      0),
            0u)
      << msg;
  auto far = c.lookup("quantum");
  ASSERT_FALSE(far.ok());
  EXPECT_EQ(
      far.error().message.rfind("--gpu: unknown GPU type 'quantum'; known types: A100-40GB", 0), 0u)
      << far.error().message;
  for (const auto& e : c.entries()) EXPECT_NE(msg.find(e.type), std::string::npos) << e.type;
  EXPECT_EQ(c.lookup("t4").value()->type, "T4");
}

TEST(CatalogDeviceName, MapsNvidiaSmiNamesToTypes) {
  Catalog c = Catalog::builtin();
  EXPECT_EQ(type_of(c.match_device_name("NVIDIA H100 80GB HBM3")), "H100-SXM");
  EXPECT_EQ(type_of(c.match_device_name("NVIDIA H100 PCIe")), "H100-PCIe");
  EXPECT_EQ(type_of(c.match_device_name("NVIDIA H100 NVL")), "H100-NVL");
  EXPECT_EQ(type_of(c.match_device_name("NVIDIA H200")), "H200");
  EXPECT_EQ(type_of(c.match_device_name("NVIDIA H200 NVL")), "H200");
  EXPECT_EQ(type_of(c.match_device_name("NVIDIA GH200 480GB")), "GH200");
  EXPECT_EQ(type_of(c.match_device_name("NVIDIA B200")), "B200");
  EXPECT_EQ(type_of(c.match_device_name("NVIDIA A100-SXM4-80GB")), "A100-80GB");
  EXPECT_EQ(type_of(c.match_device_name("NVIDIA A100 80GB PCIe")), "A100-80GB");
  EXPECT_EQ(type_of(c.match_device_name("NVIDIA A100-SXM4-40GB")), "A100-40GB");
  EXPECT_EQ(type_of(c.match_device_name("NVIDIA A100-PCIE-40GB")), "A100-40GB");
  EXPECT_EQ(type_of(c.match_device_name("Tesla T4")), "T4");
  EXPECT_EQ(type_of(c.match_device_name("Tesla V100-SXM2-16GB")), "V100");
  EXPECT_EQ(type_of(c.match_device_name("NVIDIA A10G")), "A10G");
  EXPECT_EQ(type_of(c.match_device_name("NVIDIA RTX A6000")), "A6000");
  EXPECT_EQ(type_of(c.match_device_name("NVIDIA GeForce RTX 4090")), "RTX4090");
}

TEST(CatalogDeviceName, L4IsNotL40SAndL40SIsNotL4) {
  Catalog c = Catalog::builtin();
  EXPECT_EQ(type_of(c.match_device_name("NVIDIA L4")), "L4");
  EXPECT_EQ(type_of(c.match_device_name("NVIDIA L40S")), "L40S");
  // The L40 has no row: it must not be billed as an L4.
  EXPECT_EQ(c.match_device_name("NVIDIA L40"), nullptr);
}

TEST(CatalogDeviceName, MatchesIgnoringCaseAndUnknownNamesMatchNothing) {
  Catalog c = Catalog::builtin();
  EXPECT_EQ(type_of(c.match_device_name("nvidia h100 80gb hbm3")), "H100-SXM");
  EXPECT_EQ(c.match_device_name("AMD Instinct MI300X"), nullptr);
  EXPECT_EQ(c.match_device_name(""), nullptr);
}

TEST(CatalogDeviceName, LongestMatchingPatternWins) {
  auto c = Catalog::parse(R"({"gpus": [
      {"type": "GENERIC", "usd_per_gpu_hour": 1, "device_names": ["Card"]},
      {"type": "BIG", "usd_per_gpu_hour": 2, "device_names": ["Card 80GB"]}]})",
                          "test");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(type_of(c->match_device_name("Vendor Card 80GB")), "BIG");
  EXPECT_EQ(type_of(c->match_device_name("Vendor Card 40GB")), "GENERIC");
}

}  // namespace
}  // namespace nodus::billing
