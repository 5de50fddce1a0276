// CPU sets per job end to end (backend/local/cpuset.h): cells run side by side on declared GPUs
// get disjoint CPUs, see them in NODUS_CPUS and in OMP_NUM_THREADS, and the user's own
// OMP_NUM_THREADS, NODUS_CPUSETS=off and CPU-only jobs are left alone.

#include <gtest/gtest.h>
#include <sched.h>

#include <set>
#include <sstream>

#include "cli/fixtures.h"

namespace nodus::testing {
namespace {

int own_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof set, &set);
  return CPU_COUNT(&set);
}

// A job that writes "A=<Cpus_allowed_list> C=<NODUS_CPUS> O=<OMP_NUM_THREADS>" (read by the
// job's own shell, so what the kernel enforces) to <file>.<arg>, then sleeps so cells overlap.
// No braces: a sweep would take them for placeholders.
std::vector<std::string> report_job(const std::string& file, const std::string& arg,
                                    const std::string& sleep = "1") {
  return {"sh", "-c",
          "echo \"A=$(grep Cpus_allowed_list: /proc/$$/status | cut -f2) C=$NODUS_CPUS "
          "O=$OMP_NUM_THREADS\" > " +
              file + ".$1; sleep " + sleep,
          "sh", arg};
}

struct Seen {
  std::string allowed, nodus_cpus, omp;  // "-" when unset
};

Seen read_seen(const std::string& path) {
  std::istringstream in(read_file(path));
  Seen s{"-", "-", "-"};
  std::string token;
  while (in >> token) {
    const std::string value = token.size() > 2 ? token.substr(2) : "-";
    if (token.rfind("A=", 0) == 0) s.allowed = value;
    if (token.rfind("C=", 0) == 0) s.nodus_cpus = value;
    if (token.rfind("O=", 0) == 0) s.omp = value;
  }
  return s;
}

TEST(CpuSets, CellsSideBySideGetDisjointCpusAndSeeThem) {
  if (own_cpus() < 2) GTEST_SKIP() << "needs 2 CPUs";
  NodusHome home;
  const std::string out = home.file("seen");
  std::vector<std::string> args = {"sweep", "--gpu", "H100", "--param", "i=0,1", "--"};
  for (const auto& a : report_job(out, "{i}")) args.push_back(a);
  auto r = home.run(args, {{"NODUS_LOCAL_GPUS", "H100:2"}});
  ASSERT_EQ(r.code, 0) << r.err;
  Seen a = read_seen(out + ".0"), b = read_seen(out + ".1");
  ASSERT_NE(a.allowed, "-");
  EXPECT_EQ(a.allowed, a.nodus_cpus);
  EXPECT_EQ(b.allowed, b.nodus_cpus);
  EXPECT_NE(a.allowed, b.allowed);
  // Each has half the CPUs (the even split of declared GPUs), and OMP_NUM_THREADS says so.
  EXPECT_EQ(std::stoi(a.omp), own_cpus() / 2);
  EXPECT_EQ(std::stoi(b.omp), own_cpus() / 2);
  auto shown = show_json(home, "1");
  EXPECT_NE(shown.dump().find("CPUs "), std::string::npos) << shown.dump();
}

TEST(CpuSets, TheUsersThreadCountStaysAndOffTurnsThemOff) {
  if (own_cpus() < 2) GTEST_SKIP() << "needs 2 CPUs";
  NodusHome home;
  const std::string out = home.file("seen");
  std::vector<std::string> args = {"run", "--gpu", "H100", "-e", "OMP_NUM_THREADS=7", "--"};
  for (const auto& a : report_job(out, "user", "0")) args.push_back(a);
  auto r = home.run(args, {{"NODUS_LOCAL_GPUS", "H100:2"}});
  ASSERT_EQ(r.code, 0) << r.err;
  Seen user = read_seen(out + ".user");
  EXPECT_EQ(user.omp, "7");
  EXPECT_NE(user.nodus_cpus, "-");

  args = {"run", "--gpu", "H100", "--"};
  for (const auto& a : report_job(out, "off", "0")) args.push_back(a);
  r = home.run(args, {{"NODUS_LOCAL_GPUS", "H100:2"}, {"NODUS_CPUSETS", "off"}});
  ASSERT_EQ(r.code, 0) << r.err;
  Seen off = read_seen(out + ".off");
  EXPECT_EQ(off.nodus_cpus, "-");
  EXPECT_EQ(off.omp, "-");

  args = {"run", "--"};  // CPU-only: every core, as before
  for (const auto& a : report_job(out, "cpu", "0")) args.push_back(a);
  r = home.run(args);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_seen(out + ".cpu").nodus_cpus, "-");
}

TEST(CpuSets, CpusPerGpuAboveTheShareIsRefusedAndNothingRuns) {
  NodusHome home;
  const std::string marker = home.file("ran");
  auto r = home.run({"run", "--gpu", "H100", "--cpus-per-gpu", "4096", "--", "touch", marker},
                    {{"NODUS_LOCAL_GPUS", "H100:2"}});
  EXPECT_EQ(r.code, 125);
  EXPECT_NE(r.err.find("--cpus-per-gpu 4096"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("allowed: 1-"), std::string::npos) << r.err;
  EXPECT_TRUE(read_file(marker).empty());
  auto bad = home.run({"run", "--gpu", "H100", "--cpus-per-gpu", "0", "--", "true"},
                      {{"NODUS_LOCAL_GPUS", "H100:2"}});
  EXPECT_EQ(bad.code, 125) << bad.err;
  EXPECT_NE(bad.err.find("--cpus-per-gpu"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace nodus::testing
