#pragma once
// The store's schema as an ordered list of migrations. PRAGMA user_version records the last one
// applied; opening applies the missing ones in one BEGIN IMMEDIATE transaction, so concurrent
// processes opening a fresh file serialize and the schema is never half-built. A file whose
// version is newer than this binary knows is refused: an older nodus must not write to it.

#include <string>
#include <vector>

#include "store/sqlite.h"

namespace nodus::store {

struct Migration {
  int version;      // 1, 2, 3 ... in order, no gaps
  std::string sql;  // statements run as one script
};

// PRAGMA application_id of a nodus store ("nodu"): tells our file from another program's.
inline constexpr int kApplicationId = 0x6e6f6475;

const std::vector<Migration>& migrations();

// Per-connection settings: WAL (persistent once set), synchronous=NORMAL, foreign keys.
void configure_connection(Db& db);

// Brings the schema up to the last migration of `list`. Throws Fatal for a newer version, for a
// file that belongs to another program, or when a migration fails (rolled back entirely).
void migrate(Db& db, const std::vector<Migration>& list = migrations());

int schema_version(Db& db);

}  // namespace nodus::store
