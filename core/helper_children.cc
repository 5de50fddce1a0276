#include "core/helper_children.h"

#include <algorithm>
#include <mutex>
#include <vector>

namespace nodus {
namespace {
std::mutex mu;
std::vector<pid_t>& helpers() {
  static std::vector<pid_t> pids;
  return pids;
}
}  // namespace

void register_helper_child(pid_t pid) {
  std::lock_guard lock(mu);
  helpers().push_back(pid);
}

void unregister_helper_child(pid_t pid) {
  std::lock_guard lock(mu);
  auto& v = helpers();
  v.erase(std::remove(v.begin(), v.end(), pid), v.end());
}

bool is_helper_child(pid_t pid) {
  std::lock_guard lock(mu);
  const auto& v = helpers();
  return std::find(v.begin(), v.end(), pid) != v.end();
}

}  // namespace nodus
