// The one process-tree rule (core/proc.h tree_members), which killing a local job's tree and
// measuring it both use, on synthetic process lists.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/proc.h"

namespace nodus {
namespace {

ProcStat proc(pid_t pid, pid_t ppid, pid_t pgrp, pid_t session) {
  return ProcStat{pid, "p" + std::to_string(pid), 'S', ppid, pgrp, session};
}

std::vector<pid_t> members(const std::vector<ProcStat>& procs, const TreeSeeds& seeds) {
  auto flags = tree_members(procs, seeds);
  std::vector<pid_t> out;
  for (size_t i = 0; i < procs.size(); ++i)
    if (flags[i]) out.push_back(procs[i].pid);
  std::sort(out.begin(), out.end());
  return out;
}

TEST(TreeMembers, RootsGroupSessionAndEveryDescendantListedInAnyOrder) {
  std::vector<ProcStat> procs = {
      proc(203, 202, 203, 203),  // listed before its parent: a great-grandchild in a new session
      proc(200, 100, 200, 200),  // the root
      proc(201, 200, 200, 200),
      proc(202, 201, 202, 202),  // left the group and session (setsid): still a descendant
      proc(210, 1, 200, 200),    // reparented to init, still in the session
      proc(211, 210, 211, 211),  // its child, in a session of its own
      proc(300, 1, 300, 300),    // unrelated
  };
  EXPECT_EQ(members(procs, {{200}, 200, 200, 0}),
            (std::vector<pid_t>{200, 201, 202, 203, 210, 211}));
  // Without the session and group, only the root's descendants.
  EXPECT_EQ(members(procs, {{200}, 0, 0, 0}), (std::vector<pid_t>{200, 201, 202, 203}));
}

TEST(TreeMembers, WithoutARootASessionsMembersAndTheirDescendants) {
  // The root's pid was reaped and reused by a process of another session.
  std::vector<ProcStat> procs = {
      proc(200, 1, 900, 900),    // not the tree's any more
      proc(201, 200, 900, 900),  // nor its child
      proc(210, 1, 200, 200),    // in the tree's session
      proc(211, 210, 211, 211),  // its child, in a session of its own
  };
  EXPECT_EQ(members(procs, {{}, 200, 200, 0}), (std::vector<pid_t>{210, 211}));
}

TEST(TreeMembers, TheCallerIsNeverAMemberNorAWayIn) {
  std::vector<ProcStat> procs = {
      proc(100, 1, 200, 200),    // the caller, in the tree's session for the sake of the test
      proc(101, 100, 101, 101),  // the caller's own child
      proc(200, 100, 200, 200),
  };
  EXPECT_EQ(members(procs, {{200}, 200, 200, 100}), (std::vector<pid_t>{200}));
  EXPECT_EQ(members(procs, {{200}, 200, 200, 0}), (std::vector<pid_t>{100, 101, 200}));
}

}  // namespace
}  // namespace nodus
