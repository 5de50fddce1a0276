#pragma once
// Store is nodus's one SQLite file ($NODUS_HOME/nodus.db, WAL): jobs, GPU claims, sweeps,
// metric and telemetry series. Every method is one transaction (or part of together()'s);
// read-then-write ones use BEGIN IMMEDIATE so concurrent nodus processes serialize instead of
// failing with SQLITE_BUSY.
// Errors (locked too long, corrupt, unwritable) throw nodus::Fatal with the path in the message.
// One Store may be shared by the threads of a process (calls are serialized); each process
// opens its own (never use a Store across fork()).

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/job.h"
#include "core/json_value.h"
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
  // grid, options: whatever defines the cells (for resume); null until set
  JsonValue definition = JsonValue::null();
  std::string definition_hash;
  std::string state = "running";  // running, then sweep_outcome's (engine/sweep_scheduler.h)
  std::optional<double> budget;
  double created_at = 0;
  std::optional<double> ended_at;
  int64_t supervisor_pid = 0;
  int64_t supervisor_start = 0;
  // Set on reading, never stored: the columns of this row that could not be read ("the store's
  // definition of sweep 3 is unreadable (not JSON)"); they are read empty, so that one damaged
  // row does not make every listing fail. Such a sweep cannot be resumed.
  std::string damaged;
};

struct JobStats;  // store/job_stats.h
class GpuWaiter;  // store/gpu_queue.h

// Listing order is newest first (by id).
struct JobFilter {
  bool all = false;  // true: every job (limit ignored); false: every active job plus the
  int limit = 50;    // `limit` most recent finished ones
  std::optional<int64_t> sweep_id;  // only the jobs of this sweep
};

