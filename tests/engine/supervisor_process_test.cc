// The protocol between `nodus run --detach` / a sweep and the supervisor process it starts: the
// ticket on stdin and the one status line back.

#include "engine/supervisor_process.h"

#include <gtest/gtest.h>

namespace nodus::engine {
namespace {

using Kind = LaunchStatus::Kind;

TEST(StatusLine, EveryKindSurvivesTheRoundTrip) {
  for (const LaunchStatus& s :
       {LaunchStatus{Kind::kRunning, 0, ""}, LaunchStatus{Kind::kWaiting, 0, ""},
        LaunchStatus{Kind::kError, 126, "cannot run: ./x is a folder"}}) {
    LaunchStatus back = parse_status_line(status_line(s));
    EXPECT_EQ(back.kind, s.kind) << status_line(s);
    EXPECT_EQ(back.code, s.code);
    EXPECT_EQ(back.message, s.message);
  }
  EXPECT_EQ(status_line({Kind::kRunning, 0, ""}), "running");
  EXPECT_EQ(status_line({Kind::kError, 124, "m"}), "error 124 m");
}

TEST(StatusLine, ErrorWithoutACodeIsANodusError) {
  EXPECT_EQ(status_line({Kind::kError, 0, "boom"}), "error 125 boom");
  LaunchStatus s = parse_status_line("error boom");
  EXPECT_EQ(s.kind, Kind::kError);
  EXPECT_EQ(s.code, 125);
  EXPECT_EQ(s.message, "boom");
}

TEST(StatusLine, EmptyMeansTheSupervisorExitedFirst) {
  EXPECT_EQ(parse_status_line("").kind, Kind::kNone);
  EXPECT_EQ(status_line({}), "");
}

TEST(StatusLine, AnUnknownWordIsNotTakenForAStart) {
  LaunchStatus s = parse_status_line("launched");
  EXPECT_EQ(s.kind, Kind::kError);
  EXPECT_EQ(s.code, 125);
  EXPECT_NE(s.message.find("launched"), std::string::npos);
}

// The argv crosses as hex: invalid UTF-8 and NUL-free bytes arrive exactly.
TEST(Ticket, ArgvBytesSurviveTheRoundTrip) {
  Ticket t;
  t.job_id = 3;
  t.argv = {"sh", std::string("A\xff") + "B", "--password=p\x01", ""};
  EXPECT_EQ(Ticket::from_json(t.to_json()).argv, t.argv);
}

TEST(Ticket, JsonRoundTripKeepsEverything) {
  Ticket t;
  t.job_id = 42;
  t.env = {{"HF_TOKEN", "secret"}, {"A", "b c"}};
  t.no_wait = true;
  t.sweep_cell = true;
  t.parent_pid = 777;
  t.inventory.source = "NODUS_LOCAL_GPUS";
  t.inventory.gpus = {{0, "H100", "NVIDIA H100", "GPU-1"}, {1, "H100", "NVIDIA H100", "GPU-2"}};
  Ticket back = Ticket::from_json(t.to_json());
  EXPECT_EQ(back.job_id, 42);
  EXPECT_EQ(back.env, t.env);
  EXPECT_TRUE(back.no_wait);
  EXPECT_TRUE(back.sweep_cell);
  EXPECT_EQ(back.parent_pid, 777);
  EXPECT_EQ(back.inventory.source, "NODUS_LOCAL_GPUS");
  ASSERT_EQ(back.inventory.gpus.size(), 2u);
  EXPECT_EQ(back.inventory.gpus[1].index, 1);
  EXPECT_EQ(back.inventory.gpus[1].uuid, "GPU-2");
}

}  // namespace
}  // namespace nodus::engine
