#pragma once
// A fresh folder for one test (under $TMPDIR, else /tmp), removed with everything in it afterwards.
// Shared by the suites that need a scratch folder or a store of their own.

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace nodus::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "nodus-test-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) std::abort();
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  std::string db() const { return file("nodus.db"); }

 private:
  std::string path_;
};

}  // namespace nodus::testing
