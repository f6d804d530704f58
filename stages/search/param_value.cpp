#include "stages/search/param_value.hpp"

#include <array>
#include <charconv>
#include <system_error>

#include <nlohmann/json.hpp>

namespace rpl::stages {

std::string to_string(const param_value& value) {
  if (const auto* integer = std::get_if<std::int64_t>(&value)) {
    return std::to_string(*integer);
  }
  if (const auto* real = std::get_if<double>(&value)) {
    // std::to_chars without a precision is the shortest round-trip form and is locale-independent,
    // unlike printf, so the same space expands to the same command everywhere.
    std::array<char, 64> buffer{};
    const auto [end, error] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), *real);
    if (error != std::errc{}) {
      return "nan";
    }
    return std::string(buffer.data(), end);
  }
  return std::get<std::string>(value);
}

nlohmann::json to_json_value(const param_value& value) {
  return std::visit([](const auto& held) { return nlohmann::json(held); }, value);
}

const param_value* configuration::find(std::string_view name) const {
  for (const auto& [key, value] : params) {
    if (key == name) {
      return &value;
    }
  }
  return nullptr;
}

std::map<std::string, std::string> configuration::as_strings() const {
  std::map<std::string, std::string> strings;
  for (const auto& [key, value] : params) {
    strings.emplace(key, to_string(value));
  }
  return strings;
}

nlohmann::json configuration::to_json() const {
  nlohmann::json object = nlohmann::json::object();
  for (const auto& [key, value] : params) {
    object[key] = to_json_value(value);
  }
  return object;
}

std::optional<param_value> from_json_value(const nlohmann::json& value) {
  if (value.is_number_integer())
    return param_value(value.get<std::int64_t>());
  if (value.is_number_float())
    return param_value(value.get<double>());
  if (value.is_string())
    return param_value(value.get<std::string>());
  if (value.is_boolean())
    return param_value(static_cast<std::int64_t>(value.get<bool>()));
  return std::nullopt;
}

} // namespace rpl::stages
