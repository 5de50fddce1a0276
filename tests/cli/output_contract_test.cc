// The json/csv contract of docs/output.md, pinned per listing: every row has exactly the listed
// keys (plus schema_version) whether or not telemetry exists, csv has the same columns, units
// and types are the documented ones. A change here is a change to docs/output.md.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "cli/fixtures.h"

namespace nodus::testing {
namespace {

using Keys = std::vector<std::string>;

const Keys kPs = {"id",         "name",       "state",    "gpu",    "gpu_type", "gpu_count",
                  "created_at", "started_at", "ended_at", "wall_s", "cost_usd", "max_cost_usd",
                  "exit_code",  "sweep_id",   "cell",     "command"};
const Keys kSweeps = {"id",      "name",     "state",      "cells",      "completed", "failed",
                      "stopped", "cost_usd", "budget_usd", "created_at", "command"};
// One parameter, named w.
const Keys kCells = {"cell",
                     "w",
                     "status",
                     "job_id",
                     "wall_s",
                     "cost_usd",
                     "throughput",
                     "usd_per_million_samples",
                     "data_wait",
                     "util_mean",
                     "mfu",
                     "idle_usd",
                     "verdict",
                     "slowest_rank",
                     "throughput_metric",
                     "gpu_seconds",
                     "exit_code",
                     "params",
                     "steady",
                     "best"};
const Keys kCostRow(const std::string& key) { return {key, "jobs", "gpu_hours", "cost_usd"}; }
const Keys kPrices = {"type",   "aliases",    "usd_per_gpu_hour",
                      "source", "source_url", "checked",
                      "via",    "note",       "origin"};
const Keys kEstimate = {"util", "wall_hours", "cost_usd", "idle_usd", "saved_usd"};
const Keys kConfig = {"key", "env", "value", "default", "meaning"};
const Keys kShowJob = {
    "schema_version",   "id",           "name",       "state",       "backend",
    "backend_id",       "command",      "env",        "workdir",     "image",
    "gpu_type",         "gpu_count",    "nodes",      "gpu_indices", "inventory_source",
    "usd_per_gpu_hour", "max_cost_usd", "timeout_s",  "grace_s",     "stop_plan",
    "exit_code",        "signal",       "created_at", "started_at",  "ended_at",
    "wall_s",           "gpu_seconds",  "cost_usd",   "log_path",    "note",
    "sweep_id",         "cell",         "params",     "stats"};

std::set<std::string> key_set(const nlohmann::json& object) {
  std::set<std::string> keys;
  for (const auto& item : object.items()) keys.insert(item.key());
  return keys;
}

// Every row of `rows` has exactly `keys` and schema_version 1.
void expect_rows(const nlohmann::json& rows, const Keys& keys, const std::string& what) {
  ASSERT_TRUE(rows.is_array()) << what << ": " << rows.dump();
  ASSERT_FALSE(rows.empty()) << what;
  std::set<std::string> want(keys.begin(), keys.end());
  want.insert("schema_version");
  for (const auto& row : rows) {
    EXPECT_EQ(key_set(row), want) << what << ": " << row.dump();
    EXPECT_EQ(row["schema_version"], 2) << what;
  }
}

// The csv header is `keys` then schema_version, in order; every line has as many fields.
void expect_csv(const std::string& csv, const Keys& keys, const std::string& what) {
  std::string want;
  for (const auto& k : keys) want += k + ",";
  want += "schema_version";
  std::istringstream lines(csv);
  std::string header;
  std::getline(lines, header);
  EXPECT_EQ(header, want) << what;
}

nlohmann::json json_of(const RunResult& r) {
  EXPECT_EQ(r.code, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

class OutputContract : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = {{"NODUS_LOCAL_GPUS", "TEST:4"}, {"NODUS_PRICES", write_test_prices(home_)}};
    // A CPU-only unnamed job, a named GPU job, and a sweep without any telemetry.
    ASSERT_EQ(home_.run({"run", "--", "true"}, env_).code, 0);
    ASSERT_EQ(
        home_.run({"run", "--gpu", "TEST:1", "--name", "trainer", "--", "sleep", "0.1"}, env_).code,
        0);
    ASSERT_EQ(home_.run({"sweep", "-p", "w=1,2", "--", "true"}, env_).code, 0);
  }
  RunResult run(std::vector<std::string> args) const { return home_.run(args, env_); }
  RunResult json(std::vector<std::string> args) const {
    args.insert(args.end(), {"--format", "json"});
    return run(args);
  }
  std::string csv(std::vector<std::string> args) const {
    args.insert(args.end(), {"--format", "csv"});
    auto r = run(args);
    EXPECT_EQ(r.code, 0) << r.err;
    return r.out;
  }

  NodusHome home_;
  std::map<std::string, std::string> env_;
};

TEST_F(OutputContract, Ps) {
  auto rows = json_of(json({"ps", "-a"}));
  expect_rows(rows, kPs, "ps");
  expect_csv(csv({"ps", "-a"}), kPs, "ps");
  for (const auto& row : rows) {
    EXPECT_TRUE(row["command"].is_array()) << row.dump();  // as in show, never a string
    EXPECT_TRUE(row["name"].is_null() || !row["name"].get<std::string>().empty());
  }
  // The CPU-only job: no GPU is null, not "-".
  const auto& first = rows.back();
  EXPECT_TRUE(first["gpu"].is_null()) << first.dump();
  EXPECT_TRUE(first["name"].is_null()) << first.dump();
}

TEST_F(OutputContract, ShowJobAndItsCommandType) {
  auto j = json_of(json({"show", "trainer"}));
  EXPECT_EQ(key_set(j), std::set<std::string>(kShowJob.begin(), kShowJob.end()));
  EXPECT_TRUE(j["command"].is_array());
  EXPECT_EQ(j["schema_version"], 2);
  auto cell = json_of(json({"show", "s1-1"}));
  EXPECT_EQ(cell["sweep_id"], "s1");  // the same string as in `sweeps` and `ps`
  EXPECT_EQ(cell["cell"], 1);         // numbered from 1, as in `show s1`
  // The CPU-only job: what it does not have is null, as in `ps`, not "".
  auto cpu = json_of(json({"show", "1"}));
  for (const char* key : {"gpu_type", "image", "inventory_source"})
    EXPECT_TRUE(cpu[key].is_null()) << key << ": " << cpu.dump();
  EXPECT_EQ(j["gpu_type"], "TEST");
}

TEST_F(OutputContract, SweepsAndShowSweepWithoutTelemetryStillHaveEveryColumn) {
  expect_rows(json_of(json({"sweeps"})), kSweeps, "sweeps");
  expect_csv(csv({"sweeps"}), kSweeps, "sweeps");
  EXPECT_TRUE(json_of(json({"sweeps"}))[0]["command"].is_array());
  auto s = json_of(json({"show", "s1"}));
  EXPECT_EQ(s["schema_version"], 2);
  expect_rows(s["cells"], kCells, "show s1");
  EXPECT_TRUE(s["cells"][0]["util_mean"].is_null());  // no samples: null, not a missing key
  expect_csv(csv({"show", "s1"}), kCells, "show s1");
  EXPECT_TRUE(s["sweep"]["command"].is_array());
  // The table leaves out what no cell has.
  auto table = run({"show", "s1"});
  EXPECT_EQ(table.out.find("UTIL"), std::string::npos) << table.out;
}

TEST_F(OutputContract, CostTotalsBesideTheRowsNotAmongThem) {
  auto j = json_of(json({"cost"}));
  EXPECT_EQ(j["schema_version"], 2);
  expect_rows(j["by_day"], kCostRow("day"), "cost by_day");
  expect_rows(j["by_gpu"], kCostRow("gpu_type"), "cost by_gpu");
  EXPECT_TRUE(j["total"]["jobs"].is_number_integer()) << j.dump();  // 4, never 4.0
  EXPECT_EQ(j["total"]["jobs"], 4);
  for (const auto& row : j["by_day"]) EXPECT_NE(row["day"], "total");
  for (const char* by : {"sweep", "name"}) {
    auto g = json_of(json({"cost", "--by", by}));
    std::string key = std::string(by) == "sweep" ? "sweep_id" : "name";
    expect_rows(g[std::string("by_") + by], kCostRow(key), by);
    expect_csv(csv({"cost", "--by", by}), kCostRow(key), by);
  }
  std::string days = csv({"cost"});
  expect_csv(days, kCostRow("day"), "cost csv");
  EXPECT_EQ(days.find("total"), std::string::npos) << days;
}

TEST_F(OutputContract, PricesEstimateConfig) {
  auto prices = json_of(json({"prices"}));
  expect_rows(prices, kPrices, "prices");
  expect_csv(csv({"prices"}), kPrices, "prices");
  auto est = json_of(json({"estimate", "--gpu", "H100:8", "--hours", "24", "--util", "40"}));
  expect_rows(est, kEstimate, "estimate");
  EXPECT_DOUBLE_EQ(est[0]["util"].get<double>(), 0.40);  // a fraction, as util_mean
  expect_csv(csv({"estimate", "--gpu", "H100:8", "--hours", "24", "--util", "40"}), kEstimate,
             "estimate");
  expect_rows(json_of(json({"config"})), kConfig, "config");
}

// What a job controls (a param's value, a metric's name) reaches a spreadsheet as data: a field
// that starts with = + @ gets a leading quote, and control characters are written as escapes,
// in the CSV that `show` prints, end to end, not only in the escaping function.
TEST(CsvOutput, ValuesAndMetricNamesAJobControlsAreNeitherFormulasNorTerminalCodes) {
  NodusHome home;
  const std::string script = home.file("m.sh");
  // JSON's own escape for ESC: the job writes a valid line whose name holds a terminal code.
  write_file(script,
             "cat >> \"$NODUS_METRICS\" <<'EOF'\n{\"loss\\u001b[2J\": 1, \"=cmd\": 2}\nEOF\n"
             "echo \"$1\"\n");
  auto r = home.run({"sweep", "--param", "v==SUM(A1),@x", "--", "sh", script, "{v}"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto csv = home.run({"show", "s1", "--format", "csv"});
  ASSERT_EQ(csv.code, 0) << csv.err;
  EXPECT_EQ(csv.out.find('\x1b'), std::string::npos) << csv.out;
  EXPECT_NE(csv.out.find(",loss\\x1b[2J,"), std::string::npos) << csv.out;
  EXPECT_NE(csv.out.find(",'=cmd,"), std::string::npos) << csv.out;
  EXPECT_NE(csv.out.find("\n1,'=SUM(A1),"), std::string::npos) << csv.out;
  EXPECT_NE(csv.out.find("\n2,'@x,"), std::string::npos) << csv.out;
}

}  // namespace
}  // namespace nodus::testing
