// nodus estimate: what idle GPU time costs and what the same work would cost at a higher
// utilization; from flags, or from a finished job's measured utilization.

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/common.h"
#include "core/error.h"
#include "core/parse.h"
#include "store/job_stats.h"
#include "telemetry/estimate.h"
#include "telemetry/summary.h"

namespace nodus::cli {

JobRecord find_job_or_throw(store::Store& store, const std::string& id);

namespace {

// --hours: a bare number is hours (24, 1.5); with a unit it is a duration as everywhere else
// (1d, 90m, 1h30m).
Result<double> parse_hours(const std::string& text) {
  char* end = nullptr;
  double h = std::strtod(text.c_str(), &end);
  if (!text.empty() && end && *end == '\0') {
    if (!(h > 0) || h > 1e6)
      return Error::permanent("--hours: invalid value '" + text +
                              "': expected hours above 0 (24, 1.5) or a duration (1d, 90m)");
    return h;
  }
  auto d = parse_duration(text, "--hours");
  if (!d.ok())
    return Error::permanent("--hours: invalid value '" + text +
                            "': expected hours (24, 1.5) or a duration (1d, 90m, 1h30m)");
  return d->count() / 3'600'000.0;
}

struct EstimateCommand {
  std::string job;
  std::string gpu;
  std::string hours;
  std::string util;
  std::vector<double> targets{60, 80, 95};
  std::string prices;
  bool prices_only = false;
  std::string format = "table";

  int operator()() const {
    Format f = format_from(format);
    telemetry::EstimateInput in;
    in.targets = targets;
    std::string what;
    if (!job.empty()) {
      if (!gpu.empty() || !hours.empty() || !util.empty())
        throw Fatal(
            "estimate JOB takes its GPUs, hours and utilization from the job; drop "
            "--gpu/--hours/--util");
      auto store = open_store();
      JobRecord j = find_job_or_throw(*store, job);
      if (j.gpu_count == 0) throw Fatal("job " + job + " used no GPU: nothing to estimate");
      auto stats = store->stats(j.id);
      telemetry::Summary s;
      if (stats) s = stats->values.get<telemetry::Summary>();
      if (!s.util_mean)
        throw Fatal("job " + job + " has no GPU utilization record (" +
                    (stats && stats->values.contains("gpu_note")
                         ? stats->values["gpu_note"].get<std::string>()
                         : std::string("no samples")) +
                    ")");
      in.gpus = j.gpu_count;
      in.rate = j.rate_per_gpu_hour;
      in.hours = (j.ended_at.value_or(unix_now()) - j.started_at.value_or(unix_now())) / 3600.0;
      in.util_pct = std::max(0.1, *s.util_mean);
      what =
          "job " + std::to_string(j.id) + ": " + std::to_string(j.gpu_count) + " x " + j.gpu_type;
    } else {
      if (gpu.empty() || hours.empty() || util.empty())
        throw Fatal("estimate needs --gpu TYPE[:COUNT], --hours H and --util PCT, or a JOB id");
      auto req = value_or_throw(parse_gpu_request(gpu));
      if (req.none()) throw Fatal("--gpu none: an estimate needs a GPU type");
      billing::Catalog catalog = load_catalog(prices, prices_only);
      const auto* entry = value_or_throw(catalog.lookup(req.type));
      in.gpus = req.count;
      in.rate = entry->usd_per_gpu_hour;
      in.hours = value_or_throw(parse_hours(hours));
      in.util_pct = value_or_throw(parse_percent(util, "--util"));
      what = std::to_string(req.count) + " x " + entry->type;
    }
    auto e = value_or_throw(telemetry::estimate(in));
    print(telemetry::estimate_table(e).render(f));
    if (f == Format::kTable)
      std::fprintf(
          stderr, "nodus: %s at %s/GPU-hour; busy time held at %s. A model, not a benchmark.\n",
          what.c_str(), format_usd(in.rate).c_str(), telemetry::format_hours(e.busy_hours).c_str());
    return 0;
  }
};
}  // namespace

Command add_estimate(CLI::App& app) {
  auto cmd = std::make_shared<EstimateCommand>();
  CLI::App* sub = app.add_subcommand(
      "estimate", "what idle GPU time costs: nodus estimate --gpu H100:8 --hours 24 --util 40");
  set_examples(sub, {"nodus estimate --gpu H100:8 --hours 24 --util 40",
                     "nodus estimate 42 --targets 70,90"});
  sub->add_option("job", cmd->job, "a finished job to take the numbers from")->type_name("JOB");
  sub->add_option("--gpu", cmd->gpu, "GPUs as TYPE[:COUNT]")
      ->type_name("TYPE[:COUNT]")
      ->check(gpu_value());
  sub->add_option("--hours", cmd->hours,
                  "wall time at the current utilization: hours (24) or a duration (1d, 90m)")
      ->type_name("HOURS|DURATION")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            auto r = parse_hours(v);
            if (r.ok()) return "";
            std::string msg = r.error().message;
            return msg.substr(msg.find("invalid value"));
          },
          "", ""));
  sub->add_option("--util", cmd->util, "current GPU utilization, percent")
      ->type_name("PCT")
      ->check(percent_value());
  sub->add_option("--targets", cmd->targets, "utilizations to compare with")
      ->delimiter(',')
      ->capture_default_str();
  add_prices_flags(sub, cmd->prices, cmd->prices_only);
  add_format_flag(sub, cmd->format);
  return {sub, [cmd] { return (*cmd)(); }};
}

}  // namespace nodus::cli
