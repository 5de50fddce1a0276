#pragma once
// After a job ends, processes of its tree may still hold the GPU: PyTorch DataLoader workers
// outlive a main process that was stopped, and their CUDA context keeps GPU memory the next job
// then cannot get (pytorch#5736). This check finds the members of the job's tree
// (process_tree.h) that hold a device file open, kills them, and says so in one line.

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "core/proc.h"

namespace nodus::backend::local {

inline constexpr const char* kNvidiaDevicePrefix = "/dev/nvidia";

struct DeviceHolder {
  pid_t pid = 0;
  std::string comm;
};

// The processes among `procs` that have a descriptor open on a path starting with prefix.
std::vector<DeviceHolder> find_device_holders(const std::vector<ProcStat>& procs,
                                              const std::string& device_prefix);

// Kills (SIGKILL) the members of main_pid's tree holding device_prefix*, waits up to `wait`
// for them to exit and reaps those that are this process's children. Returns e.g.
// "no process of the job holds /dev/nvidia*" or "killed 2 leftover processes holding
// /dev/nvidia*: 1234 (python3), 1240 (pt_data_worker)".
std::string kill_gpu_holders(pid_t main_pid, const std::string& device_prefix = kNvidiaDevicePrefix,
                             std::chrono::milliseconds wait = std::chrono::seconds(10));

}  // namespace nodus::backend::local
