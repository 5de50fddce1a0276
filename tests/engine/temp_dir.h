#pragma once
// A fresh folder under /tmp for one test's store, removed with everything in it afterwards.

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace nodus::engine::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = "/tmp/nodus-engine-test-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) std::abort();
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string db() const { return path_ + "/nodus.db"; }

 private:
  std::string path_;
};

}  // namespace nodus::engine::testing
