// The local GPU inventory: NODUS_LOCAL_GPUS, nvidia-smi output (fixtures), and no GPUs at all.

#include "backend/local/inventory.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "local_test_util.h"

namespace nodus::backend::local {
namespace {

using namespace testing;  // NOLINT

billing::Catalog test_catalog() {
  const std::string path = std::string(NODUS_TEST_DATA) + "/local/catalog.json";
  auto c = billing::Catalog::parse(read_text(path), path);
  if (!c.ok()) throw std::runtime_error(c.error().message);
  return *c;
}

// Sets an environment variable for one test and restores it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = ::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(DeclaredGpus, TypesAndCountsBecomeConsecutiveIndices) {
  auto inv = parse_declared_gpus("H100:4,L4:2", test_catalog());
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_EQ(inv->source, "NODUS_LOCAL_GPUS");
  ASSERT_EQ(inv->gpus.size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(inv->gpus[i].index, i);
  EXPECT_EQ(inv->gpus[0].type, "H100-SXM");  // the alias resolves to the canonical type
  EXPECT_EQ(inv->gpus[0].name, "H100");
  EXPECT_EQ(inv->gpus[3].type, "H100-SXM");
  EXPECT_EQ(inv->gpus[4].type, "L4");
  EXPECT_EQ(inv->gpus[5].type, "L4");
}

TEST(DeclaredGpus, ABareTypeCountsOneAndCaseDoesNotMatter) {
  auto inv = parse_declared_gpus(" h200 , l4:1 ", test_catalog());
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  ASSERT_EQ(inv->gpus.size(), 2u);
  EXPECT_EQ(inv->gpus[0].type, "H200");
  EXPECT_EQ(inv->gpus[1].type, "L4");
}

TEST(DeclaredGpus, NoneDeclaresNoGpus) {
  auto inv = parse_declared_gpus("none", test_catalog());
  ASSERT_TRUE(inv.ok());
  EXPECT_TRUE(inv->gpus.empty());
  EXPECT_EQ(inv->source, "NODUS_LOCAL_GPUS");
}

TEST(DeclaredGpus, UnknownTypeNamesTheValueAndTheKnownTypes) {
  auto inv = parse_declared_gpus("H100:4,Z9:2", test_catalog());
  ASSERT_FALSE(inv.ok());
  EXPECT_EQ(inv.error().message,
            "NODUS_LOCAL_GPUS='H100:4,Z9:2': unknown GPU type 'Z9'; known types: H100-SXM, H200, "
            "L4");
}

TEST(DeclaredGpus, BadCountNamesTheValue) {
  for (const char* bad : {"H100:x", "H100:0", "H100:-1", "H100,,L4", ":4"}) {
    auto inv = parse_declared_gpus(bad, test_catalog());
    ASSERT_FALSE(inv.ok()) << bad;
    EXPECT_EQ(inv.error().message.rfind(std::string("NODUS_LOCAL_GPUS='") + bad + "': ", 0), 0u)
        << inv.error().message;
    EXPECT_NE(inv.error().message.find("e.g. H100:4,L4:2"), std::string::npos);
  }
}

TEST(NvidiaSmiInventory, ParsesOneH200) {
  auto text = read_text(std::string(NODUS_TEST_DATA) + "/local/nvidia-smi-h200.txt");
  auto inv = parse_nvidia_smi_inventory(text, test_catalog());
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_EQ(inv->source, "nvidia-smi");
  ASSERT_EQ(inv->gpus.size(), 1u);
  EXPECT_EQ(inv->gpus[0].index, 0);
  EXPECT_EQ(inv->gpus[0].type, "H200");
  EXPECT_EQ(inv->gpus[0].name, "NVIDIA H200");
  EXPECT_EQ(inv->gpus[0].uuid, "GPU-5b2c4f7e-8a1d-4c3b-9e0f-1a2b3c4d5e6f");
  EXPECT_EQ(inv->note, "");
}

TEST(NvidiaSmiInventory, UnknownDeviceKeepsItsDriverNameAndIsNoted) {
  auto text = read_text(std::string(NODUS_TEST_DATA) + "/local/nvidia-smi-mixed.txt");
  auto inv = parse_nvidia_smi_inventory(text, test_catalog());
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  ASSERT_EQ(inv->gpus.size(), 4u);
  EXPECT_EQ(inv->gpus[0].type, "H100-SXM");
  EXPECT_EQ(inv->gpus[1].type, "H100-SXM");
  EXPECT_EQ(inv->gpus[2].type, "L4");
  // A comma inside the name: everything between index and uuid.
  EXPECT_EQ(inv->gpus[3].name, "NVIDIA Quadro, Special Edition");
  EXPECT_EQ(inv->gpus[3].type, "NVIDIA Quadro, Special Edition");
  EXPECT_EQ(inv->gpus[3].uuid, "GPU-3d3d3d3d-1111-2222-3333-444444444444");
  EXPECT_EQ(inv->note,
            "no catalog type matches 'NVIDIA Quadro, Special Edition' (GPU 3): its type is the "
            "driver's name");
}

TEST(NvidiaSmiInventory, MalformedLineIsAnErrorNamingIt) {
  auto inv = parse_nvidia_smi_inventory("0, NVIDIA H200, GPU-1, 143771\nNo devices were found\n",
                                        test_catalog());
  ASSERT_FALSE(inv.ok());
  EXPECT_EQ(inv.error().message,
            "nvidia-smi output line 2 'No devices were found': expected index, name, uuid, "
            "memory.total");
}

TEST(DetectInventory, DeclaredGpusWinOverNvidiaSmi) {
  ScopedEnv declared("NODUS_LOCAL_GPUS", "L4:2");
  ScopedEnv smi("NODUS_NVIDIA_SMI", "/nonexistent/nvidia-smi");
  auto inv = detect_local_inventory(test_catalog());
  ASSERT_TRUE(inv.ok());
  EXPECT_EQ(inv->source, "NODUS_LOCAL_GPUS");
  EXPECT_EQ(inv->gpus.size(), 2u);
}

TEST(DetectInventory, BadDeclarationIsAnError) {
  ScopedEnv declared("NODUS_LOCAL_GPUS", "Z9:1");
  EXPECT_FALSE(detect_local_inventory(test_catalog()).ok());
}

TEST(DetectInventory, RunsNvidiaSmiWithTheQueryAndParsesIt) {
  TempDir bin;
  const std::string fixture = std::string(NODUS_TEST_DATA) + "/local/nvidia-smi-mixed.txt";
  // The stand-in answers only the exact query the inventory needs.
  write_text(bin.file("nvidia-smi"),
             "#!/bin/sh\n"
             "[ \"$*\" = '--query-gpu=index,name,uuid,memory.total --format=csv,noheader,nounits'"
             " ] || { echo \"unexpected arguments: $*\" >&2; exit 2; }\n"
             "cat '" +
                 fixture + "'\n",
             true);
  ScopedEnv declared("NODUS_LOCAL_GPUS", "");
  ScopedEnv smi("NODUS_NVIDIA_SMI", bin.file("nvidia-smi"));
  auto inv = detect_local_inventory(test_catalog());
  ASSERT_TRUE(inv.ok());
  EXPECT_EQ(inv->source, "nvidia-smi") << inv->note;
  EXPECT_EQ(inv->gpus.size(), 4u);
}

TEST(DetectInventory, MissingNvidiaSmiGivesNoGpusAndSaysWhy) {
  ScopedEnv declared("NODUS_LOCAL_GPUS", "");
  ScopedEnv smi("NODUS_NVIDIA_SMI", "nodus-no-such-nvidia-smi");
  auto inv = detect_local_inventory(test_catalog());
  ASSERT_TRUE(inv.ok());
  EXPECT_EQ(inv->source, "none");
  EXPECT_TRUE(inv->gpus.empty());
  EXPECT_EQ(inv->note,
            "no GPUs found: command not found: 'nodus-no-such-nvidia-smi'; set NODUS_LOCAL_GPUS "
            "(e.g. H100:4,L4:2) to declare them");
}

TEST(DetectInventory, FailingNvidiaSmiGivesNoGpusWithItsMessage) {
  TempDir bin;
  write_text(bin.file("nvidia-smi"),
             "#!/bin/sh\necho 'NVIDIA-SMI has failed because it could not communicate with the "
             "NVIDIA driver.'\nexit 9\n",
             true);
  ScopedEnv declared("NODUS_LOCAL_GPUS", "");
  ScopedEnv smi("NODUS_NVIDIA_SMI", bin.file("nvidia-smi"));
  auto inv = detect_local_inventory(test_catalog());
  ASSERT_TRUE(inv.ok());
  EXPECT_EQ(inv->source, "none");
  EXPECT_NE(inv->note.find("failed with exit code 9 (NVIDIA-SMI has failed because it could "
                           "not communicate with the NVIDIA driver.)"),
            std::string::npos)
      << inv->note;
}

}  // namespace
}  // namespace nodus::backend::local
