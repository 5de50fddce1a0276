#pragma once
// Store is nodus's one SQLite file ($NODUS_HOME/nodus.db, WAL): jobs, GPU claims, sweeps,
// metric and telemetry series. Every method is one transaction; read-then-write ones use
// BEGIN IMMEDIATE so concurrent nodus processes serialize instead of failing with SQLITE_BUSY.
// Errors (locked too long, corrupt, unwritable) throw nodus::Fatal with the path in the message.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/job.h"
#include "core/samples.h"

namespace nodus::store {

// One GPU of the local inventory.
struct Gpu {
  int index = 0;
  std::string type;  // catalog type
  std::string name;  // as the driver names it, or as declared
  std::string uuid;
};

struct SweepRecord {
  int64_t id = 0;
  std::string name;
  std::string backend = "local";
  std::vector<std::string> argv;  // the command with {NAME} placeholders
  nlohmann::json definition;      // grid, options: whatever defines the cells (for resume)
  std::string definition_hash;
  std::string state = "running";  // running, completed, failed, interrupted, budget
  std::optional<double> budget;
  double created_at = 0;
  std::optional<double> ended_at;
  int64_t supervisor_pid = 0;
  int64_t supervisor_start = 0;
};

// Derived per-job figures (telemetry summary, throughput); filled when the job ends.
struct JobStats {
  int64_t job_id = 0;
  nlohmann::json values = nlohmann::json::object();  // e.g. util_mean, idle_usd, throughput
};

struct JobFilter {
  bool all = false;  // false: active jobs plus the most recent finished ones
  int limit = 50;
  std::optional<int64_t> sweep_id;
};

class Store {
 public:
  // Opens (creating folder and file as needed) and migrates. Throws Fatal on failure.
  static std::unique_ptr<Store> open(const std::string& path);
  static std::string default_path();  // nodus_home() + "/nodus.db"
  ~Store();

  const std::string& path() const { return path_; }
  std::string folder() const;  // where logs/ and metrics/ live

  // --- jobs ---
  // Inserts the row (state from the record) and returns its id.
  int64_t insert_job(const JobRecord& job);
  void update_job(const JobRecord& job);  // writes every column
  std::optional<JobRecord> job(int64_t id);
  // By id, or by name (the newest job of that name).
  std::optional<JobRecord> find_job(const std::string& id_or_name);
  std::vector<JobRecord> jobs(const JobFilter& filter);
  std::vector<JobRecord> active_jobs();  // waiting, starting, running

  // Marks every active job whose supervisor is dead as lost (ended now, cost billed up to the
  // last known time) and frees its GPUs. Returns the ids changed. `ps` and `run` call it.
  std::vector<int64_t> reconcile_dead_supervisors();

  // --- GPUs ---
  // Atomically claims `count` free GPUs of `type` for job_id, owned by the given supervisor
  // (pid + start time). Claims of dead owners are freed first. Returns the indices, or nullopt
  // when not enough are free now.
  std::optional<std::vector<int>> claim_gpus(int64_t job_id, const std::string& type, int count,
                                             const std::vector<Gpu>& inventory, int64_t owner_pid,
                                             int64_t owner_start);
  void release_gpus(int64_t job_id);
  // Indices currently claimed (live owners only).
  std::vector<int> claimed_gpus();

  // --- sweeps ---
  int64_t insert_sweep(const SweepRecord& sweep);
  void update_sweep(const SweepRecord& sweep);
  std::optional<SweepRecord> sweep(int64_t id);
  std::optional<SweepRecord> find_sweep(const std::string& id_or_name);  // "s12", "12" or name
  std::vector<SweepRecord> sweeps(int limit);
  std::vector<JobRecord> sweep_cells(int64_t sweep_id);  // newest attempt per cell_index

  // --- series ---
  void add_metrics(int64_t job_id, const std::vector<MetricPoint>& points);
  std::vector<MetricPoint> metrics(int64_t job_id);
  void add_gpu_samples(int64_t job_id, const std::vector<GpuSample>& samples);
  std::vector<GpuSample> gpu_samples(int64_t job_id);
  void add_host_samples(int64_t job_id, const std::vector<HostSample>& samples);
  std::vector<HostSample> host_samples(int64_t job_id);
  void put_stats(const JobStats& stats);  // merges keys into the job's stats
  std::optional<JobStats> stats(int64_t job_id);

  // --- spend ---
  struct SpendRow {
    std::string key;  // day (YYYY-MM-DD, local time) or GPU type
    int jobs = 0;
    double gpu_hours = 0;
    double cost = 0;
  };
  std::vector<SpendRow> spend_by_day(std::optional<double> since);
  std::vector<SpendRow> spend_by_gpu(std::optional<double> since);

  std::string integrity_check();  // "ok" when healthy

  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  struct Impl;

 private:
  Store(std::string path, std::unique_ptr<Impl> impl);
  std::string path_;
  std::unique_ptr<Impl> impl_;
};

// Start time of a process from /proc/<pid>/stat (field 22), 0 if it does not exist.
int64_t process_start_time(int64_t pid);
// True when pid exists and its start time matches (a reused pid is not alive for us).
bool process_alive(int64_t pid, int64_t start_time);

}  // namespace nodus::store