class Store {
 public:
  // Opens (creating folder (0700) and file as needed) and migrates. Throws Fatal on failure.
  // busy_timeout: how long a call waits for another process's write lock before giving up.
  static std::unique_ptr<Store> open(const std::string& path,
                                     std::chrono::milliseconds busy_timeout = kBusyTimeout);
  static constexpr std::chrono::milliseconds kBusyTimeout{10'000};
  // Opens an existing store for reading only, as it is: for listings where the store cannot be
  // written (a read-only file system or file, a folder of someone else's). Nothing is migrated
  // or reconciled; a write through it throws Fatal. Throws Fatal when it cannot be read.
  static std::unique_ptr<Store> open_read_only(
      const std::string& path, std::chrono::milliseconds busy_timeout = kBusyTimeout);
  bool read_only() const { return read_only_; }
  static std::string default_path();  // nodus_home() + "/nodus.db"
  ~Store();

  const std::string& path() const { return path_; }
  std::string folder() const;  // where logs/ and metrics/ live

  // --- jobs ---
  // Inserts the row (state from the record) and returns its id (ids are never reused).
  // Env values whose names look secret (is_secret_name) are stored as kRedacted.
  int64_t insert_job(const JobRecord& job);
  void update_job(const JobRecord& job);  // writes every column; throws Fatal if no such id
  std::optional<JobRecord> job(int64_t id);
  // By id ("12"), or by name (the newest job of that name).
  std::optional<JobRecord> find_job(const std::string& id_or_name);
  std::vector<JobRecord> jobs(const JobFilter& filter);
  // The jobs `jobs(filter)` returns, in its order, handed to `each` one at a time and `passes`
  // times over one snapshot of the store: a listing that measures its rows before it prints them
  // sees the same rows both times. With filter.all, memory stays flat in the number of jobs, and
  // the records carry only what a listing shows (store/job_rows.h, JobColumns::kListing).
  void each_job(const JobFilter& filter, int passes,
                const std::function<void(int pass, const JobRecord&)>& each);
  std::vector<JobRecord> active_jobs();  // waiting, starting, running

  // Marks every active local job whose supervisor is dead as lost, GPUs freed. Its job died with
  // its supervisor (sentinel, PR_SET_PDEATHSIG), so it is billed up to the supervisor's last
  // heartbeat (write_tick), never past its --max-cost, its sweep budget share or its timeout
  // plus grace; the note says "billed to its last heartbeat at ...". A started job without a
  // heartbeat (a store from before heartbeats) is billed to now, capped the same way. Slurm
  // jobs are reconciled through their backend. Returns the ids changed. `ps` and `run` call it.
  std::vector<int64_t> reconcile_dead_supervisors();

  // --- GPUs ---
  // Atomically claims `count` free GPUs of `type` for job_id, owned by the given supervisor
  // (pid + start time). Claims of dead owners are freed first. A GPU is free when no job of this
  // store claims it and no other store on the machine holds its lock (gpu_locks.h), which the
  // calling process then holds until release_gpus or its exit. Returns the indices, or nullopt
  // when not enough are free now. Lowest free indices first; the job's gpu_indices are updated.
  // The claim leaves free what the oldest waiter for that type queued before `waiting` needs
  // (gpu_queue.h; before any claimant that is not waiting: nullptr): it fails, as when busy,
  // when it would take GPUs such a waiter needs.
  std::optional<std::vector<int>> claim_gpus(int64_t job_id, const std::string& type, int count,
                                             const std::vector<Gpu>& inventory, int64_t owner_pid,
                                             int64_t owner_start,
                                             const GpuWaiter* waiting = nullptr);
  void release_gpus(int64_t job_id);  // deletes the job's claims; this process's locks go too
  // Indices currently claimed (live owners only).
  std::vector<int> claimed_gpus();

  // --- sweeps ---
  int64_t insert_sweep(const SweepRecord& sweep);
  void update_sweep(const SweepRecord& sweep);
  std::optional<SweepRecord> sweep(int64_t id);
  std::optional<SweepRecord> find_sweep(const std::string& id_or_name);  // "s12", "12" or name
  std::vector<SweepRecord> sweeps(int limit);                            // newest first
  // The newest attempt per cell_index, ordered by cell_index.
  std::vector<JobRecord> sweep_cells(int64_t sweep_id);
  // What a sweep has cost: every attempt of every cell, finished or not (running attempts count
  // what they have cost so far, as their rows say).
  double sweep_spent(int64_t sweep_id);

  // --- series --- (each add_* call is one transaction; reads are ordered by time; points whose
  // time or required value is NaN or infinite are dropped)
  void add_metrics(int64_t job_id, const std::vector<MetricPoint>& points);
  std::vector<MetricPoint> metrics(int64_t job_id);
  // The newest value of each metric the job reported (sweep tables rank and show them).
  std::map<std::string, double> last_metrics(int64_t job_id);
  void add_gpu_samples(int64_t job_id, const std::vector<GpuSample>& samples);
  std::vector<GpuSample> gpu_samples(int64_t job_id);
  void add_host_samples(int64_t job_id, const std::vector<HostSample>& samples);
  std::vector<HostSample> host_samples(int64_t job_id);
  // Whether the job has any GPU sample, host sample or metric point (three index lookups).
  bool has_series(int64_t job_id);
  // One sampling tick of a running job in one transaction: its heartbeat (the supervisor was
  // alive and enforcing at that time; a lost job is billed up to it) and its new samples.
  struct SeriesBatch {
    std::optional<double> heartbeat;  // unix seconds
    std::vector<GpuSample> gpu;
    std::vector<HostSample> host;
    std::vector<MetricPoint> metrics;
  };
  void write_tick(int64_t job_id, const SeriesBatch& batch);
  std::optional<double> heartbeat(int64_t job_id);  // the last one written, if any
  void put_stats(const JobStats& stats);            // merges keys into the job's stats
  std::optional<JobStats> stats(int64_t job_id);

  // --- spend ---
  // Jobs that started at or after `since` and before `until` (unbounded when empty), grouped
  // by the local day they started on (ascending), or most expensive first by GPU type (CPU-only
  // jobs left out unless with_cpu_only, then keyed ""), by sweep ("s3"; "" for jobs outside
  // sweeps) or by name ("" for unnamed jobs).
  // Finished jobs count their stored cost; running ones what they have cost up to now.
  struct SpendRow {
    std::string key;  // day (YYYY-MM-DD, local time), GPU type, sweep id or job name
    int jobs = 0;
    double gpu_hours = 0;
    double cost = 0;
  };
  std::vector<SpendRow> spend_by_day(std::optional<double> since,
                                     std::optional<double> until = std::nullopt);
  std::vector<SpendRow> spend_by_gpu(std::optional<double> since,
                                     std::optional<double> until = std::nullopt,
                                     bool with_cpu_only = false);
  // Both of the above from one walk of the jobs (what `nodus cost` shows by default).
  std::pair<std::vector<SpendRow>, std::vector<SpendRow>> spend_by_day_and_gpu(
      std::optional<double> since, std::optional<double> until, bool with_cpu_only);
  std::vector<SpendRow> spend_by_sweep(std::optional<double> since, std::optional<double> until);
  std::vector<SpendRow> spend_by_name(std::optional<double> since, std::optional<double> until);
  // The rows of the two above handed to `each` one at a time, `passes` times (a listing that
  // measures its rows before it prints them): memory stays flat however many sweeps or names.
  void each_spend_by_sweep(std::optional<double> since, std::optional<double> until, int passes,
                           const std::function<void(int pass, const SpendRow&)>& each);
  void each_spend_by_name(std::optional<double> since, std::optional<double> until, int passes,
                          const std::function<void(int pass, const SpendRow&)>& each);

  std::string integrity_check();  // "ok" when healthy

  // Runs `writes` (calls of this Store's methods, from this thread) as one transaction: all of
  // them are stored or, when one throws, none. Each commit costs SQLite's locking and a
  // write of every page it changed to the WAL, which the next process to open the store reads
  // back: a launch's rows written together are one commit and fewer pages.
  void together(const std::function<void()>& writes);

  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  struct Impl;

 private:
  Store(std::string path, std::unique_ptr<Impl> impl);
  std::string path_;
  std::unique_ptr<Impl> impl_;
  bool read_only_ = false;
};

// Start time of a process from /proc/<pid>/stat (field 22), 0 if it does not exist.
int64_t process_start_time(int64_t pid);
// True when pid exists and its start time matches (a reused pid is not alive for us).
bool process_alive(int64_t pid, int64_t start_time);

}  // namespace nodus::store
