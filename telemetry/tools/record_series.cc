// record_series: runs a command the way nodus would sample it and writes the series as a
// fixture for tests/telemetry (format: tests/data/telemetry/make_synthetic.py), then prints
// the summary, sparkline and diagnosis. For recording real workloads on a GPU machine:
//
//   nodus_record_series --out h200_workers0.csv [--interval-ms 1000] [--gpus 0,1]
//                       [--source auto|nvml|nvidia-smi] -- cmd...
//
// The command gets NODUS_METRICS=<a temp file>; its data_wait reports go into the series.
// GPU poll times (the cost of NVML calls per poll) are printed to stderr.

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/config.h"
#include "core/job.h"
#include "telemetry/diagnosis.h"
#include "telemetry/gpu_sampler.h"
#include "telemetry/host_sampler.h"
#include "telemetry/summary.h"
#include "telemetry/util_series.h"

extern char** environ;

using namespace nodus;
using namespace nodus::telemetry;

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: nodus_record_series --out FILE [--interval-ms N] [--gpus 0,1] "
               "[--source auto|nvml|nvidia-smi] -- cmd...\n");
  return 2;
}

// New data_wait reports in the metrics file since `offset`.
void read_metrics(const std::string& path, std::streamoff* offset, std::vector<MetricPoint>* out) {
  std::ifstream in(path);
  if (!in) return;
  in.seekg(*offset);
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // a partial last line: read it next time
    *offset = in.tellg();
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("data_wait") && j["data_wait"].is_number())
      out->push_back({j.value("t", unix_now()), "data_wait", j["data_wait"].get<double>()});
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_path;
  int interval_ms = 1000;
  std::vector<int> gpus = {0};
  std::string source = "auto";
  int i = 1;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (i + 1 >= argc) return usage();
    if (a == "--out") {
      out_path = argv[++i];
    } else if (a == "--interval-ms") {
      interval_ms = std::atoi(argv[++i]);
    } else if (a == "--source") {
      source = argv[++i];
    } else if (a == "--gpus") {
      gpus.clear();
      std::stringstream ss(argv[++i]);
      for (std::string g; std::getline(ss, g, ',');) gpus.push_back(std::stoi(g));
    } else {
      return usage();
    }
  }
  if (out_path.empty() || i >= argc || interval_ms < 1) return usage();

  std::string metrics = out_path + ".metrics.jsonl";
  std::remove(metrics.c_str());
  setenv("NODUS_METRICS", metrics.c_str(), 1);
  std::string note;
  std::unique_ptr<GpuSampler> gpu;
  if (source == "nvml")
    gpu = make_nvml_sampler(interval_ms, &note);
  else if (source == "nvidia-smi")
    gpu = make_smi_sampler(config_get("nvidia_smi"), interval_ms, &note);
  else
    gpu = make_gpu_sampler(interval_ms, &note);
  std::fprintf(stderr, "gpu sampler: %s%s%s\n", gpu ? gpu->source().c_str() : "none",
               note.empty() ? "" : "; ", note.c_str());

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
  pid_t pid = -1;
  if (posix_spawnp(&pid, argv[i], nullptr, &attr, argv + i, environ) != 0) {
    std::perror(argv[i]);
    return 127;
  }
  posix_spawnattr_destroy(&attr);
  HostSampler host(pid);

  SummaryInput in;
  std::streamoff offset = 0;
  double poll_ms_sum = 0, poll_ms_max = 0;
  int polls = 0;
  double start = unix_now();
  int status = 0;
  bool done = false;
  while (!done) {
    std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms));
    done = waitpid(pid, &status, WNOHANG) == pid;
    if (gpu) {
      auto t0 = std::chrono::steady_clock::now();
      auto got = gpu->poll(gpus);
      double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      poll_ms_sum += ms;
      poll_ms_max = std::max(poll_ms_max, ms);
      ++polls;
      in.gpu.insert(in.gpu.end(), got.begin(), got.end());
    }
    if (!done) in.host.push_back(host.sample());
    read_metrics(metrics, &offset, &in.metrics);
  }
  in.wall_s = unix_now() - start;

  std::ofstream out(out_path);
  out << "t,gpu,util,data_wait,cpu_percent,cores,max_process_cpu\n";
  char buf[256];
  for (const auto& g : in.gpu) {
    std::snprintf(buf, sizeof buf, "%.3f,%d,%.3f,,,,\n", g.t, g.gpu_index, g.util_gpu);
    out << buf;
  }
  for (const auto& h : in.host) {
    std::snprintf(buf, sizeof buf, "%.3f,,,,%.3f,%d,%.3f\n", h.t, h.cpu_percent, h.cores,
                  h.max_process_cpu_percent);
    out << buf;
  }
  for (const auto& m : in.metrics) {
    std::snprintf(buf, sizeof buf, "%.3f,,,%.4f,,,\n", m.t, m.value);
    out << buf;
  }

  Summary s = summarize(in);
  nlohmann::json j = s;
  std::printf("exit %d, %d GPU samples, %d host samples, %zu data_wait reports\n",
              WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
              static_cast<int>(in.gpu.size()), static_cast<int>(in.host.size()), in.metrics.size());
  if (polls)
    std::fprintf(stderr, "gpu poll: mean %.2f ms, max %.2f ms over %d polls\n", poll_ms_sum / polls,
                 poll_ms_max, polls);
  int with_pcie = 0;
  double rx_sum = 0, tx_sum = 0;
  for (const auto& g : in.gpu) {
    if (!g.pcie_rx_kbs || !g.pcie_tx_kbs) continue;
    ++with_pcie;
    rx_sum += *g.pcie_rx_kbs;
    tx_sum += *g.pcie_tx_kbs;
  }
  if (with_pcie)
    std::fprintf(stderr, "pcie: %d samples, mean rx %.0f KB/s, tx %.0f KB/s\n", with_pcie,
                 rx_sum / with_pcie, tx_sum / with_pcie);
  std::printf("summary %s\n", j.dump().c_str());
  std::printf("util    %s\n", util_sparkline(in.gpu, 60).c_str());
  std::printf("verdict %s\n", verdict(s).c_str());
  for (const auto& f : diagnose(s))
    std::printf("  [%.2f] %s\n", f.score, format_finding(f).c_str());
  return 0;
}
