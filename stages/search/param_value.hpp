#pragma once
/// One parameter value of a search-space configuration, and the configuration itself.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace rpl::stages {

/// A parameter value exactly as the space file wrote it: integer, float or string.
using param_value = std::variant<std::int64_t, double, std::string>;

/// The text substituted into command templates: integers plainly, doubles as the shortest text that
/// reads back to the same double (so 0.1 stays "0.1" and 2.0 becomes "2"), strings as they are.
std::string to_string(const param_value& value);

/// The value as a JSON scalar of the matching type.
nlohmann::json to_json_value(const param_value& value);
/// A JSON scalar as a value: integers stay integers, other numbers doubles, booleans 0/1, text
/// text; nullopt for anything else.
std::optional<param_value> from_json_value(const nlohmann::json& value);

/// One point of the search space: parameter name/value pairs in the space's parameter order.
struct configuration {
  std::vector<std::pair<std::string, param_value>> params;

  /// The value of parameter `name`, or nullptr when the configuration has no such parameter.
  const param_value* find(std::string_view name) const;

  /// name -> to_string(value), the form command templates expand with.
  std::map<std::string, std::string> as_strings() const;

  /// A JSON object {name: value}. nlohmann::json sorts keys, so the parameter order is not kept;
  /// `params` is the ordered form.
  nlohmann::json to_json() const;
};

} // namespace rpl::stages
