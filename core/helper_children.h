#pragma once
// Processes nodus starts for itself (an nvidia-smi sampler, say) beside a job. The local
// backend's tree kill sweeps up orphans reparented to the supervisor; it must leave these alone.

#include <sys/types.h>

namespace nodus {

void register_helper_child(pid_t pid);
void unregister_helper_child(pid_t pid);
bool is_helper_child(pid_t pid);

}  // namespace nodus
