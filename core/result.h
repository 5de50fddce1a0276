#pragma once
// Expected failures travel as values: Result<T> holds either a T or an Error. [[nodiscard]]: a
// failure that nobody looks at is a bug (the stop path once ignored five); discard on purpose
// with (void) and a comment saying why.
// Misconfiguration and bad input throw nodus::Fatal (error.h), caught once in main().

#include <string>
#include <utility>
#include <variant>

namespace nodus {

struct Error {
  enum class Kind { kPermanent, kRetryable };
  Kind kind = Kind::kPermanent;
  std::string message;
  int exit_code = 125;  // what main() returns when this error ends the program

  static Error permanent(std::string msg, int code = 125) {
    return {Kind::kPermanent, std::move(msg), code};
  }
  static Error retryable(std::string msg) { return {Kind::kRetryable, std::move(msg), 125}; }
  bool retryable() const { return kind == Kind::kRetryable; }
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error error) : v_(std::move(error)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

}  // namespace nodus
