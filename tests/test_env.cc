// Linked into every test executable. GPU claims are machine-wide (store/gpu_locks.h): every
// nodus on a machine shares one folder of lock files. Tests declare the same made-up GPUs
// (NODUS_LOCAL_GPUS=H100:2) in many processes at once, so each test gets a folder of its own,
// inherited by the nodus processes it starts, unless the test run sets NODUS_GPU_LOCKS itself.
// Per test, not per process: a test that ends holding a claim (its Store gone, the process not)
// must not make the next test of the same process wait. Tests of the sharing itself run their
// stores within one test.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace {

class OwnGpuLocks : public ::testing::EmptyTestEventListener {
 public:
  explicit OwnGpuLocks(std::string base) : base_(std::move(base)), pid_(::getpid()) {}
  ~OwnGpuLocks() override {
    if (::getpid() != pid_) return;  // a forked child exiting: the folder is the parent's
    std::error_code ec;
    std::filesystem::remove_all(base_, ec);
  }
  void OnTestStart(const ::testing::TestInfo&) override {
    const std::string dir = base_ + "/" + std::to_string(++tests_);
    ::setenv("NODUS_GPU_LOCKS", dir.c_str(), 1);
  }

 private:
  std::string base_;
  pid_t pid_;
  int tests_ = 0;
};

const bool registered = [] {
  if (const char* set = std::getenv("NODUS_GPU_LOCKS"); set && *set) return false;
  const std::string base = "/tmp/nodus-test-gpu-locks-" + std::to_string(::getpid());
  ::setenv("NODUS_GPU_LOCKS", base.c_str(), 1);  // for code that runs before the first test
  ::testing::UnitTest::GetInstance()->listeners().Append(new OwnGpuLocks(base));
  return true;
}();

}  // namespace
