#include "stages/search/json_wording.hpp"

#include <nlohmann/json.hpp>

namespace rpl::stages {

std::string json_type_phrase(const nlohmann::ordered_json& value) {
  using type = nlohmann::ordered_json::value_t;
  switch (value.type()) {
  case type::null: return "null";
  case type::boolean: return "a boolean";
  case type::string: return "a string";
  case type::array: return "an array";
  case type::object: return "an object";
  case type::binary: return "binary data";
  case type::discarded: return "discarded";
  default: return "a number";
  }
}

std::string in_double_quotes(std::string_view text) {
  return "\"" + std::string(text) + "\"";
}

} // namespace rpl::stages
