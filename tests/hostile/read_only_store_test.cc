// Issue 28, case 6: a store that cannot be written can still be read. The store's folder is
// made read-only by a read-only bind mount in a mount namespace of its own (root only, as CI
// runs; skipped otherwise): `ps`, `show`, `cost`, `sweeps` and `logs` print what it holds and say
// on stderr that it is read-only, and `run` refuses with one line and exit 125. Before, every
// command failed with "cannot open store".

#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cli/fixtures.h"
#include "hostile/hostile_util.h"

namespace nodus::testing {
namespace {

// Runs `script` (sh) with $H the home and $N the nodus binary, inside a mount namespace where
// $H is mounted read-only; the namespace ends with the shell.
RunResult read_only(const NodusHome& home, const std::string& script) {
  std::string wrapped =
      "mount --bind \"$H\" \"$H\" && mount -o remount,bind,ro \"$H\" && " + script;
  return run_command(home, {"unshare", "-m", "sh", "-c", wrapped},
                     {{"H", home.path()}, {"N", NODUS_BIN}});
}

TEST(ReadOnlyStore, ListingsShowWhatItHoldsAndRunRefuses) {
  if (!can_mount()) GTEST_SKIP() << "needs root and mount namespaces";
  NodusHome home;
  ASSERT_EQ(home.run({"run", "--name", "before", "--", "sh", "-c", "echo hello; exit 3"}).code, 3);

  auto ps = read_only(home, "\"$N\" ps -a --format json");
  ASSERT_EQ(ps.code, 0) << ps.err;
  auto jobs = nlohmann::json::parse(ps.out, nullptr, false);
  ASSERT_TRUE(jobs.is_array()) << ps.out;
  ASSERT_EQ(jobs.size(), 1u) << ps.out;
  EXPECT_EQ(jobs[0]["name"], "before");
  EXPECT_EQ(jobs[0]["exit_code"], 3);
  EXPECT_NE(ps.err.find("read-only"), std::string::npos) << ps.err;

  auto show = read_only(home, "\"$N\" show before --format json");
  ASSERT_EQ(show.code, 0) << show.err;
  EXPECT_EQ(nlohmann::json::parse(show.out, nullptr, false).value("state", ""), "failed")
      << show.out;
  auto logs = read_only(home, "\"$N\" logs before");
  EXPECT_EQ(logs.code, 0) << logs.err;
  EXPECT_EQ(logs.out, "hello\n");
  EXPECT_EQ(read_only(home, "\"$N\" cost --format json").code, 0);
  EXPECT_EQ(read_only(home, "\"$N\" sweeps --format json").code, 0);

  auto run = read_only(home, "\"$N\" run -- true");
  EXPECT_EQ(run.code, 125) << run.err;
  EXPECT_NE(run.err.find("store"), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << "one line: " << run.err;
  // Writable again: the store is whole and takes the next job.
  EXPECT_EQ(home.run({"run", "--", "true"}).code, 0);
  EXPECT_EQ(nlohmann::json::parse(home.run({"ps", "-a", "--format", "json"}).out).size(), 2u);
}

}  // namespace
}  // namespace nodus::testing
