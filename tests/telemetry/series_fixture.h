#pragma once
// Loads a series fixture from tests/data/telemetry (format in make_synthetic.py's docstring)
// into the inputs of summarize(): GPU samples, host samples and data_wait reports.

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "telemetry/summary.h"

namespace nodus::telemetry::testing {

inline std::string data_path(const std::string& name) {
  return std::string(NODUS_TEST_DATA) + "/telemetry/" + name;
}

inline std::string read_text(const std::string& name) {
  std::ifstream in(data_path(name));
  if (!in) throw std::runtime_error("missing fixture " + data_path(name));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline SummaryInput load_series(const std::string& name) {
  std::stringstream in(read_text(name));
  std::string line;
  std::getline(in, line);  // header
  SummaryInput out;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::vector<std::string> f;
    std::stringstream ls(line);
    for (std::string cell; std::getline(ls, cell, ',');) f.push_back(cell);
    f.resize(7);
    double t = std::stod(f[0]);
    if (!f[1].empty()) {
      GpuSample g;
      g.t = t;
      g.gpu_index = std::stoi(f[1]);
      g.util_gpu = std::stod(f[2]);
      out.gpu.push_back(g);
    }
    if (!f[3].empty()) out.metrics.push_back({t, "data_wait", std::stod(f[3])});
    if (!f[4].empty()) {
      HostSample h;
      h.t = t;
      h.cpu_percent = std::stod(f[4]);
      h.cores = std::stoi(f[5]);
      h.max_process_cpu_percent = std::stod(f[6]);
      out.host.push_back(h);
    }
  }
  return out;
}

}  // namespace nodus::telemetry::testing
