#pragma once
// What the measure suite's PyTorch tests share: the interpreter with Debian's torch, the
// fixtures' folder (tests/data/pytorch/, scripts that know nothing of nodus), a loud skip where
// torch is missing, and a stand-in GPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

#include "cli/fixtures.h"
#include "cli/nodus_process.h"

namespace nodus::testing {

inline const std::string kPython = "/usr/bin/python3";
inline const std::string kData = std::string(NODUS_TEST_DATA) + "/pytorch/";

inline bool torch_available() {
  static int ok = -1;
  if (ok < 0) ok = std::system((kPython + " -c 'import torch' >/dev/null 2>&1").c_str()) == 0;
  return ok == 1;
}

#define REQUIRE_TORCH()                                                                   \
  if (!::nodus::testing::torch_available())                                               \
  GTEST_SKIP() << "SKIPPED LOUDLY: " << ::nodus::testing::kPython                         \
               << " cannot import torch; install python3-torch (scripts/install-deps.sh " \
                  "test) to run the PyTorch measurement tests"

// A TEST GPU ($900 an hour) whose utilization a stand-in nvidia-smi reports as `util`.
inline std::map<std::string, std::string> gpu_env(const NodusHome& home, int util) {
  return {{"NODUS_LOCAL_GPUS", "TEST:1"},
          {"NODUS_PRICES", write_test_prices(home)},
          {"NODUS_NVIDIA_SMI", kData + "nvidia-smi-standin.sh"},
          {"STANDIN_UTIL", std::to_string(util)}};
}

}  // namespace nodus::testing
