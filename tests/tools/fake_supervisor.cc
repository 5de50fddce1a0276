// A sweep cell's supervisor for tests/engine/sweep_runner_test.cc: the real supervise_job (the
// part of `nodus __supervise` after the ticket is read) over a FakeBackend, in a process of its
// own that the test forks and execs, as `nodus sweep` spawns `nodus __supervise`. Exec'd, not
// only forked: the test has its store open, and SQLite's in-process file and lock state must not
// be carried across a fork into a process that opens the same database again.
//
// nodus_fake_supervisor DB TICKET_JSON RUNS_FOR EXIT_CODE IGNORES_TERM SAMPLES_PER_SEC
// SAMPLES_PER_SEC < 0: the job reports no throughput; else it appends {"samples_per_sec": V}
// to its NODUS_METRICS file every 50 ms from a process of its own, as a job does.

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "core/error.h"
#include "engine/fake_backend.h"
#include "engine/signals.h"
#include "engine/supervise_main.h"
#include "store/store.h"

namespace {

void report_throughput(const std::string& metrics_path, double samples_per_sec) {
  if (::fork() != 0) return;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  const std::string line = "{\"samples_per_sec\": " + std::to_string(samples_per_sec) + "}\n";
  for (;;) {
    int fd = ::open(metrics_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd >= 0) {
      ssize_t ignored = ::write(fd, line.data(), line.size());
      (void)ignored;
      ::close(fd);
    }
    ::usleep(50 * 1000);
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace nodus;
  if (argc != 7) {
    std::fprintf(stderr, "usage: nodus_fake_supervisor DB TICKET RUNS_FOR EXIT IGNORES_TERM SPS\n");
    return exit_code::kNodusError;
  }
  try {
    engine::SignalWatch signals;
    auto store = store::Store::open(argv[1]);
    const engine::Ticket ticket = engine::Ticket::from_json(argv[2]);
    engine::testing::FakeBackend::Script script;
    script.runs_for = std::atof(argv[3]);
    script.exit_code = std::atoi(argv[4]);
    script.ignores_term = std::string(argv[5]) == "1";
    if (const double sps = std::atof(argv[6]); sps >= 0)
      report_throughput(store->job(ticket.job_id)->metrics_path, sps);
    engine::testing::FakeBackend fake(script);
    return engine::supervise_job(ticket, *store, signals, &fake,
                                 [](const engine::LaunchStatus&) {});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nodus_fake_supervisor: %s\n", e.what());
    return exit_code::kNodusError;
  }
}
