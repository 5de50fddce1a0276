#pragma once
// Files and folders nodus creates or reads, done safely: nothing planted in $NODUS_HOME (a
// symlink, a folder others can write) can redirect what nodus writes, and no input file (a FIFO,
// /dev/zero, a huge file) can hang nodus or exhaust its memory.

#include <sys/types.h>

#include <string>

#include "core/result.h"

namespace nodus {

// Creates `path` as a new file (O_CREAT|O_EXCL|O_NOFOLLOW) and returns its fd, opened for
// writing with `extra_flags` (e.g. O_APPEND) and O_CLOEXEC. A symlink or anything other than a
// regular file already there is refused; a regular file already there (left by an older store)
// is removed first, so nodus never writes through a name it did not create.
Result<int> create_new_file(const std::string& path, mode_t mode, int extra_flags = 0);

// Makes `path` a folder only its owner can use: created 0700 when missing; when present it must
// be a folder (not a symlink), owned by this user, and not writable by group or others, else an
// error says what is wrong and how to fix it; readable-by-others bits are removed. A symlink is
// followed only with follow_link (the top folder, $NODUS_HOME, may be one the user made); the
// folders nodus makes inside it must be folders, or a planted link would take the job logs, and
// the chmod, elsewhere.
Result<void> ensure_private_folder(const std::string& path, bool follow_link = true);

// Reads an input file that must be a regular file of at most max_bytes. `what` names it in
// errors ("price catalog"). Opening never blocks (a FIFO is refused, not waited on).
Result<std::string> read_input_file(const std::string& path, const std::string& what,
                                    size_t max_bytes);

// Opens a file that a job controls (its output, its metrics) for reading, never waiting on it:
// O_NONBLOCK | O_NOFOLLOW, and only a regular file is kept, so a FIFO (whose open would wait for
// a writer), a device or a symlink (to /dev/zero, to another user's file) is refused. Returns
// the descriptor; -1 when nothing is there yet (ENOENT); an error saying what the path is ("is a
// FIFO: not read (it must be a regular file)") when it is refused. Read it with a bounded budget.
Result<int> open_job_file(const std::string& path);

}  // namespace nodus
