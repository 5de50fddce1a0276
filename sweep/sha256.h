#pragma once
// SHA-256 (FIPS 180-4), implemented here so cell keys need no crypto library. Used for stable
// identifiers, not for security.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace nodus::sweep {

class Sha256 {
 public:
  Sha256();
  void update(std::string_view data);
  std::array<uint8_t, 32> finish();  // the object must not be updated afterwards

 private:
  void block(const uint8_t* p);

  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_{};
  size_t buf_len_ = 0;
  uint64_t total_bytes_ = 0;
};

// Lowercase hex digest of data: 64 characters.
std::string sha256_hex(std::string_view data);

}  // namespace nodus::sweep
