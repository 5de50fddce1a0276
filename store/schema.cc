#include "store/schema.h"

#include "core/error.h"

namespace nodus::store {
namespace {

// Migration 1: everything. Times are unix seconds (REAL); JSON columns hold text.
const char* const kSchemaV1 = R"sql(
CREATE TABLE sweeps (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  backend TEXT NOT NULL,
  argv TEXT NOT NULL,
  definition TEXT NOT NULL,
  definition_hash TEXT NOT NULL,
  state TEXT NOT NULL,
  budget REAL,
  created_at REAL NOT NULL,
  ended_at REAL,
  supervisor_pid INTEGER NOT NULL,
  supervisor_start INTEGER NOT NULL
);
CREATE INDEX sweeps_name ON sweeps(name);

CREATE TABLE jobs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  backend TEXT NOT NULL,
  backend_id TEXT NOT NULL,
  argv TEXT NOT NULL,
  env TEXT NOT NULL,
  workdir TEXT NOT NULL,
  image TEXT NOT NULL,
  gpu_type TEXT NOT NULL,
  gpu_count INTEGER NOT NULL,
  gpu_indices TEXT NOT NULL,
  inventory_source TEXT NOT NULL,
  rate_per_gpu_hour REAL NOT NULL,
  max_cost REAL,
  timeout_ms INTEGER,
  grace_ms INTEGER NOT NULL,
  options TEXT NOT NULL,
  state TEXT NOT NULL,
  exit_code INTEGER,
  signal INTEGER,
  created_at REAL NOT NULL,
  started_at REAL,
  ended_at REAL,
  cost REAL NOT NULL,
  supervisor_pid INTEGER NOT NULL,
  supervisor_start INTEGER NOT NULL,
  log_path TEXT NOT NULL,
  metrics_path TEXT NOT NULL,
  note TEXT NOT NULL,
  sweep_id INTEGER REFERENCES sweeps(id),
  cell_index INTEGER NOT NULL,
  cell_key TEXT NOT NULL,
  params TEXT NOT NULL
);
CREATE INDEX jobs_state ON jobs(state);
CREATE INDEX jobs_sweep_cell ON jobs(sweep_id, cell_index);
CREATE INDEX jobs_name ON jobs(name);
CREATE INDEX jobs_created ON jobs(created_at);
-- Starts with started_at (time ranges) and covers the spend summaries, so they walk this index
-- in start order and never read the wide job rows.
CREATE INDEX jobs_spend ON jobs(started_at, gpu_type, gpu_count, rate_per_gpu_hour, ended_at, cost);

CREATE TABLE gpu_claims (
  gpu_index INTEGER PRIMARY KEY,
  gpu_type TEXT NOT NULL,
  job_id INTEGER NOT NULL REFERENCES jobs(id),
  owner_pid INTEGER NOT NULL,
  owner_start INTEGER NOT NULL
);
CREATE INDEX gpu_claims_job ON gpu_claims(job_id);

CREATE TABLE metrics (
  job_id INTEGER NOT NULL REFERENCES jobs(id),
  t REAL NOT NULL,
  name TEXT NOT NULL,
  value REAL NOT NULL
);
CREATE INDEX metrics_job ON metrics(job_id, t);

CREATE TABLE gpu_samples (
  job_id INTEGER NOT NULL REFERENCES jobs(id),
  t REAL NOT NULL,
  gpu_index INTEGER NOT NULL,
  util_gpu REAL NOT NULL,
  util_mem REAL,
  mem_used_mib REAL,
  power_w REAL,
  sm_clock_mhz REAL,
  pcie_rx_kbs REAL,
  pcie_tx_kbs REAL
);
CREATE INDEX gpu_samples_job ON gpu_samples(job_id, t);

CREATE TABLE host_samples (
  job_id INTEGER NOT NULL REFERENCES jobs(id),
  t REAL NOT NULL,
  cpu_percent REAL NOT NULL,
  cores INTEGER NOT NULL,
  nprocs INTEGER NOT NULL,
  rss_mib REAL NOT NULL,
  max_process_cpu_percent REAL NOT NULL
);
CREATE INDEX host_samples_job ON host_samples(job_id, t);

CREATE TABLE job_stats (
  job_id INTEGER PRIMARY KEY REFERENCES jobs(id),
  json TEXT NOT NULL
);
)sql";

