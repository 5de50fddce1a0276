#include "core/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace nodus {
namespace {

std::string octal(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

}  // namespace

Result<int> create_new_file(const std::string& path, mode_t mode, int extra_flags) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    int fd = ::open(path.c_str(),
                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | extra_flags, mode);
    if (fd >= 0) return fd;
    if (errno != EEXIST)
      return Error::permanent("cannot create '" + path + "': " + std::strerror(errno), 125);
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) continue;  // removed meanwhile: try again
    if (S_ISLNK(st.st_mode))
      return Error::permanent(
          "refusing to write '" + path + "': it is a symbolic link nodus did not create; remove it",
          125);
    if (!S_ISREG(st.st_mode))
      return Error::permanent("refusing to write '" + path + "': it exists and is not a file", 125);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      return Error::permanent("cannot replace '" + path + "': " + std::strerror(errno), 125);
  }
  return Error::permanent("cannot create '" + path + "': it keeps reappearing", 125);
}

Result<void> ensure_private_folder(const std::string& path, bool follow_link) {
  if (::mkdir(path.c_str(), 0700) == 0) return Result<void>();
  if (errno != EEXIST)
    return Error::permanent("cannot create folder '" + path + "': " + std::strerror(errno), 125);
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0)
    return Error::permanent("cannot use folder '" + path + "': " + std::strerror(errno), 125);
  if (S_ISLNK(st.st_mode) && !follow_link)
    return Error::permanent("refusing to use folder '" + path +
                                "': it is a symbolic link; nodus keeps it a folder of its own "
                                "(remove the link)",
                            125);
  if (S_ISLNK(st.st_mode)) {
    // The top folder ($NODUS_HOME) may be a link the user made; what it points to is checked.
    if (::stat(path.c_str(), &st) != 0)
      return Error::permanent("cannot use folder '" + path + "': " + std::strerror(errno), 125);
  }
  if (!S_ISDIR(st.st_mode))
    return Error::permanent("cannot use '" + path + "': it is not a folder", 125);
  if (st.st_uid != ::geteuid())
    return Error::permanent("refusing to use folder '" + path + "': it belongs to uid " +
                                std::to_string(st.st_uid) + ", not to you (uid " +
                                std::to_string(::geteuid()) + ")",
                            125);
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return Error::permanent("refusing to use folder '" + path + "': others can write to it (mode " +
                                octal(st.st_mode) + "); run chmod 700 '" + path + "'",
                            125);
  if (st.st_mode & 0077) ::chmod(path.c_str(), st.st_mode & 0700);  // logs may hold secrets
  return Result<void>();
}

Result<std::string> read_input_file(const std::string& path, const std::string& what,
                                    size_t max_bytes) {
  auto fail = [&](const std::string& why) {
    return Error::permanent("cannot read " + what + " '" + path + "': " + why);
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return fail(std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return fail(std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail(S_ISDIR(st.st_mode) ? "it is a folder" : "not a regular file");
  }
  if (static_cast<size_t>(st.st_size) > max_bytes) {
    ::close(fd);
    return fail("larger than the limit of " + std::to_string(max_bytes) + " bytes");
  }
  std::string text;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return fail(std::strerror(err));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > max_bytes) {  // grew while being read
      ::close(fd);
      return fail("larger than the limit of " + std::to_string(max_bytes) + " bytes");
    }
  }
  ::close(fd);
  return text;
}

Result<int> open_job_file(const std::string& path) {
  auto refuse = [&](const std::string& what) {
    return Error::permanent(path + " " + what + ": not read (it must be a regular file)");
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    if (errno == ENOENT) return -1;
    if (errno == ELOOP) return refuse("is a symbolic link");
    return Error::permanent("cannot read " + path + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return Error::permanent("cannot read " + path + ": " + std::strerror(err));
  }
  if (S_ISREG(st.st_mode)) return fd;
  ::close(fd);
  if (S_ISFIFO(st.st_mode)) return refuse("is a FIFO");
  if (S_ISSOCK(st.st_mode)) return refuse("is a socket");
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) return refuse("is a device");
  if (S_ISDIR(st.st_mode)) return refuse("is a folder");
  return refuse("is not a regular file");
}

}  // namespace nodus
