#pragma once
// JsonValue holds one JSON value (an empty object until set) behind a pointer, so that a struct
// with a JSON member (JobRecord's options and params) can be declared with only
// <nlohmann/json_fwd.hpp>: the headers that every file includes then do not make each of them
// parse all of <nlohmann/json.hpp>. The files that read or build the value include it.
// Value semantics: copies are deep, a moved-from JsonValue is an empty object again.

#include <iosfwd>
#include <memory>
#include <nlohmann/json_fwd.hpp>

namespace nodus {

class JsonValue {
 public:
  JsonValue() noexcept;     // {} (allocates nothing until written)
  static JsonValue null();  // a JSON null instead of {}
  JsonValue(const JsonValue& other);
  JsonValue(JsonValue&& other) noexcept;
  JsonValue& operator=(const JsonValue& other);
  JsonValue& operator=(JsonValue&& other) noexcept;
  JsonValue& operator=(nlohmann::json value);
  ~JsonValue();

  nlohmann::json& operator*();
  const nlohmann::json& operator*() const;
  nlohmann::json* operator->() { return &**this; }
  const nlohmann::json* operator->() const { return &**this; }

  friend bool operator==(const JsonValue& a, const JsonValue& b);

 private:
  std::unique_ptr<nlohmann::json> value_;  // null: an empty object
};

std::ostream& operator<<(std::ostream& out, const JsonValue& value);  // as dump()

}  // namespace nodus