// Migration 3: the supervisor's heartbeat, written every sampling tick; a job whose supervisor
// died is billed up to it. (Version 2 is another change's.)
const char* const kSchemaV3 = R"sql(
ALTER TABLE jobs ADD COLUMN heartbeat_at REAL;
)sql";

// Migration 4: the spend summaries by sweep and by job name walk an index in group order, each
// group's jobs in start order (the order jobs_spend gives), so they aggregate one group at a time
// and never read the wide job rows.
const char* const kSchemaV4 = R"sql(
CREATE INDEX jobs_spend_sweep ON jobs(sweep_id, started_at, gpu_type, gpu_count, rate_per_gpu_hour,
                                      ended_at, cost);
CREATE INDEX jobs_spend_name ON jobs(name, started_at, gpu_type, gpu_count, rate_per_gpu_hour,
                                     ended_at, cost);
)sql";

int pragma_int(Db& db, const std::string& pragma) {
  auto stmt = db.prepare("PRAGMA " + pragma);
  return stmt.step() ? stmt.i32(0) : 0;
}

}  // namespace

const std::vector<Migration>& migrations() {
  static const std::vector<Migration> list = {
      {1, kSchemaV1},
      {3, kSchemaV3},
      {4, kSchemaV4},
  };
  return list;
}

int schema_version(Db& db) { return pragma_int(db, "user_version"); }

void configure_connection(Db& db) {
  // Changing the journal mode takes an exclusive lock: only do it on a file not yet in WAL.
  std::string mode;
  {
    auto stmt = db.prepare("PRAGMA journal_mode");
    if (stmt.step()) mode = stmt.text(0);
  }
  if (mode != "wal") {
    auto stmt = db.prepare("PRAGMA journal_mode=WAL");
    if (stmt.step()) mode = stmt.text(0);
    if (mode != "wal")
      db.fail_message("cannot switch to write-ahead logging (journal mode is " + mode + ")");
  }
  db.exec("PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON");
}

static void check_version(Db& db, int version, int latest) {
  if (version > latest)
    throw Fatal("store " + db.path() + " has schema version " + std::to_string(version) +
                "; this nodus knows up to " + std::to_string(latest) + ": upgrade nodus");
  if (version > 0 && pragma_int(db, "application_id") != kApplicationId)
    throw Fatal("store " + db.path() +
                " is not a nodus database or is corrupt: another program's SQLite file; move it "
                "away to start fresh");
}

void migrate(Db& db, const std::vector<Migration>& list) {
  const int latest = list.empty() ? 0 : list.back().version;
  int version = schema_version(db);
  check_version(db, version, latest);
  if (version == latest) return;

  Transaction tx(db, Transaction::Mode::kImmediate);
  version = schema_version(db);  // another process may have migrated while we waited
  check_version(db, version, latest);
  if (version == latest) return;  // rolls back the empty transaction
  if (version == 0) {
    auto stmt = db.prepare("SELECT count(*) FROM sqlite_master");
    if (stmt.step() && stmt.i64(0) > 0)
      throw Fatal("store " + db.path() +
                  " is not a nodus database or is corrupt: it holds another program's tables; "
                  "move it away to start fresh");
  }
  for (const Migration& m : list) {
    if (m.version <= version) continue;
    db.exec(m.sql);
  }
  db.exec("PRAGMA user_version=" + std::to_string(latest) +
          "; PRAGMA application_id=" + std::to_string(kApplicationId));
  tx.commit();
}

}  // namespace nodus::store
