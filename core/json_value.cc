#include "core/json_value.h"

#include <nlohmann/json.hpp>
#include <ostream>

namespace nodus {

namespace {
const nlohmann::json& empty_object() {
  static const nlohmann::json empty = nlohmann::json::object();
  return empty;
}
}  // namespace

JsonValue::JsonValue() noexcept = default;
JsonValue::JsonValue(const JsonValue& other)
    : value_(other.value_ ? std::make_unique<nlohmann::json>(*other.value_) : nullptr) {}
JsonValue::JsonValue(JsonValue&& other) noexcept = default;
JsonValue& JsonValue::operator=(const JsonValue& other) {
  if (this != &other)
    value_ = other.value_ ? std::make_unique<nlohmann::json>(*other.value_) : nullptr;
  return *this;
}
JsonValue& JsonValue::operator=(JsonValue&& other) noexcept = default;
JsonValue& JsonValue::operator=(nlohmann::json value) {
  if (value_)
    *value_ = std::move(value);
  else
    value_ = std::make_unique<nlohmann::json>(std::move(value));
  return *this;
}
JsonValue::~JsonValue() = default;

JsonValue JsonValue::null() {
  JsonValue v;
  v = nlohmann::json();
  return v;
}

nlohmann::json& JsonValue::operator*() {
  if (!value_) value_ = std::make_unique<nlohmann::json>(nlohmann::json::object());
  return *value_;
}
const nlohmann::json& JsonValue::operator*() const { return value_ ? *value_ : empty_object(); }

bool operator==(const JsonValue& a, const JsonValue& b) { return *a == *b; }

std::ostream& operator<<(std::ostream& out, const JsonValue& value) {
  return out << (*value).dump();
}

}  // namespace nodus
