// --image: the engine check and its message, and the command given to the engine.

#include "backend/local/container.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>

#include "backend/local/cgroup.h"
#include "backend/local/launch.h"
#include "backend/local/local_backend.h"
#include "local_test_util.h"

namespace nodus::backend::local {
namespace {

using namespace testing;  // NOLINT
using namespace std::chrono_literals;

// A PATH holding only a `docker` that behaves like a client without a daemon.
void write_broken_docker(const TempDir& bin) {
  write_text(bin.file("docker"),
             "#!/bin/sh\n"
             "echo 'Client:'\necho ' Version:    28.2.2'\n"
             "echo 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the "
             "docker daemon running?' >&2\nexit 1\n",
             true);
}

// The job's own limits, as the container gets them ("--ulimit nofile=S:H --ulimit nproc=S:H"),
// nproc at most `most_procs`.
std::vector<std::string> ulimits(rlim_t most_procs) {
  auto arg = [](const char* name, int resource, rlim_t most) {
    rlimit rl{};
    EXPECT_EQ(::getrlimit(resource, &rl), 0);
    auto v = [most](rlim_t x) {
      x = std::min(x, most);
      return x == RLIM_INFINITY ? std::string("-1") : std::to_string(x);
    };
    return std::string(name) + "=" + v(rl.rlim_cur) + ":" + v(rl.rlim_max);
  };
  return {"--ulimit", arg("nofile", RLIMIT_NOFILE, RLIM_INFINITY), "--ulimit",
          arg("nproc", RLIMIT_NPROC, most_procs)};
}

// The cgroup a submitted job's note names, "" when none.
std::string job_cgroup_of(const JobRecord& job) { return cgroup_from_note(job.note); }

TEST(ContainerEngine, BrokenDockerAndNoPodmanIsAnErrorNamingBoth) {
  TempDir bin;
  write_broken_docker(bin);
  auto r = find_container_engine("pytorch/pytorch", {"PATH=" + bin.path()}, 5s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().exit_code, 125);
  EXPECT_EQ(r.error().message,
            "--image pytorch/pytorch: needs a working podman or docker: docker is installed but "
            "its engine is not reachable (Cannot connect to the Docker daemon at "
            "unix:///var/run/docker.sock. Is the docker daemon running?); podman not found");
}

TEST(ContainerEngine, SubmitWithAnImageFailsWith125WhenNoEngineWorks) {
  TempDir bin;
  write_broken_docker(bin);
  auto backend = make_local_backend();
  JobRecord job;
  job.argv = {"python", "train.py"};
  job.image = "pytorch/pytorch";
  LaunchSpec spec;
  spec.env["PATH"] = bin.path();
  auto r = backend->submit(job, spec);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().exit_code, 125);
  EXPECT_EQ(r.error().message.rfind("--image pytorch/pytorch: needs a working podman or docker: "
                                    "docker is installed but its engine is not reachable (",
                                    0),
            0u)
      << r.error().message;
}

TEST(ContainerEngine, ThisMachinesEnginesAreReportedTheSameWay) {
  // On a machine with a docker client and no daemon (the build machine) this is the message
  // users see; where an engine works there is nothing to check.
  auto r = find_container_engine("pytorch/pytorch", merged_environment({}), 10s);
  if (r.ok()) GTEST_SKIP() << r->name << " works here";
  EXPECT_EQ(r.error().exit_code, 125);
  const std::string& m = r.error().message;
  EXPECT_EQ(m.rfind("--image pytorch/pytorch: needs a working podman or docker: ", 0), 0u) << m;
  EXPECT_NE(m.find("podman"), std::string::npos) << m;
  EXPECT_NE(m.find("docker"), std::string::npos) << m;
  if (!resolve_executable("docker", env_value(merged_environment({}), "PATH"), "").ok()) return;
  EXPECT_NE(m.find("docker is installed but its engine is not reachable ("), std::string::npos)
      << m;
}

TEST(ContainerEngine, PodmanIsPreferredAndGetsTheJob) {
  // Stand-in engines: `info` works; `run` prints its arguments, one per line.
  TempDir bin, work;
  const std::string fake =
      "#!/bin/sh\n[ \"$1\" = info ] && exit 0\n"
      "for a in \"$@\"; do echo \"$a\"; done\necho \"SECRET=$SECRET\"\n";
  write_text(bin.file("podman"), fake, true);
  write_text(bin.file("docker"), "#!/bin/sh\nexit 1\n", true);
  auto backend = make_local_backend();
  JobRecord job;
  job.argv = {"python", "train.py", "--lr", "0.1"};
  job.image = "pytorch/pytorch";
  job.workdir = work.path();
  job.gpu_indices = {2, 3};
  LaunchSpec spec;
  spec.env["PATH"] = bin.path() + ":/usr/bin:/bin";
  spec.env["SECRET"] = "s3cr3t";
  spec.env["CUDA_VISIBLE_DEVICES"] = "2,3";
  spec.attach = false;
  std::vector<std::string> lines;
  spec.on_line = [&](std::string_view l) { lines.emplace_back(l); };
  ASSERT_TRUE(backend->submit(job, spec).ok());
  EXPECT_EQ(wait_exit(*backend, job, 30s).outcome.exit_code, 0);
  ASSERT_GE(lines.size(), 6u);
  // Where the job has a cgroup without controllers (a hybrid host, as CI) the container goes
  // into it, which takes cgroupfs's form of --cgroup-parent.
  const std::string cgroup = job_cgroup_of(job);
  const bool in_cgroup = !container_cgroup_parent(cgroup).empty();
  size_t at = 0;
  if (in_cgroup) {
    ASSERT_EQ(lines[0], "--cgroup-manager");
    EXPECT_EQ(lines[1], "cgroupfs");
    at = 2;
  }
  ASSERT_EQ(lines[at], "run");
  EXPECT_EQ(lines[at + 1], "--rm");
  EXPECT_EQ(lines[at + 2], "--init");
  EXPECT_EQ(lines[at + 3], "--name");
  EXPECT_EQ(lines[at + 4].rfind("nodus-", 0), 0u);
  at += 5;
  if (in_cgroup) {
    ASSERT_EQ(lines[at], "--cgroup-parent");
    EXPECT_EQ(lines[at + 1], container_cgroup_parent(cgroup));
    EXPECT_EQ(lines[at + 1].rfind("/", 0), 0u) << lines[at + 1];
    at += 2;
  }
  std::vector<std::string> rest(lines.begin() + static_cast<long>(at), lines.end());
  const std::string dir = std::filesystem::path(work.path()).lexically_normal().string();
  std::vector<std::string> expected = ulimits(32768);
  const std::vector<std::string> tail = {"-e", "PATH", "-e", "SECRET", "-v", dir + ":" + dir, "-w",
                                         dir, "--device", "nvidia.com/gpu=2", "--device",
                                         "nvidia.com/gpu=3", "--", "pytorch/pytorch", "python",
                                         "train.py", "--lr", "0.1",
                                         // the value reaches the engine by its environment
                                         "SECRET=s3cr3t"};
  expected.insert(expected.end(), tail.begin(), tail.end());
  EXPECT_EQ(rest, expected);
}

TEST(ContainerRunArgv, DockerGetsGpusAsOneQuotedDeviceList) {
  JobRecord job;
  job.argv = {"nvidia-smi"};
  job.image = "nvidia/cuda:12.4.0-base-ubuntu22.04";
  job.gpu_indices = {0, 1};
  auto argv = container_run_argv({"docker", "/usr/bin/docker"}, "nodus-1.2", job,
                                 {{"NVIDIA_VISIBLE_DEVICES", "0,1"}, {"NODUS_JOB_ID", "7"}}, "/w");
  std::vector<std::string> expected = {"/usr/bin/docker", "run",    "--rm",
                                       "--init",          "--name", "nodus-1.2"};
  for (const std::string& a : ulimits(RLIM_INFINITY)) expected.push_back(a);
  for (const char* a : {"-e", "NODUS_JOB_ID", "-v", "/w:/w", "-w", "/w", "--gpus", "\"device=0,1\"",
                        "--", "nvidia/cuda:12.4.0-base-ubuntu22.04", "nvidia-smi"})
    expected.push_back(a);
  EXPECT_EQ(argv, expected);
  // No cgroup parent for docker: its daemon, not the job, starts the container.
  EXPECT_EQ(container_run_argv({"docker", "/usr/bin/docker"}, "nodus-1.2", job, {}, "/w",
                               "/nodus/job-1.2")[1],
            "run");
}

// nodus's files for the job at their own paths (what the job writes there reaches nodus), and
// the job's CPU set for the container's processes, which the client's affinity does not reach.
TEST(ContainerRunArgv, MountsTheMetricsFileAndHookFolderAndPassesTheCpuSet) {
  JobRecord job;
  job.argv = {"python3", "train.py"};
  job.image = "img";
  job.metrics_path = "/h/metrics/3.jsonl";
  auto argv = container_run_argv({"podman", "/usr/bin/podman"}, "nodus-3.1", job,
                                 {{"NODUS_METRICS", "/h/metrics/3.jsonl"},
                                  {"NODUS_HOOK_DIR", "/h/metrics/3.hook"},
                                  {"PYTHONPATH", "/h/metrics/3.hook"}},
                                 "/w", "", {2, 3});
  auto after_workdir = std::find(argv.begin(), argv.end(), "/w:/w");
  ASSERT_NE(after_workdir, argv.end());
  std::vector<std::string> rest(after_workdir + 3, argv.end());  // past "/w:/w", "-w", "/w"
  std::vector<std::string> expected = {"-v",
                                       "/h/metrics/3.jsonl:/h/metrics/3.jsonl",
                                       "-v",
                                       "/h/metrics/3.hook:/h/metrics/3.hook",
                                       "--cpuset-cpus",
                                       "2,3",
                                       "--",
                                       "img",
                                       "python3",
                                       "train.py"};
  EXPECT_EQ(rest, expected);
  for (const char* name : {"NODUS_METRICS", "NODUS_HOOK_DIR", "PYTHONPATH"})
    EXPECT_NE(std::find(argv.begin(), argv.end(), name), argv.end()) << name;
  // A NODUS_METRICS that is not the job's own file is not mounted.
  auto other = container_run_argv({"podman", "/usr/bin/podman"}, "nodus-3.1", job,
                                  {{"NODUS_METRICS", "/etc/passwd"}}, "/w");
  EXPECT_EQ(std::find(other.begin(), other.end(), "/etc/passwd:/etc/passwd"), other.end());
}

}  // namespace
}  // namespace nodus::backend::local
