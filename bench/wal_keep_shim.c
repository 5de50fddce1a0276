// wal_keep_shim: an LD_PRELOAD library for a what-if measurement in bench/run.sh, never used by
// nodus itself. It opens every SQLite connection the way store/sqlite.cc could: the write-ahead
// log is kept when the last connection closes (SQLITE_FCNTL_PERSIST_WAL) and closing does not
// checkpoint (SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE). Without it each short-lived nodus process that
// is the store's only user creates the WAL on open (fdatasync of the WAL and of the folder) and
// checkpoints and deletes it on close (two more fdatasyncs): four disk flushes per `nodus run`.
// Checkpoints still happen, automatically, every 1000 WAL pages.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sqlite3.h>

int sqlite3_open_v2(const char* filename, sqlite3** db, int flags, const char* vfs) {
  static int (*real_open)(const char*, sqlite3**, int, const char*);
  if (!real_open) real_open = (int (*)(const char*, sqlite3**, int, const char*))dlsym(RTLD_NEXT, "sqlite3_open_v2");
  int rc = real_open(filename, db, flags, vfs);
  if (rc == SQLITE_OK) {
    sqlite3_db_config(*db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int*)0);
    int persist = 1;
    sqlite3_file_control(*db, "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
  }
  return rc;
}
