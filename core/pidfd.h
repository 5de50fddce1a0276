#pragma once
// pidfd_open(2) through syscall(2): a descriptor that polls readable once the process has
// exited, and that cannot be confused with a later process given the same pid.

#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

namespace nodus {

// -1 with errno set when the process is gone or the kernel lacks pidfd_open (before 5.3).
inline int pidfd_open(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

}  // namespace nodus
