#pragma once
// A temporary folder per test, removed with everything in it.

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace nodus::telemetry::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = std::filesystem::temp_directory_path() / "nodus-telemetry-XXXXXX";
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

  // Writes an executable script and returns its path.
  std::string script(const std::string& name, const std::string& text) const {
    std::string p = path_ + "/" + name;
    std::ofstream(p) << text;
    std::filesystem::permissions(p, std::filesystem::perms::owner_all);
    return p;
  }

 private:
  std::string path_;
};

}  // namespace nodus::telemetry::testing
