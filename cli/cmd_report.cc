// nodus report SWEEP|JOB [-o FILE]: a self-contained HTML page with charts (or --format md, a
// Markdown summary), for a pull request or a chat.

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/common.h"
#include "cli/job_views.h"
#include "cli/sweep_results.h"
#include "cli/sweep_views.h"
#include "core/config.h"
#include "core/error.h"
#include "report/report.h"
#include "store/job_stats.h"
#include "sweep/grid.h"
#include "sweep/placeholders.h"
#include "telemetry/util_series.h"

namespace nodus::cli {

JobRecord find_job_or_throw(store::Store& store, const std::string& id);

namespace {

std::vector<report::Diagnosis> diagnosis_of(const nlohmann::json& stats) {
  std::vector<report::Diagnosis> out;
  for (const auto& f : stats.value("findings", nlohmann::json::array()))
    out.push_back({f.value("cause", ""), f.value("fix", ""), f.value("evidence", "")});
  return out;
}

// The profiled step of a --profile job (stats.profile.timeline), if any.
std::optional<report::StepTimeline> timeline_of(const nlohmann::json& stats) {
  if (!stats.contains("profile") || !stats["profile"].contains("timeline")) return std::nullopt;
  const auto& p = stats["profile"];
  const auto& j = p["timeline"];
  report::StepTimeline t;
  t.step_ms = j.value("step_ms", 0.0);
  t.cuda = p.value("cuda", false);
  auto rows = [&](const char* key, std::vector<std::pair<double, double>>& out) {
    for (const auto& r : j.value(key, nlohmann::json::array()))
      if (r.is_array() && r.size() == 2 && r[0].is_number() && r[1].is_number())
        out.emplace_back(r[0].get<double>(), r[1].get<double>());
  };
  rows("cpu", t.cpu);
  rows("gpu", t.gpu);
  rows("fetch", t.fetch);
  for (const auto& s : j.value("syncs", nlohmann::json::array()))
    if (s.is_object()) t.syncs.emplace_back(s.value("at_ms", 0.0), s.value("what", std::string()));
  char buf[200];
  if (t.cuda)
    std::snprintf(buf, sizeof buf,
                  "step %.2f ms; GPU busy %.0f%%, idle fetching %.0f%%, after syncs %.0f%%, "
                  "otherwise %.0f%% (over %d steps)",
                  p.value("step_ms", 0.0), 100 * p.value("gpu_busy_share", 0.0),
                  100 * p.value("idle_fetch_share", 0.0), 100 * p.value("idle_sync_share", 0.0),
                  100 * p.value("idle_inside_share", 0.0), p.value("steps", 0));
  else
    std::snprintf(buf, sizeof buf, "step %.2f ms; CPU-only trace, no GPU row (over %d steps)",
                  p.value("step_ms", 0.0), p.value("steps", 0));
  t.caption = buf;
  return t;
}

std::vector<report::UtilPoint> util_of(store::Store& store, const JobRecord& job) {
  std::vector<report::UtilPoint> out;
  double start = job.started_at.value_or(0);
  for (const auto& p : telemetry::util_series(store.gpu_samples(job.id)))
    out.push_back({p.t - start, p.util});
  return out;
}

report::Cell cell_of(store::Store& store, const JobRecord& job, const sweep::CellResult& r) {
  report::Cell c;
  for (const auto& p : r.params) c.params.emplace_back(p.name, p.value);
  c.label = r.params.empty() ? "job " + std::to_string(job.id) : sweep::cell_label(r.params);
  // Marked as in the table: its rates are warm-up's and no best cell is drawn from them.
  c.status = r.unsteady.empty() ? r.state : r.state + " (warm-up only)";
  c.wall_s = r.wall_s;
  c.cost_usd = r.cost;
  c.throughput = r.throughput;
  c.usd_per_million = sweep::usd_per_million_samples(r);
  c.data_wait = r.data_wait;
  c.util_mean = r.util_mean;
  c.idle_usd = r.idle_usd;
  c.mfu = r.mfu;
  if (r.verdict) c.verdict = *r.verdict;
  if (auto stats = store.stats(job.id)) {
    const nlohmann::json mfu = stats->values.value("mfu", nlohmann::json());
    if (c.mfu && mfu.is_object() && mfu.contains("unused_usd_per_hour") &&
        mfu["unused_usd_per_hour"].is_number())
      c.unused_usd_per_hour = mfu["unused_usd_per_hour"].get<double>();
    c.diagnosis = diagnosis_of(stats->values);
    c.timeline = timeline_of(stats->values);
  }
  c.util = util_of(store, job);
  return c;
}

report::ReportData sweep_report(store::Store& store, const store::SweepRecord& sweep) {
  SweepResults results = load_sweep_results(store, sweep);
  report::ReportData d;
  d.title = "Sweep " + sweep_label(sweep);
  d.kind = report::ReportKind::kSweep;
  d.command = sweep.argv;
  d.created_at = sweep.created_at;
  d.backend = sweep.backend;
  if (auto grid = sweep::parse_grid(sweep.definition->value("params", std::vector<std::string>{})))
    for (const auto& a : grid->axes) d.grid.push_back({a.name, a.values});
  // The sweep's own objective; the report names a best cell only when the table does.
  auto objective = sweep::parse_objective(sweep_objective(sweep, ""));
  const sweep::Objective ranked_by = objective ? *objective : sweep::Objective{};
  auto best = sweep::best_cell(results.cells, ranked_by);
  double first = 0, last = 0;
  for (size_t i = 0; i < results.cells.size(); ++i) {
    const auto& r = results.cells[i];
    if (!results.jobs[i]) {
      report::Cell c;
      for (const auto& p : r.params) c.params.emplace_back(p.name, p.value);
      c.label = sweep::cell_label(r.params);
      c.status = r.state;
      d.cells.push_back(c);
      continue;
    }
    const JobRecord& job = *results.jobs[i];
    if (d.gpu_type.empty() && job.gpu_count) {
      d.gpu_type = job.gpu_type;
      d.gpu_count = job.gpu_count;
      d.rate_per_gpu_hour = job.rate_per_gpu_hour;
    }
    report::Cell c = cell_of(store, job, r);
    c.best = best && *best == i;
    if (job.started_at && (first == 0 || *job.started_at < first)) first = *job.started_at;
    if (job.ended_at && *job.ended_at > last) last = *job.ended_at;
    d.totals.cost_usd += c.cost_usd;
    if (c.idle_usd) d.totals.idle_usd = d.totals.idle_usd.value_or(0) + *c.idle_usd;
    if (auto stats = store.stats(job.id)) {
      // samples_per_sec and tokens_per_sec (the hook's, for a model fed token ids) as units; a
      // --throughput metric of the job's own by its name.
      const std::string metric =
          stats->values.value("throughput_metric", std::string("samples_per_sec"));
      d.throughput_unit = metric == "samples_per_sec"  ? "samples/s"
                          : metric == "tokens_per_sec" ? "tokens/s"
                                                       : metric;
    }
    d.cells.push_back(std::move(c));
  }
  d.totals.wall_s = last > first ? last - first : 0;
  d.summary = sweep::summary_sentence(results.cells, ranked_by);
  return d;
}

report::ReportData job_report(store::Store& store, const JobRecord& job) {
  report::ReportData d;
  d.title = "Job " + std::to_string(job.id) + (job.name.empty() ? "" : " (" + job.name + ")");
  d.kind = report::ReportKind::kJob;
  d.command = job.argv;
  d.created_at = job.created_at;
  d.backend = job.backend;
  d.gpu_type = job.gpu_type;
  d.gpu_count = std::max(1, job.gpu_count);
  d.rate_per_gpu_hour = job.rate_per_gpu_hour;
  sweep::CellResult r;
  r.state = std::string(to_string(job.state));
  r.wall_s = wall_seconds(job);
  r.cost = job.cost;
  if (auto stats = store.stats(job.id)) {
    const auto& v = stats->values;
    if (v.contains("throughput")) r.throughput = v["throughput"].get<double>();
    if (v.contains("data_wait_share")) r.data_wait = v["data_wait_share"].get<double>();
    if (v.contains("util_mean")) r.util_mean = v["util_mean"].get<double>();
    if (v.contains("idle_usd")) r.idle_usd = v["idle_usd"].get<double>();
    if (v.contains("verdict")) r.verdict = v["verdict"].get<std::string>();
    const nlohmann::json mfu = v.value("mfu", nlohmann::json());
    if (mfu.is_object() && mfu.contains("value") && mfu["value"].is_number())
      r.mfu = mfu["value"].get<double>();
  }
  report::Cell c = cell_of(store, job, r);
  d.totals.cost_usd = job.cost;
  d.totals.wall_s = r.wall_s;
  d.totals.idle_usd = r.idle_usd;
  d.cells.push_back(std::move(c));
  return d;
}

// Creates stem.ext in the current folder (stem-2.ext, ... when taken) with `text`; its path.
std::string write_new_file(const std::string& stem, const std::string& ext,
                           const std::string& text) {
  std::string safe;
  for (char c : stem) safe += std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '_';
  for (int n = 1; n < 1000; ++n) {
    std::string path = safe + (n == 1 ? "" : "-" + std::to_string(n)) + ext;
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) throw Fatal("cannot write the report to '" + path + "': " + std::strerror(errno));
    bool ok = true;
    for (size_t done = 0; ok && done < text.size();) {
      ssize_t n = ::write(fd, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      ok = n > 0;
      if (ok) done += static_cast<size_t>(n);
    }
    ::close(fd);
    if (!ok) throw Fatal("cannot write the report to '" + path + "': " + std::strerror(errno));
    std::error_code ec;
    auto abs = std::filesystem::absolute(path, ec);
    return ec ? path : abs.string();
  }
  throw Fatal("cannot write the report: " + safe + ext +
              " and 998 numbered names are taken; "
              "give -o FILE");
}

struct ReportCommand {
  std::string id;
  std::string output;
  std::string format = "html";

