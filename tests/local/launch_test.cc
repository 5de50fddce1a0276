// Starting jobs: exit code and signal, 127/126 with their messages, workdir and environment.

#include "backend/local/launch.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include "backend/local/local_backend.h"
#include "local_test_util.h"

namespace nodus::backend::local {
namespace {

using namespace testing;  // NOLINT
using namespace std::chrono_literals;

TEST(LocalLaunch, ExitCodeIsRecordedWithoutASignal) {
  auto backend = make_local_backend();
  JobRecord job = shell_job("exit 3");
  ASSERT_TRUE(backend->submit(job, {}).ok());
  Event e = wait_exit(*backend, job, 30s);
  EXPECT_EQ(e.outcome.exit_code, 3);
  EXPECT_FALSE(e.outcome.signal.has_value());
  EXPECT_GE(e.outcome.ended_at, e.outcome.started_at);
}

TEST(LocalLaunch, TerminatingSignalIsRecordedSeparately) {
  auto backend = make_local_backend();
  JobRecord job = shell_job("kill -USR1 $$");
  ASSERT_TRUE(backend->submit(job, {}).ok());
  Event e = wait_exit(*backend, job, 30s);
  ASSERT_TRUE(e.outcome.signal.has_value());
  EXPECT_EQ(*e.outcome.signal, SIGUSR1);
  EXPECT_EQ(e.outcome.exit_code, 128 + SIGUSR1);
}

TEST(LocalLaunch, SubmitSetsPidAndStartTime) {
  auto backend = make_local_backend();
  JobRecord job = shell_job("exit 0");
  const double before = unix_now();
  ASSERT_TRUE(backend->submit(job, {}).ok());
  ASSERT_TRUE(job.started_at.has_value());
  EXPECT_GE(*job.started_at, before);
  EXPECT_LE(*job.started_at, unix_now());
  EXPECT_GT(std::stol(job.backend_id), 1);
  Event e = wait_exit(*backend, job, 30s);
  EXPECT_DOUBLE_EQ(e.outcome.started_at, *job.started_at);
  EXPECT_EQ(e.outcome.exit_code, 0);
}

TEST(LocalLaunch, UnknownCommandIs127) {
  auto backend = make_local_backend();
  JobRecord job;
  job.argv = {"nodus-no-such-command-xyz", "arg"};
  auto r = backend->submit(job, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().exit_code, 127);
  EXPECT_EQ(r.error().message, "command not found: 'nodus-no-such-command-xyz'");
  EXPECT_TRUE(job.backend_id.empty());
}

TEST(LocalLaunch, NonExecutableFileIs126) {
  TempDir dir;
  write_text(dir.file("script"), "#!/bin/sh\nexit 0\n");
  ::chmod(dir.file("script").c_str(), 0644);
  auto backend = make_local_backend();
  JobRecord job;
  job.argv = {dir.file("script")};
  auto r = backend->submit(job, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().exit_code, 126);
  EXPECT_EQ(r.error().message, "cannot run '" + dir.file("script") + "': permission denied");
}

TEST(LocalLaunch, DirectoryIs126) {
  TempDir dir;
  auto backend = make_local_backend();
  JobRecord job;
  job.argv = {dir.path()};
  auto r = backend->submit(job, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().exit_code, 126);
  EXPECT_NE(r.error().message.find("is a directory"), std::string::npos) << r.error().message;
}

TEST(LocalLaunch, ExecFormatErrorFromTheChildIs126) {
  // Executable bit set, but neither ELF nor #!: execve itself fails with ENOEXEC, which reaches
  // the parent through the launcher's errno pipe.
  TempDir dir;
  write_text(dir.file("garbage"), "\x7f\x01not a program\n", true);
  auto backend = make_local_backend();
  JobRecord job;
  job.argv = {dir.file("garbage")};
  auto r = backend->submit(job, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().exit_code, 126);
  EXPECT_EQ(r.error().message, "cannot run '" + dir.file("garbage") + "': exec format error");
}

TEST(LocalLaunch, MissingInterpreterFromTheChildIs127) {
  TempDir dir;
  write_text(dir.file("script"), "#!/nonexistent/interpreter\n", true);
  auto backend = make_local_backend();
  JobRecord job;
  job.argv = {dir.file("script")};
  auto r = backend->submit(job, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().exit_code, 127);
  EXPECT_NE(r.error().message.find("no such file or directory"), std::string::npos)
      << r.error().message;
}

TEST(LocalLaunch, RunsInTheWorkdirWithTheJobsEnvironment) {
  TempDir dir;
  auto backend = make_local_backend();
  JobRecord job =
      shell_job("pwd > out; echo \"$NODUS_TEST_VALUE\" >> out; echo \"$NODUS_TREE\" >> out");
  job.workdir = dir.path();
  LaunchSpec spec;
  spec.env["NODUS_TEST_VALUE"] = "hello world";
  ASSERT_TRUE(backend->submit(job, spec).ok());
  EXPECT_EQ(wait_exit(*backend, job, 30s).outcome.exit_code, 0);
  std::string out = read_text(dir.file("out"));
  EXPECT_EQ(out.substr(0, out.find('\n')), std::filesystem::canonical(dir.path()).string());
  EXPECT_NE(out.find("\nhello world\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\n" + std::to_string(::getpid()) + "."), std::string::npos) << out;
}

TEST(LocalLaunch, MissingWorkdirIsAnError) {
  auto backend = make_local_backend();
  JobRecord job = shell_job("true");
  job.workdir = "/nonexistent/nodus-workdir";
  auto r = backend->submit(job, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().exit_code, 125);
  EXPECT_EQ(r.error().message, "workdir '/nonexistent/nodus-workdir': no such directory");
}

TEST(LocalLaunch, ChildHasOwnSessionNullStdinAndDefaultSignals) {
  TempDir dir;
  auto backend = make_local_backend();
  // Ignored and blocked in the parent (as `nohup` or a signal-handling thread would leave
  // them): the job must inherit neither.
  ::signal(SIGUSR2, SIG_IGN);
  sigset_t usr1, old;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  ::sigprocmask(SIG_BLOCK, &usr1, &old);
  // The last command is exec'd, so it reports the mask and dispositions it inherited (a shell
  // blocks signals for a moment around each fork, which a child could catch it doing).
  JobRecord job = shell_job(
      "cat /proc/$$/stat > stat; readlink /proc/$$/fd/0 > stdin;"
      "exec grep -E '^Sig(Ign|Blk)' /proc/self/status > sigs");
  job.workdir = dir.path();
  ASSERT_TRUE(backend->submit(job, {}).ok());
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  ::signal(SIGUSR2, SIG_DFL);
  EXPECT_EQ(wait_exit(*backend, job, 30s).outcome.exit_code, 0);
  auto st = parse_proc_stat(read_text(dir.file("stat")));
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->pid, std::stol(job.backend_id));
  EXPECT_EQ(st->session, st->pid);
  EXPECT_EQ(st->pgrp, st->pid);
  EXPECT_EQ(read_text(dir.file("stdin")), "/dev/null\n");
  EXPECT_EQ(read_text(dir.file("sigs")), "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n");
}

TEST(ResolveExecutable, SkipsANonExecutableMatchForALaterExecutableOne) {
  TempDir a, b;
  write_text(a.file("tool"), "#!/bin/sh\n");
  ::chmod(a.file("tool").c_str(), 0644);
  write_text(b.file("tool"), "#!/bin/sh\n", true);
  auto r = resolve_executable("tool", a.path() + ":" + b.path(), "");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, b.file("tool"));
  auto only_bad = resolve_executable("tool", a.path(), "");
  ASSERT_FALSE(only_bad.ok());
  EXPECT_EQ(only_bad.error().exit_code, 126);
}

TEST(ResolveExecutable, RelativePathIsTakenFromTheWorkdir) {
  TempDir dir;
  write_text(dir.file("run.sh"), "#!/bin/sh\n", true);
  auto r = resolve_executable("./run.sh", "/usr/bin", dir.path());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, dir.file("run.sh"));
  auto missing = resolve_executable("./nope.sh", "/usr/bin", dir.path());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().exit_code, 127);
}

TEST(ResolveExecutable, EmptyPathEntryMeansTheWorkdir) {
  TempDir dir;
  write_text(dir.file("tool"), "#!/bin/sh\n", true);
  auto r = resolve_executable("tool", "/nonexistent:", dir.path());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, dir.file("tool"));
}

}  // namespace
}  // namespace nodus::backend::local
