// The job's cgroup: finding the cgroup2 mount and our own cgroup from /proc's text (pure), and,
// where this machine lets us make cgroups, that a job which leaves its session and empties its
// environment is still in its cgroup and dies with kill().

#include "backend/local/cgroup.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "backend/local/local_backend.h"
#include "local_test_util.h"

namespace nodus::backend::local {
namespace {

using namespace testing;  // NOLINT
using namespace std::chrono_literals;

TEST(CgroupMount, FindsTheCgroup2MountOnPureAndHybridHosts) {
  const std::string hybrid =
      "30 25 0:26 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755\n"
      "31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid,nodev - cgroup2 cgroup2 rw\n"
      "32 30 0:28 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n";
  EXPECT_EQ(cgroup2_mount(hybrid), "/sys/fs/cgroup/unified");
  const std::string pure =
      "35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 "
      "rw,nsdelegate\n";
  EXPECT_EQ(cgroup2_mount(pure), "/sys/fs/cgroup");
  EXPECT_EQ(cgroup2_mount("36 24 0:30 / /mnt/with\\040space rw - cgroup2 none rw\n"),
            "/mnt/with space");
  EXPECT_FALSE(cgroup2_mount("32 30 0:28 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"));
}

TEST(CgroupMount, ListsEveryCgroupHierarchyOfAHybridHost) {
  const std::string hybrid =
      "30 25 0:26 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755\n"
      "31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid,nodev - cgroup2 cgroup2 rw\n"
      "32 30 0:28 / /sys/fs/cgroup/cpu\\040x rw - cgroup cgroup rw,cpu\n";
  auto mounts = nodus::cgroup_mounts(hybrid);
  ASSERT_EQ(mounts.size(), 2u);
  EXPECT_EQ(mounts[0].type, "cgroup2");
  EXPECT_EQ(mounts[0].mount_point, "/sys/fs/cgroup/unified");
  EXPECT_EQ(mounts[1].type, "cgroup");
  EXPECT_EQ(mounts[1].mount_point, "/sys/fs/cgroup/cpu x");
}

TEST(CgroupMount, OwnCgroupIsTheUnifiedLine) {
  EXPECT_EQ(unified_path("4:memory:/x\n0::/user.slice/user-1000.slice/session-3.scope\n"),
            "/user.slice/user-1000.slice/session-3.scope");
  EXPECT_EQ(unified_path("0::/\n"), "/");
  EXPECT_FALSE(unified_path("4:memory:/x\n"));
  EXPECT_FALSE(unified_path("0::/gone (deleted)\n"));
}

TEST(JobCgroupLive, EscapedProcessesStayInTheCgroupAndDieWithKill) {
  std::string why;
  if (!cgroup_parent(&why)) GTEST_SKIP() << why;
  TempDir dir;
  const std::string pids = dir.file("pids");
  auto backend = make_local_backend();
  JobRecord job = shell_job("setsid env -i sh -c 'echo $$ >> " + pids +
                            "; exec sleep 600' & echo $$ >> " + pids + "; exec sleep 600");
  LaunchSpec spec;
  spec.attach = false;
  ASSERT_TRUE(backend->submit(job, spec).ok());
  ASSERT_NE(job.note.find("contained by cgroup "), std::string::npos) << job.note;
  const std::string path = job.note.substr(job.note.find("cgroup ") + 7);
  ASSERT_TRUE(eventually([&] { return read_pids(pids).size() == 2; }, 10s));
  const std::vector<pid_t> members = read_pids(pids);
  std::ifstream procs(path + "/cgroup.procs");
  std::vector<pid_t> in_cgroup;
  long p;
  while (procs >> p) in_cgroup.push_back(static_cast<pid_t>(p));
  for (pid_t m : members)
    EXPECT_NE(std::find(in_cgroup.begin(), in_cgroup.end(), m), in_cgroup.end()) << m;
  ASSERT_TRUE(backend->kill(job).ok());
  for (pid_t m : members) EXPECT_TRUE(gone(m)) << m;
  EXPECT_FALSE(std::filesystem::exists(path)) << "removed once empty";
  EXPECT_NE(job.note.find("cgroup cpu "), std::string::npos) << job.note;
}

}  // namespace
}  // namespace nodus::backend::local
