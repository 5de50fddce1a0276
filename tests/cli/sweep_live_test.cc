// The live view of a sweep on a real terminal (tmux): 40 cells in a 20-row pane stay one screen
// (the view folds finished cells instead of scrolling copies of itself into the scrollback).

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

#include "cli/fixtures.h"

namespace nodus::testing {
namespace {

std::string shell(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

TEST(SweepLive, FortyCellsInATwentyRowPaneKeepOneScreen) {
  if (system("command -v tmux >/dev/null 2>&1") != 0) GTEST_SKIP() << "tmux is not installed";
  NodusHome home;
  std::string sock = "nodus-test-" + std::to_string(getpid());
  std::string done = home.file("done");
  std::string cmd = "env -u CI -u NO_COLOR NODUS_HOME=" + home.path() + " " + NODUS_BIN +
                    " sweep --parallel 4 -p i=1..40 -- sleep 0.2 >/dev/null; touch " + done +
                    "; sleep 30";
  ASSERT_EQ(system(("tmux -L " + sock + " new-session -d -x 100 -y 20 '" + cmd + "'").c_str()), 0);
  double until = now_seconds() + 60;
  std::string mid;
  while (now_seconds() < until && access(done.c_str(), F_OK) != 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::string screen = shell("tmux -L " + sock + " capture-pane -p");
    if (screen.find("running") != std::string::npos && mid.empty()) mid = screen;
  }
  // Everything the pane ever showed: its scrollback and the screen.
  std::string all = shell("tmux -L " + sock + " capture-pane -p -S -10000");
  if (system(("tmux -L " + sock + " kill-server >/dev/null 2>&1").c_str()) != 0) {
  }
  ASSERT_EQ(access(done.c_str(), F_OK), 0) << "the sweep did not finish: " << all;
  EXPECT_EQ(count(all, "s1: 40 cells"), 1u) << all;
  EXPECT_NE(all.find("40 finished: 40 completed"), std::string::npos) << all;
  EXPECT_NE(all.find("elapsed"), std::string::npos) << all;
  if (!mid.empty()) {
    EXPECT_NE(mid.find("ETA"), std::string::npos) << mid;
    EXPECT_LE(count(mid, "\n"), 20u) << mid;
  }
}

}  // namespace
}  // namespace nodus::testing
