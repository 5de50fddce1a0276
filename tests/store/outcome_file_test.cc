// The outcome file (store/outcome_file.h): reserved before the job starts, written in place
// without needing free space, and read back only for the job it was written for.

#include "store/outcome_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "temp_dir.h"

namespace nodus::store {
namespace {

TEST(OutcomeFile, ReservedWrittenInPlaceAndReadBackForItsJobOnly) {
  testing::TempDir dir;
  const std::string log = dir.file("7.log");
  int fd = reserve_outcome_file(log);
  ASSERT_GE(fd, 0);
  struct stat st {};
  ASSERT_EQ(fstat(fd, &st), 0);
  EXPECT_EQ(st.st_size, 4096) << "allocated before the job starts";
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_FALSE(read_outcome_file(log, 7)) << "nothing written yet";

  JobRecord job;
  job.id = 7;
  job.state = JobState::kTimeout;
  job.exit_code = 124;
  job.ended_at = 1'800'000'000.5;
  job.note = std::string(10'000, 'n');  // longer than the file: its tail is kept
  ASSERT_TRUE(write_outcome_file(fd, job));
  ASSERT_EQ(fstat(fd, &st), 0);
  EXPECT_EQ(st.st_size, 4096) << "written in place, never grown";
  close(fd);

  auto kept = read_outcome_file(log, 7);
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->state, JobState::kTimeout);
  EXPECT_EQ(kept->exit_code, 124);
  EXPECT_DOUBLE_EQ(kept->ended_at, 1'800'000'000.5);
  EXPECT_EQ(kept->note, std::string(2048, 'n'));
  EXPECT_FALSE(read_outcome_file(log, 8)) << "another job's file is not this job's outcome";
  // A link planted at its name is never written through.
  unlink(outcome_path(log).c_str());
  std::ofstream(dir.file("target")) << "keep";
  ASSERT_EQ(symlink(dir.file("target").c_str(), outcome_path(log).c_str()), 0);
  EXPECT_EQ(reserve_outcome_file(log), -1);
  std::string target;
  std::getline(std::ifstream(dir.file("target")), target);
  EXPECT_EQ(target, "keep");
}

TEST(OutcomeFile, WhatIsNotAFinalOutcomeIsIgnored) {
  testing::TempDir dir;
  const std::string log = dir.file("1.log");
  for (std::string text :
       {R"({"job":1,"state":"running","ended_at":1})", R"({"job":1,"state":"banana","ended_at":1})",
        R"({"job":1,"state":"failed"})", "[[[[[[[[", "",
        R"({"job":"1","state":"failed","ended_at":1})"}) {
    std::ofstream(outcome_path(log), std::ios::trunc) << text;
    EXPECT_FALSE(read_outcome_file(log, 1)) << text;
  }
  unlink(outcome_path(log).c_str());
  symlink("/etc/passwd", outcome_path(log).c_str());
  EXPECT_FALSE(read_outcome_file(log, 1));
}

}  // namespace
}  // namespace nodus::store
