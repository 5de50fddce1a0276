// Issue 28, case 3: a full disk never loses a job's record, its cap or its bill. NODUS_HOME is
// a 6 MiB tmpfs in a mount namespace of its own (root only, as CI runs; skipped otherwise),
// filled to the last byte while the job runs. The job goes on under its caps, the supervisor
// keeps its outcome in the file it reserved before the job started, `ps` still lists the store,
// and the first command that can write again records the job as it ended: its state, exit code
// and a bill for its whole run. Before, nodus exited 125 "database or disk is full" and the job
// was recorded "lost", billed 1 ms of its 1.6 s.

#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cli/fixtures.h"
#include "hostile/hostile_util.h"

namespace nodus::testing {
namespace {

// In a mount namespace: NODUS_HOME=$H/full/home on a small tmpfs; one job to create the store,
// then JOB (nodus run arguments) started in the background. Once its command has touched
// $H/started the disk is filled, then $H/filled is touched so the job goes on to its end.
// Leaves run.rc, run.err, ps.out, ps.err in $H; removes the filler before `show`.
RunResult on_full_disk(const NodusHome& home, const std::string& job) {
  const std::string script = R"(
set -u
mkdir -p "$H/full" && mount -t tmpfs -o size=6m tmpfs "$H/full" || exit 90
export NODUS_HOME="$H/full/home"
"$N" run -- true >/dev/null 2>&1 || exit 91
"$N" run )" + job + R"( > "$H/run.out" 2> "$H/run.err" &
pid=$!
until [ -e "$H/started" ]; do sleep 0.05; done
dd if=/dev/zero of="$H/full/fill" bs=16k 2>/dev/null
touch "$H/filled"
wait $pid; echo $? > "$H/run.rc"
"$N" ps -a --format json > "$H/ps.out" 2> "$H/ps.err"; echo $? >> "$H/ps.err"
rm "$H/full/fill"
"$N" show 2 --format json
)";
  return run_command(home, {"unshare", "-m", "sh", "-c", script},
                     {{"H", home.path()}, {"N", NODUS_BIN}, {"NODUS_LOCAL_GPUS", "H100:1"}});
}

// The job's command: marks that it started, waits for the disk to be full, then `tail`.
std::string job_waiting_for_the_fill(const NodusHome& home, const std::string& tail) {
  return "sh -c 'touch " + home.file("started") + "; until [ -e " + home.file("filled") +
         " ]; do sleep 0.05; done; " + tail + "'";
}

TEST(FullDisk, TheJobsOutcomeAndBillSurviveAFullStore) {
  if (!can_mount()) GTEST_SKIP() << "needs root and mount namespaces";
  NodusHome home;
  const double t0 = now_seconds();
  auto shown = on_full_disk(home, "--gpu H100 --prices " + write_test_prices(home) + " -- " +
                                      job_waiting_for_the_fill(home, "sleep 1.5; exit 3"));
  ASSERT_EQ(shown.code, 0) << shown.err << read_file(home.file("run.err"));
  EXPECT_EQ(read_file(home.file("run.rc")), "3\n") << "the job's own exit status\n"
                                                   << read_file(home.file("run.err"));
  EXPECT_NE(read_file(home.file("run.err")).find("outcome is kept in"), std::string::npos)
      << read_file(home.file("run.err"));
  // ps on the full disk: the store as last written, and a note that says so.
  auto ps = nlohmann::json::parse(read_file(home.file("ps.out")), nullptr, false);
  ASSERT_TRUE(ps.is_array()) << read_file(home.file("ps.err"));
  EXPECT_EQ(ps.size(), 2u);
  EXPECT_NE(read_file(home.file("ps.err")).find("showing it as last written"), std::string::npos)
      << read_file(home.file("ps.err"));

  auto job = nlohmann::json::parse(shown.out, nullptr, false);
  ASSERT_TRUE(job.is_object()) << shown.out << shown.err;
  EXPECT_EQ(job["state"], "failed") << job.dump();
  EXPECT_EQ(job["exit_code"], 3) << job.dump();
  const double wall = job["wall_s"].get<double>();
  EXPECT_GE(wall, 1.5) << job.dump();
  EXPECT_LE(wall, now_seconds() - t0) << job.dump();
  // H100 at the test catalog's $2.60 an hour, for the whole run.
  EXPECT_NEAR(job["cost_usd"].get<double>(), 2.6 * wall / 3600, 1e-6) << job.dump();
  EXPECT_NE(job["note"].get<std::string>().find("from its outcome file"), std::string::npos)
      << job.dump();
}

TEST(FullDisk, TheTimeoutStillStopsTheJob) {
  if (!can_mount()) GTEST_SKIP() << "needs root and mount namespaces";
  NodusHome home;
  auto shown = on_full_disk(
      home, "--timeout 3s --grace 1s -- " + job_waiting_for_the_fill(home, "sleep 601"));
  ASSERT_EQ(shown.code, 0) << shown.err << read_file(home.file("run.err"));
  EXPECT_EQ(read_file(home.file("run.rc")), "124\n") << read_file(home.file("run.err"));
  auto job = nlohmann::json::parse(shown.out, nullptr, false);
  ASSERT_TRUE(job.is_object()) << shown.out;
  EXPECT_EQ(job["state"], "timeout") << job.dump();
  EXPECT_EQ(job["exit_code"], 124) << job.dump();
  EXPECT_LT(job["wall_s"].get<double>(), 60) << job.dump();
  EXPECT_TRUE(survivors_after("sleep 601", std::chrono::seconds(5)).empty());
}

}  // namespace
}  // namespace nodus::testing
