// On a machine with an NVIDIA GPU (skipped elsewhere): the inventory from the real nvidia-smi,
// and a CUDA process left behind by a job's main process, found through the real /dev/nvidia*.

#include <gtest/gtest.h>
#include <unistd.h>

#include "backend/local/gpu_holders.h"
#include "backend/local/inventory.h"
#include "backend/local/launch.h"
#include "backend/local/local_backend.h"
#include "backend/local/run_capture.h"
#include "local_test_util.h"

namespace nodus::backend::local {
namespace {

using namespace testing;  // NOLINT
using namespace std::chrono_literals;

TEST(GpuMachine, InventoryComesFromNvidiaSmi) {
  if (!resolve_executable("nvidia-smi", env_value(merged_environment({}), "PATH"), "").ok())
    GTEST_SKIP() << "no nvidia-smi here";
  if (const char* declared = ::getenv("NODUS_LOCAL_GPUS"); declared && *declared)
    GTEST_SKIP() << "NODUS_LOCAL_GPUS is set";
  auto inv = detect_local_inventory(billing::Catalog::builtin());
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_EQ(inv->source, "nvidia-smi") << inv->note;
  ASSERT_FALSE(inv->gpus.empty()) << inv->note;
  for (const auto& gpu : inv->gpus) {
    std::cout << "[ inventory] " << gpu.index << " " << gpu.type << " '" << gpu.name << "' "
              << gpu.uuid << "\n";
    EXPECT_FALSE(gpu.type.empty());
    EXPECT_EQ(gpu.uuid.rfind("GPU-", 0), 0u) << gpu.uuid;
  }
  if (!inv->note.empty()) std::cout << "[ inventory] note: " << inv->note << "\n";
}

TEST(GpuMachine, ACudaWorkerLeftBehindIsFoundAndKilled) {
  if (::access("/dev/nvidiactl", F_OK) != 0) GTEST_SKIP() << "no /dev/nvidiactl here";
  auto torch = run_capture(
      {"python3", "-c", "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"},
      merged_environment({}), 300s);
  if (!torch.ok() || torch->exit_code != 0) GTEST_SKIP() << "no python3 with CUDA torch here";

  TempDir dir;
  // Like a DataLoader worker: a forked child initializes CUDA; the main process exits.
  const std::string script = R"(
import multiprocessing as mp, os, sys, time
def worker(path):
    import torch
    torch.zeros(1, device="cuda")
    with open(path + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(path + ".tmp", path)
    time.sleep(1000)
if __name__ == "__main__":
    mp.set_start_method("fork")
    mp.Process(target=worker, args=(sys.argv[1],)).start()
    while not os.path.exists(sys.argv[1]):
        time.sleep(0.05)
    os._exit(0)
)";
  auto backend = make_local_backend();
  JobRecord job;
  job.argv = {"python3", "-c", script, dir.file("worker")};
  job.gpu_count = 1;
  job.gpu_indices = {0};
  LaunchSpec spec;
  spec.attach = false;
  ASSERT_TRUE(backend->submit(job, spec).ok());
  EXPECT_EQ(wait_exit(*backend, job, 300s).outcome.exit_code, 0);
  const pid_t worker = read_pids(dir.file("worker")).at(0);
  ASSERT_FALSE(gone(worker));

  ASSERT_TRUE(backend->kill(job).ok());
  std::cout << "[ holders  ] " << job.note << "\n";
  EXPECT_NE(job.note.find("; killed 1 leftover process holding /dev/nvidia*: " +
                          std::to_string(worker) + " (python3)"),
            std::string::npos)
      << job.note;
  EXPECT_TRUE(gone(worker));
}

}  // namespace
}  // namespace nodus::backend::local
