#include "stages/search/space.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <system_error>
#include <utility>

#include <nlohmann/json.hpp>

#include "stages/search/expression.hpp"
#include "stages/search/json_wording.hpp"

namespace rpl::stages {

namespace {

// ordered_json keeps object keys in the order written, which fixes the parameter order.
using ojson = nlohmann::ordered_json;

const char* const value_fix = "fix: use an integer, a float or a string";

[[noreturn]] void fail(const std::string& origin, const std::string& message) {
  throw space_error(origin + ": " + message);
}

// nlohmann reports the byte count read so far; people fix files by line and column.
std::pair<std::size_t, std::size_t> line_column(std::string_view text, std::size_t byte) {
  const std::size_t offset = std::min(byte == 0 ? 0 : byte - 1, text.size());
  std::size_t line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return {line, offset - line_start + 1};
}

// The part of nlohmann's message after its own "[json.exception...] parse error at ...: " prefix.
std::string parse_error_detail(const std::string& what) {
  const std::size_t parse_error = what.find("parse error");
  const std::size_t colon = what.find(": ", parse_error == std::string::npos ? 0 : parse_error);
  return colon == std::string::npos ? what : what.substr(colon + 2);
}

ojson parse_json(std::string_view text, const std::string& origin) {
  // nlohmann keeps the last of two equal keys silently; a duplicated parameter would then vanish
  // without a word, so duplicates are found with the parser callback.
  std::vector<std::set<std::string>> keys_by_depth;
  std::optional<std::string> duplicate;
  const ojson::parser_callback_t callback = [&](int, ojson::parse_event_t event, ojson& parsed) {
    switch (event) {
    case ojson::parse_event_t::object_start: keys_by_depth.emplace_back(); break;
    case ojson::parse_event_t::object_end:
      if (!keys_by_depth.empty())
        keys_by_depth.pop_back();
      break;
    case ojson::parse_event_t::key:
      if (!keys_by_depth.empty() &&
          !keys_by_depth.back().insert(parsed.get<std::string>()).second && !duplicate) {
        duplicate = parsed.get<std::string>();
      }
      break;
    default: break;
    }
    return true;
  };
  try {
    ojson document = ojson::parse(text.begin(), text.end(), callback);
    if (duplicate) {
      fail(origin, "the key " + in_double_quotes(*duplicate) +
                       " appears twice in one object, and JSON readers would silently keep only "
                       "the last; fix: remove or rename one of them");
    }
    return document;
  } catch (const ojson::parse_error& error) {
    const auto [line, column] = line_column(text, error.byte);
    fail(origin, "line " + std::to_string(line) + ", column " + std::to_string(column) +
                     ": invalid JSON: " + parse_error_detail(error.what()) +
                     "; fix: correct the JSON syntax at that position");
  } catch (const ojson::out_of_range& error) {
    // A number beyond a double (1e400). nlohmann quotes it but says not where it is: the place
    // given is where that text first appears (found by tests/fuzz/fuzz_space).
    const std::string what = error.what();
    const std::size_t open = what.find('\'');
    const std::size_t close = what.rfind('\'');
    std::string number = "a number";
    std::string place;
    if (open != std::string::npos && close > open + 1) {
      number = what.substr(open + 1, close - open - 1);
      if (const std::size_t at = text.find(number); at != std::string_view::npos) {
        const auto [line, column] = line_column(text, at + 1);
        place = "line " + std::to_string(line) + ", column " + std::to_string(column) + ": ";
      }
    }
    fail(origin, place + number +
                     " is too large for a 64-bit float; fix: use a smaller number, or a string");
  }
}

void check_name(const std::string& name, const std::string& origin, const std::string& where) {
  const bool well_formed =
      !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_') &&
      std::all_of(name.begin(), name.end(),
                  [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
  if (!well_formed) {
    fail(origin, where + ": parameter name " + in_double_quotes(name) +
                     " is not a valid name; fix: use letters, digits and _ only, not starting "
                     "with a digit (it becomes the placeholder {NAME})");
  }
  if (name == "OUT" || name == "BIN") {
    fail(origin, where + ": parameter name " + in_double_quotes(name) +
                     " is reserved for the placeholder {" + name +
                     "}, which the engine fills in; fix: rename the parameter");
  }
  if (name == "and" || name == "or" || name == "not") {
    fail(origin, where + ": parameter name " + in_double_quotes(name) +
                     " is an operator of the constraint language; fix: rename the parameter");
  }
}

param_value to_value(const ojson& value, const std::string& origin, const std::string& where) {
  if (value.is_number_unsigned()) {
    const auto unsigned_value = value.get<std::uint64_t>();
    if (unsigned_value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      fail(origin, where + ": " + value.dump() + " does not fit a 64-bit signed integer; " +
                       "fix: use a smaller integer or a string");
    }
    return static_cast<std::int64_t>(unsigned_value);
  }
  if (value.is_number_integer()) {
    return value.get<std::int64_t>();
  }
  if (value.is_number_float()) {
    return value.get<double>();
  }
  if (value.is_string()) {
    return value.get<std::string>();
  }
  fail(origin, where + ": the value is " + json_type_phrase(value) + "; " + value_fix);
}

// Two values are duplicates when they expand to the same text: 8 and 8.0 and "8" all give the
// same command line, so they would be the same candidate under different names.
std::string joined_key(const configuration& config) {
  std::string key;
  for (const auto& [name, value] : config.params) {
    const std::string text = to_string(value);
    key += std::to_string(text.size()) + ":" + text;
  }
  return key;
}

std::string describe(const configuration& config) {
  std::string text;
  for (const auto& [name, value] : config.params) {
    text += (text.empty() ? "" : ", ") + name + "=" + to_string(value);
  }
  return text;
}

space parse_explicit_list(const ojson& list, space result) {
  const std::string& origin = result.origin;
  if (list.empty()) {
    fail(origin, "the list of configurations is empty; fix: add at least one object such as "
                 "{\"TILE\": 16}, or use {\"params\": {...}}");
  }
  std::map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const ojson& item = list[i];
    const std::string where = "[" + std::to_string(i) + "]";
    if (!item.is_object()) {
      fail(origin, where + ": the configuration is " + json_type_phrase(item) +
                       ", expected an object; fix: write it as {\"NAME\": value, ...}");
    }
    if (item.empty()) {
      fail(origin, where + ": the configuration has no parameters; fix: give it the same "
                           "parameters as the others, e.g. {\"TILE\": 16}");
    }
    if (i == 0) {
      for (const auto& entry : item.items()) {
        check_name(entry.key(), origin, where);
        result.names.push_back(entry.key());
      }
    } else {
      for (const std::string& name : result.names) {
        if (!item.contains(name)) {
          fail(origin, where + ": the configuration lacks " + in_double_quotes(name) +
                           ", which [0] has; fix: give every configuration the same parameters");
        }
      }
      for (const auto& entry : item.items()) {
        if (std::find(result.names.begin(), result.names.end(), entry.key()) ==
            result.names.end()) {
          fail(origin, where + ": the configuration has " + in_double_quotes(entry.key()) +
                           ", which [0] lacks; fix: give every configuration the same parameters");
        }
      }
    }
    configuration config;
    for (const std::string& name : result.names) {
      config.params.emplace_back(name, to_value(item.at(name), origin, where + "." + name));
    }
    const auto [previous, inserted] = seen.emplace(joined_key(config), i);
    if (!inserted) {
      fail(origin, where + ": the configuration " + describe(config) + " repeats [" +
                       std::to_string(previous->second) + "]; fix: remove one of them");
    }
    result.configurations.push_back(std::move(config));
  }
  result.total = result.configurations.size();
  return result;
}

// One constraint ready to evaluate: the parsed expression and, per variable, its parameter index.
struct compiled_constraint {
  expression parsed;
  std::vector<std::size_t> param_of_variable;
};

/// The values of every parameter, in the order the file lists the parameters.
using value_table = std::vector<std::vector<param_value>>;

void check_top_level_keys(const ojson& document, const std::string& origin) {
  for (const auto& entry : document.items()) {
    if (entry.key() != "params" && entry.key() != "constraints") {
      fail(origin, "unknown top-level key " + in_double_quotes(entry.key()) +
                       "; known keys: \"params\", \"constraints\"; fix: remove it or correct its "
                       "spelling");
    }
  }
}

const ojson& params_object(const ojson& document, const std::string& origin) {
  const char* const params_example = "\"params\": {\"TILE\": [8, 16, 32]}";
  if (!document.contains("params")) {
    fail(origin, std::string("\"params\" is missing; fix: add ") + params_example +
                     " (or write the file as an array of configurations)");
  }
  const ojson& params = document.at("params");
  if (!params.is_object()) {
    fail(origin, "\"params\" is " + json_type_phrase(params) + ", expected an object; fix: write " +
                     params_example);
  }
  if (params.empty()) {
    fail(origin, std::string("\"params\" is empty; fix: add at least one parameter, e.g. ") +
                     params_example);
  }
  return params;
}

/// The values of one parameter (`"TILE": [8, 16, 32]`), refusing an empty list and duplicates.
std::vector<param_value>
parse_param_values(const std::string& name, const ojson& list, const std::string& origin) {
  const std::string where = "params." + name;
  check_name(name, origin, where);
  if (!list.is_array() || list.empty()) {
    fail(origin, where + ": the values are " +
                     (list.is_array() ? "an empty array" : json_type_phrase(list)) +
                     ", expected a non-empty array; fix: write " + in_double_quotes(name) +
                     ": [value, ...], e.g. [8, 16, 32]");
  }
  std::vector<param_value> choices;
  std::map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string value_where = where + "[" + std::to_string(i) + "]";
    param_value value = to_value(list[i], origin, value_where);
    const auto [previous, inserted] = seen.emplace(to_string(value), i);
    if (!inserted) {
      fail(origin, value_where + ": the value " + list[i].dump() + " repeats " + where + "[" +
                       std::to_string(previous->second) + "] (both expand to \"" + previous->first +
                       "\"); fix: remove the duplicate");
    }
    choices.push_back(std::move(value));
  }
  return choices;
}

/// Every parameter's values; sets `result.names` and `result.total` (the size of the product).
value_table parse_params(const ojson& params, space& result) {
  const std::string& origin = result.origin;
  value_table values;
  std::size_t product = 1;
  std::string product_text;
  for (const auto& entry : params.items()) {
    std::vector<param_value> choices = parse_param_values(entry.key(), entry.value(), origin);
    result.names.push_back(entry.key());
    product_text +=
        (product_text.empty() ? "" : " x ") + entry.key() + " " + std::to_string(choices.size());
    // Saturate instead of overflowing: only "more than the limit" matters.
    product = product > max_space_configurations / choices.size() + 1 ? max_space_configurations + 1
                                                                      : product * choices.size();
    values.push_back(std::move(choices));
  }
  if (product > max_space_configurations) {
    fail(origin, "\"params\" gives more than " + std::to_string(max_space_configurations) +
                     " configurations before constraints (" + product_text +
                     "); fix: remove values or parameters, or split the space into several files");
  }
  result.total = product;
  return values;
}

/// The parameter index of constraint variable `v`, refusing unknown names and string parameters.
std::size_t constraint_parameter(const compiled_constraint& compiled,
                                 std::size_t v,
                                 const std::string& located,
                                 const space& result,
                                 const value_table& values) {
  const std::string& variable = compiled.parsed.variables()[v];
  const auto found = std::find(result.names.begin(), result.names.end(), variable);
  const std::string column = "column " + std::to_string(compiled.parsed.variable_columns()[v]);
  if (found == result.names.end()) {
    std::string known;
    for (const std::string& name : result.names) {
      known += (known.empty() ? "" : ", ") + name;
    }
    fail(result.origin, located + ": " + column + ": unknown parameter '" + variable +
                            "'; known: " + known +
                            "; fix: use one of the known parameters or "
                            "correct the spelling");
  }
  const auto index = static_cast<std::size_t>(found - result.names.begin());
  for (const param_value& value : values[index]) {
    if (std::holds_alternative<std::string>(value)) {
      fail(result.origin, located + ": " + column + ": parameter '" + variable +
                              "' has the string value " +
                              in_double_quotes(std::get<std::string>(value)) +
                              ", and constraints compute on numbers only; fix: use only numeric "
                              "parameters in constraints, or list the allowed configurations "
                              "explicitly as an array");
    }
  }
  return index;
}

/// Constraint `i` of the file (`constraints[i]`), parsed and bound to the parameters.
compiled_constraint compile_constraint(const ojson& item,
                                       std::size_t i,
                                       const space& result,
                                       const value_table& values) {
  const std::string where = "constraints[" + std::to_string(i) + "]";
  if (!item.is_string()) {
    fail(result.origin, where + ": the constraint is " + json_type_phrase(item) +
                            ", expected a string; fix: write it as a string, e.g. \"TILE <= 64\"");
  }
  const std::string text = item.get<std::string>();
  const std::string located = where + " " + in_double_quotes(text);
  compiled_constraint compiled{expression{}, {}};
  try {
    compiled.parsed = expression::parse(text);
  } catch (const expression_error& error) {
    fail(result.origin, located + ": " + error.what());
  }
  for (std::size_t v = 0; v < compiled.parsed.variables().size(); ++v) {
    compiled.param_of_variable.push_back(
        constraint_parameter(compiled, v, located, result, values));
  }
  return compiled;
}

/// The file's "constraints" (none when absent); appends their texts to `result.constraints`.
std::vector<compiled_constraint>
parse_constraints(const ojson& document, space& result, const value_table& values) {
  std::vector<compiled_constraint> constraints;
  if (!document.contains("constraints")) {
    return constraints;
  }
  const ojson& list = document.at("constraints");
  if (!list.is_array()) {
    fail(result.origin, "\"constraints\" is " + json_type_phrase(list) +
                            ", expected an array of strings; fix: write \"constraints\": "
                            "[\"TILE * UNROLL <= 64\"]");
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    compiled_constraint compiled = compile_constraint(list[i], i, result, values);
    result.constraints.push_back(list[i].get<std::string>());
    constraints.push_back(std::move(compiled));
  }
  return constraints;
}

/// The configuration at one point of the product (`digits[p]` indexes parameter p's values).
configuration configuration_at(const space& result,
                               const value_table& values,
                               const std::vector<std::size_t>& digits) {
  configuration config;
  config.params.reserve(values.size());
  for (std::size_t p = 0; p < values.size(); ++p) {
    config.params.emplace_back(result.names[p], values[p][digits[p]]);
  }
  return config;
}

/// Whether `constraint` holds at `digits`; an evaluation error names the constraint and the point.
bool constraint_holds(const compiled_constraint& constraint,
                      std::size_t c,
                      const space& result,
                      const value_table& values,
                      const std::vector<std::size_t>& digits) {
  const auto& variables = constraint.parsed.variables();
  const expression_lookup lookup = [&](std::string_view name) -> std::optional<expression_number> {
    for (std::size_t v = 0; v < variables.size(); ++v) {
      if (variables[v] == name) {
        const std::size_t param = constraint.param_of_variable[v];
        const param_value& value = values[param][digits[param]];
        if (const auto* integer = std::get_if<std::int64_t>(&value)) {
          return *integer;
        }
        return std::get<double>(value);
      }
    }
    return std::nullopt;
  };
  try {
    return constraint.parsed.holds(lookup);
  } catch (const expression_error& error) {
    fail(result.origin, "constraints[" + std::to_string(c) + "] " +
                            in_double_quotes(constraint.parsed.text()) + ": " + error.what() +
                            " (at " + describe(configuration_at(result, values, digits)) + ")");
  }
}

/// Turns the odometer one step: the last digit turns fastest, so the first parameter varies
/// slowest.
void advance(std::vector<std::size_t>& digits, const value_table& values) {
  for (std::size_t p = values.size(); p-- > 0;) {
    if (++digits[p] < values[p].size()) {
      break;
    }
    digits[p] = 0;
  }
}

/// Appends every point of the product that all constraints accept to `result.configurations`;
/// returns how many points each constraint rejected.
std::vector<std::size_t> enumerate(const std::vector<compiled_constraint>& constraints,
                                   const value_table& values,
                                   space& result) {
  std::vector<std::size_t> digits(values.size(), 0);
  std::vector<std::size_t> rejected_by(constraints.size(), 0);
  for (std::size_t n = 0; n < result.total; ++n) {
    bool keep = true;
    // Every constraint is evaluated (no early exit) so that an empty result can say how many
    // configurations each one rejected.
    for (std::size_t c = 0; c < constraints.size(); ++c) {
      if (!constraint_holds(constraints[c], c, result, values, digits)) {
        keep = false;
        ++rejected_by[c];
      }
    }
    if (keep) {
      result.configurations.push_back(configuration_at(result, values, digits));
    }
    advance(digits, values);
  }
  return rejected_by;
}

[[noreturn]] void fail_all_cut(const space& result, const std::vector<std::size_t>& rejected_by) {
  std::string counts;
  for (std::size_t c = 0; c < rejected_by.size(); ++c) {
    counts += (counts.empty() ? "" : ", ") + std::string("constraints[") + std::to_string(c) +
              "] rejects " + std::to_string(rejected_by[c]);
  }
  fail(result.origin, "all " + std::to_string(result.total) +
                          " configurations were cut by constraints (" + counts +
                          "); fix: relax the constraints or widen the parameter values");
}

space parse_product(const ojson& document, space result) {
  check_top_level_keys(document, result.origin);
  const value_table values = parse_params(params_object(document, result.origin), result);
  const std::vector<compiled_constraint> constraints = parse_constraints(document, result, values);
  const std::vector<std::size_t> rejected_by = enumerate(constraints, values, result);
  result.cut_by_constraints = result.total - result.configurations.size();
  if (result.configurations.empty()) {
    fail_all_cut(result, rejected_by);
  }
  return result;
}

} // namespace

space parse_space(std::string_view json_text, std::string origin) {
  space result;
  result.origin = std::move(origin);
  const ojson document = parse_json(json_text, result.origin);
  if (document.is_array()) {
    return parse_explicit_list(document, std::move(result));
  }
  if (document.is_object()) {
    return parse_product(document, std::move(result));
  }
  fail(result.origin, "the top level is " + json_type_phrase(document) +
                          ", expected an array of configurations or an object with \"params\"; "
                          "fix: write [{\"TILE\": 8}, ...] or {\"params\": {\"TILE\": [8, 16]}}");
}

space load_space(const std::filesystem::path& path) {
  const std::string origin = path.string();
  std::error_code code;
  if (std::filesystem::is_directory(path, code)) {
    fail(origin, "cannot read the space file: it is a directory; fix: pass the path of a JSON "
                 "file");
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    fail(origin, std::string("cannot read the space file: ") + std::strerror(errno) +
                     "; fix: check the path and that the file is readable");
  }
  std::ostringstream contents;
  contents << file.rdbuf();
  if (file.bad()) {
    fail(origin, std::string("cannot read the space file: ") + std::strerror(errno) +
                     "; fix: check that the file is readable");
  }
  return parse_space(contents.str(), origin);
}

} // namespace rpl::stages