  int operator()() const {
    if (format != "html" && format != "md")
      throw Fatal("--format: invalid value '" + format + "': expected html or md");
    auto store = open_store_to_read();
    report::ReportData data;
    bool sweep_id =
        !id.empty() && id[0] == 's' && id.find_first_not_of("0123456789", 1) == std::string::npos;
    std::optional<JobRecord> job;
    if (!sweep_id) job = store->find_job(id);
    if (job) {
      data = job_report(*store, *job);
    } else if (auto sweep = store->find_sweep(id)) {
      data = sweep_report(*store, *sweep);
    } else {
      throw Fatal("unknown job or sweep '" + id + "': see nodus ps -a and nodus sweeps");
    }
    std::string text = format == "md" ? report::render_markdown(data) : report::render_html(data);
    if (output == "-" || (output.empty() && (format == "md" || !is_tty(STDOUT_FILENO))))
      return print(text), 0;
    if (output.empty()) {
      // HTML on a terminal is noise: write it next to the user instead, never over a file.
      std::string path = write_new_file("nodus-report-" + id, ".html", text);
      std::fprintf(stderr, "nodus: wrote %zu bytes; open it in a browser:\n", text.size());
      print(path + "\n");
      return 0;
    }
    std::ofstream out(output, std::ios::binary | std::ios::trunc);
    if (!out || !(out << text) || !out.flush()) throw Fatal("-o: cannot write '" + output + "'");
    std::fprintf(stderr, "nodus: wrote %s (%zu bytes)\n", output.c_str(), text.size());
    return 0;
  }
};
}  // namespace

Command add_report(CLI::App& app) {
  auto cmd = std::make_shared<ReportCommand>();
  CLI::App* sub = app.add_subcommand(
      "report", "a self-contained HTML report (or Markdown) of a sweep or a job");
  set_examples(sub, {"nodus report s3 -o report.html", "nodus report resnet --format md"});
  sub->add_option("id", cmd->id, "sweep id (s3) or name, or job id or name")
      ->type_name("SWEEP|JOB")
      ->required();
  sub->add_option(
         "-o,--output", cmd->output,
         "file to write (default: stdout; html on a terminal: a new file here, its path printed)")
      ->type_name("FILE");
  sub->add_option("--format", cmd->format, "html or md")
      ->type_name("html|md")
      ->check(one_of({"html", "md"}))
      ->capture_default_str();
  return {sub, [cmd] { return (*cmd)(); }};
}

}  // namespace nodus::cli
