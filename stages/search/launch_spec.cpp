#include "stages/search/launch_spec.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "stages/search/json_wording.hpp"

namespace rpl::stages {

namespace {

namespace fs = std::filesystem;
// ordered_json keeps "problem" in the order written, which is the order messages list it in.
using ojson = nlohmann::ordered_json;

const std::vector<std::string> top_keys = {"$schema", "description",   "kernel", "problem",  "grid",
                                           "block",   "shared_memory", "args",   "reference"};
const std::vector<std::string> arg_keys = {
    "name", "kind", "type", "count", "init", "output", "tolerance", "nondeterministic", "value"};
const std::vector<std::string> reference_keys = {"kernel", "code_object", "grid", "block",
                                                 "shared_memory"};
const std::vector<std::pair<std::string, messages::element_type>> element_types = {
    {"f32", messages::element_type::f32}, {"f64", messages::element_type::f64},
    {"i32", messages::element_type::i32}, {"i64", messages::element_type::i64},
    {"u32", messages::element_type::u32}, {"f16", messages::element_type::f16}};

/// Buffers larger than this are surely a mistake in a count expression (1 TiB).
constexpr std::uint64_t max_buffer_bytes = std::uint64_t{1} << 40;

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items)
    out += (out.empty() ? "" : ", ") + item;
  return out;
}

bool is_identifier(const std::string& name) {
  return !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_') &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
         });
}

/// Reads one launch file; every error names the file and the JSON path.
class spec_reader {
public:
  spec_reader(std::string origin, fs::path base_dir)
      : origin_(std::move(origin)), base_dir_(std::move(base_dir)) {}

  [[noreturn]] void fail(const std::string& where, const std::string& problem) const {
    throw launch_spec_error("launch file " + origin_ + ": " + (where.empty() ? "" : where + ": ") +
                            problem);
  }

  launch_spec read(const ojson& document) const {
    if (!document.is_object())
      fail("", "the file holds " + json_type_phrase(document) +
                   "; fix: write a JSON object with \"kernel\", \"grid\", \"block\" and \"args\"");
    check_keys(document, top_keys, "");
    launch_spec spec;
    spec.origin = origin_;
    spec.kernel = symbol(document, "kernel", "");
    spec.problem = problem(document);
    spec.geometry = geometry(document, "");
    spec.args = args(document);
    spec.reference = reference(document);
    return spec;
  }

private:
  void check_keys(const ojson& object,
                  const std::vector<std::string>& known,
                  const std::string& where) const {
    for (const auto& item : object.items()) {
      if (std::find(known.begin(), known.end(), item.key()) == known.end())
        fail(where.empty() ? item.key() : where + "." + item.key(),
             "unknown key; fix: use one of " + join(known) + ", or remove it (a typo?)");
    }
  }

  static std::string path(const std::string& prefix, const std::string& key) {
    return prefix.empty() ? key : prefix + "." + key;
  }

  std::string symbol(const ojson& object, const std::string& key, const std::string& prefix) const {
    const std::string where = path(prefix, key);
    if (!object.contains(key))
      fail(where, "missing; fix: name the kernel symbol to launch, e.g. \"" + key +
                      "\": \"my_kernel\" (declare the kernel extern \"C\" so that its name is "
                      "not mangled)");
    const ojson& value = object.at(key);
    if (!value.is_string() || value.get<std::string>().empty())
      fail(where, "is " + (value.is_string() ? std::string("empty") : json_type_phrase(value)) +
                      "; fix: write the kernel's symbol as a non-empty string");
    const auto text = value.get<std::string>();
    if (std::any_of(text.begin(), text.end(),
                    [](char c) { return std::isspace(static_cast<unsigned char>(c)); }))
      fail(where, in_double_quotes(text) +
                      " contains white space, which no symbol does; fix: write the "
                      "symbol as the code object lists it (cuobjdump -symbols)");
    return text;
  }

  std::vector<std::pair<std::string, expression_number>> problem(const ojson& document) const {
    std::vector<std::pair<std::string, expression_number>> sizes;
    if (!document.contains("problem"))
      return sizes;
    const ojson& object = document.at("problem");
    if (!object.is_object())
      fail("problem", "is " + json_type_phrase(object) +
                          "; fix: write an object of named numbers, e.g. {\"M\": 2048}");
    for (const auto& item : object.items()) {
      const std::string where = "problem." + item.key();
      if (!is_identifier(item.key()) || item.key() == "and" || item.key() == "or" ||
          item.key() == "not")
        fail(where, "is not a usable name; fix: use letters, digits and _ only, not starting "
                    "with a digit, and not and/or/not");
      sizes.emplace_back(item.key(), number(item.value(), where));
    }
    return sizes;
  }

  expression_number number(const ojson& value, const std::string& where) const {
    if (value.is_number_integer() && !value.is_number_unsigned())
      return value.get<std::int64_t>();
    if (value.is_number_unsigned() &&
        value.get<std::uint64_t>() <=
            static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      return static_cast<std::int64_t>(value.get<std::uint64_t>());
    if (value.is_number_float())
      return value.get<double>();
    fail(where, "is " + json_type_phrase(value) +
                    "; fix: write a number (problem sizes are plain numbers)");
  }

  launch_value value(const ojson& json, const std::string& where) const {
    std::string text;
    if (json.is_number())
      text = json.dump();
    else if (json.is_string())
      text = json.get<std::string>();
    else
      fail(where, "is " + json_type_phrase(json) +
                      "; fix: write a number or an expression string such as \"M / TILE_M\"");
    try {
      return launch_value{where, expression::parse(text)};
    } catch (const expression_error& error) {
      fail(where, "in " + in_double_quotes(text) + ", " + error.what());
    }
  }

  std::vector<launch_value>
  dims(const ojson& object, const std::string& key, const std::string& prefix) const {
    const std::string where = path(prefix, key);
    if (!object.contains(key))
      fail(where, "missing; fix: give 1 to 3 values (x, y, z), numbers or expressions, e.g. "
                  "\"" +
                      key + "\": [\"N / 64\", 1]");
    const ojson& json = object.at(key);
    std::vector<launch_value> out;
    if (!json.is_array()) {
      out.push_back(value(json, where));
      return out;
    }
    if (json.empty() || json.size() > 3)
      fail(where, "has " + std::to_string(json.size()) + " entries; fix: give 1 to 3 (x, y, z)");
    for (std::size_t i = 0; i < json.size(); ++i)
      out.push_back(value(json.at(i), where + "[" + std::to_string(i) + "]"));
    return out;
  }

  launch_geometry geometry(const ojson& object, const std::string& prefix) const {
    launch_geometry g;
    g.grid = dims(object, "grid", prefix);
    g.block = dims(object, "block", prefix);
    g.shared_memory = object.contains("shared_memory")
                          ? value(object.at("shared_memory"), path(prefix, "shared_memory"))
                          : launch_value{path(prefix, "shared_memory"), expression::parse("0")};
    return g;
  }

  std::vector<launch_arg_spec> args(const ojson& document) const {
    if (!document.contains("args"))
      fail("args", "missing; fix: list the kernel's arguments in order, e.g. [{\"name\": \"x\", "
                   "\"kind\": \"buffer\", \"type\": \"f32\", \"count\": \"N\"}]");
    const ojson& list = document.at("args");
    if (!list.is_array() || list.empty())
      fail("args", "is " + (list.is_array() ? std::string("empty") : json_type_phrase(list)) +
                       "; fix: list the kernel's arguments in order, one object each");
    std::vector<launch_arg_spec> out;
    std::set<std::string> names;
    for (std::size_t i = 0; i < list.size(); ++i) {
      out.push_back(arg(list.at(i), "args[" + std::to_string(i) + "]"));
      if (!names.insert(out.back().name).second)
        fail(out.back().where + ".name", in_double_quotes(out.back().name) +
                                             " names two arguments; fix: give each its own name");
    }
    return out;
  }

  launch_arg_spec arg(const ojson& json, const std::string& where) const {
    if (!json.is_object())
      fail(where,
           "is " + json_type_phrase(json) + "; fix: write an object with \"kind\" and \"type\"");
    check_keys(json, arg_keys, where);
    launch_arg_spec a;
    a.where = where;
    a.name = where;
    if (json.contains("name")) {
      if (!json.at("name").is_string() || json.at("name").get<std::string>().empty())
        fail(where + ".name", "is not a non-empty string; fix: name the argument, e.g. \"C\"");
      a.name = json.at("name").get<std::string>();
    }
    a.kind = kind(json, where);
    a.type = type(json, where);
    if (a.kind == messages::kernel_arg_kind::buffer)
      read_buffer(json, a);
    else
      read_scalar(json, a);
    return a;
  }

  messages::kernel_arg_kind kind(const ojson& json, const std::string& where) const {
    const std::string text = json.contains("kind") && json.at("kind").is_string()
                                 ? json.at("kind").get<std::string>()
                                 : std::string();
    if (text == "buffer")
      return messages::kernel_arg_kind::buffer;
    if (text == "scalar")
      return messages::kernel_arg_kind::scalar;
    fail(where + ".kind", (json.contains("kind") ? "is " + json.at("kind").dump() : "missing") +
                              "; fix: write \"kind\": \"buffer\" (a device array passed by "
                              "pointer) or \"scalar\" (a value)");
  }

  messages::element_type type(const ojson& json, const std::string& where) const {
    const std::string text = json.contains("type") && json.at("type").is_string()
                                 ? json.at("type").get<std::string>()
                                 : std::string();
    for (const auto& [name, t] : element_types)
      if (name == text)
        return t;
    std::vector<std::string> names;
    for (const auto& entry : element_types)
      names.push_back(entry.first);
    fail(where + ".type", (json.contains("type") ? "is " + json.at("type").dump() : "missing") +
                              "; fix: use one of " + join(names));
  }

  void read_buffer(const ojson& json, launch_arg_spec& a) const {
    if (json.contains("value"))
      fail(a.where + ".value", "belongs to scalars; fix: remove it, or make the argument "
                               "\"kind\": \"scalar\"");
    if (!json.contains("count"))
      fail(a.where + ".count", "missing; fix: give the element count, e.g. \"M * K\"");
    a.count = value(json.at("count"), a.where + ".count");
    if (json.contains("init"))
      a.init = init(json.at("init"), a.where + ".init", a.type);
    if (json.contains("output")) {
      if (!json.at("output").is_boolean())
        fail(a.where + ".output",
             "is " + json_type_phrase(json.at("output")) + "; fix: write true or false");
      a.output = json.at("output").get<bool>();
    }
    if (json.contains("tolerance")) {
      if (!a.output)
        fail(a.where + ".tolerance", "is set on a buffer that is not an output; fix: add "
                                     "\"output\": true, or remove the tolerance");
      a.tolerance = tolerance(json.at("tolerance"), a.where + ".tolerance");
    }
    if (json.contains("nondeterministic")) {
      if (!json.at("nondeterministic").is_boolean())
        fail(a.where + ".nondeterministic",
             "is " + json_type_phrase(json.at("nondeterministic")) + "; fix: write true or false");
      a.nondeterministic = json.at("nondeterministic").get<bool>();
      if (a.nondeterministic && !json.contains("tolerance"))
        fail(a.where + ".nondeterministic",
             "needs a tolerance: two launches of a kernel that uses atomics may differ by "
             "rounding; fix: add \"tolerance\": {\"abs\": ..., \"rel\": ...}");
    }
  }

  void read_scalar(const ojson& json, launch_arg_spec& a) const {
    for (const char* key : {"count", "init", "output", "tolerance", "nondeterministic"})
      if (json.contains(key))
        fail(a.where + "." + key, "belongs to buffers; fix: remove it, or make the argument "
                                  "\"kind\": \"buffer\"");
    if (!json.contains("value"))
      fail(a.where + ".value", "missing; fix: give the scalar's value, a number or an expression "
                               "such as \"M\"");
    a.value = value(json.at("value"), a.where + ".value");
  }

  messages::buffer_init
  init(const ojson& json, const std::string& where, messages::element_type type) const {
    messages::buffer_init out;
    if (json.is_string() && json.get<std::string>() == "zeros")
      return out;
    if (json.is_object() && json.size() == 1 && json.contains("random"))
      return random(json.at("random"), where + ".random", type);
    if (json.is_object() && json.size() == 1 && json.contains("file")) {
      if (!json.at("file").is_string() || json.at("file").get<std::string>().empty())
        fail(where + ".file", "is not a path; fix: name a file of raw little-endian elements");
      out.fill = messages::buffer_fill::file;
      out.path = (base_dir_ / json.at("file").get<std::string>()).lexically_normal().string();
      return out;
    }
    fail(where, "is " + json.dump() +
                    "; fix: write \"zeros\", {\"random\": {\"seed\": 1, "
                    "\"min\": -1, \"max\": 1}} or {\"file\": \"data.bin\"}");
  }

  messages::buffer_init
  random(const ojson& json, const std::string& where, messages::element_type type) const {
    if (!json.is_object())
      fail(where,
           "is " + json_type_phrase(json) + "; fix: write {\"seed\": 1, \"min\": -1, \"max\": 1}");
    check_keys(json, {"seed", "min", "max"}, where);
    messages::buffer_init out;
    out.fill = messages::buffer_fill::random;
    if (json.contains("seed")) {
      if (!json.at("seed").is_number_unsigned())
        fail(where + ".seed", "is " + json.at("seed").dump() + "; fix: use a non-negative integer");
      out.seed = json.at("seed").get<std::uint64_t>();
    }
    const bool floating = messages::is_float(type);
    out.min = bound(json, "min", where, floating ? -1.0 : 0.0, floating);
    out.max = bound(json, "max", where, floating ? 1.0 : 100.0, floating);
    if (floating ? !(out.min < out.max) : !(out.min <= out.max))
      fail(where, "min " + json.value("min", ojson()).dump() + " is not below max " +
                      json.value("max", ojson()).dump() + "; fix: give min < max");
    return out;
  }

  double bound(const ojson& json,
               const char* key,
               const std::string& where,
               double fallback,
               bool floating) const {
    if (!json.contains(key))
      return fallback;
    const ojson& v = json.at(key);
    if (!v.is_number() || (!floating && !v.is_number_integer()))
      fail(where + "." + key,
           "is " + v.dump() + "; fix: use " +
               (floating ? "a number" : "an integer (the buffer holds integers)"));
    return v.get<double>();
  }

  messages::value_tolerance tolerance(const ojson& json, const std::string& where) const {
    if (!json.is_object())
      fail(where, "is " + json_type_phrase(json) + "; fix: write {\"abs\": 1e-3, \"rel\": 1e-3}");
    check_keys(json, {"abs", "rel"}, where);
    messages::value_tolerance out;
    for (const char* key : {"abs", "rel"}) {
      if (!json.contains(key))
        continue;
      const ojson& v = json.at(key);
      if (!v.is_number() || v.get<double>() < 0.0)
        fail(where + "." + key, "is " + v.dump() + "; fix: use a number >= 0");
      (std::string(key) == "abs" ? out.abs : out.rel) = v.get<double>();
    }
    return out;
  }

  std::optional<launch_reference_spec> reference(const ojson& document) const {
    if (!document.contains("reference"))
      return std::nullopt;
    const ojson& json = document.at("reference");
    if (json.is_string() && json.get<std::string>() == "first_valid")
      return std::nullopt;
    if (!json.is_object())
      fail("reference", "is " + json.dump() +
                            "; fix: write \"first_valid\" or an object "
                            "{\"kernel\", \"grid\", \"block\", \"code_object\"}");
    check_keys(json, reference_keys, "reference");
    launch_reference_spec ref;
    ref.symbol = symbol(json, "kernel", "reference");
    if (json.contains("code_object")) {
      if (!json.at("code_object").is_string() || json.at("code_object").get<std::string>().empty())
        fail("reference.code_object", "is not a path; fix: name a cubin/fatbin/code object, or "
                                      "leave it out to take the kernel from each candidate's");
      ref.code_object = (base_dir_ / json.at("code_object").get<std::string>()).lexically_normal();
    }
    ref.geometry = geometry(json, "reference");
    return ref;
  }

  std::string origin_;
  fs::path base_dir_;
};

/// Duplicate keys would silently keep the last one; the parser callback finds them.
ojson parse_json(std::string_view text, const spec_reader& reader) {
  std::vector<std::set<std::string>> keys;
  std::optional<std::string> duplicate;
  const ojson::parser_callback_t callback = [&](int, ojson::parse_event_t event, ojson& parsed) {
    if (event == ojson::parse_event_t::object_start)
      keys.emplace_back();
    else if (event == ojson::parse_event_t::object_end && !keys.empty())
      keys.pop_back();
    else if (event == ojson::parse_event_t::key && !keys.empty() &&
             !keys.back().insert(parsed.get<std::string>()).second && !duplicate)
      duplicate = parsed.get<std::string>();
    return true;
  };
  try {
    ojson document = ojson::parse(text.begin(), text.end(), callback);
    if (duplicate)
      reader.fail("", "the key " + in_double_quotes(*duplicate) +
                          " appears twice in one object; fix: remove or rename one of them");
    return document;
  } catch (const ojson::parse_error& error) {
    reader.fail("", std::string("invalid JSON: ") + error.what() +
                        "; fix: correct the JSON syntax at that byte");
  } catch (const ojson::out_of_range& error) {
    // A number beyond a double (1e400), as tests/fuzz/fuzz_space found in space files.
    reader.fail("", std::string("invalid JSON: ") + error.what() +
                        "; fix: use a number that fits a 64-bit float, or a string");
  }
}

/// Every expression of the spec, with whether it may use parameters (the reference may not).
std::vector<std::pair<const launch_value*, bool>> all_values(const launch_spec& spec) {
  std::vector<std::pair<const launch_value*, bool>> out;
  const auto add_geometry = [&](const launch_geometry& g, bool params) {
    for (const auto& v : g.grid)
      out.emplace_back(&v, params);
    for (const auto& v : g.block)
      out.emplace_back(&v, params);
    out.emplace_back(&g.shared_memory, params);
  };
  add_geometry(spec.geometry, true);
  for (const auto& a : spec.args) {
    if (a.count)
      out.emplace_back(&*a.count, true);
    if (a.value)
      out.emplace_back(&*a.value, true);
  }
  if (spec.reference)
    add_geometry(spec.reference->geometry, false);
  return out;
}

std::vector<std::string> problem_names(const launch_spec& spec) {
  std::vector<std::string> names;
  for (const auto& entry : spec.problem)
    names.push_back(entry.first);
  return names;
}

std::string unknown_name_problem(const std::string& name,
                                 const std::vector<std::string>& params,
                                 const std::vector<std::string>& problem,
                                 bool params_allowed) {
  const std::string sizes = problem.empty() ? std::string("none") : join(problem);
  if (!params_allowed && std::find(params.begin(), params.end(), name) != params.end())
    return "uses the parameter " + name +
           ", but the reference kernel runs once for all candidates; fix: use only problem "
           "sizes (" +
           sizes + ") in the reference's grid, block and shared memory";
  std::string fix = "; fix: use ";
  if (params_allowed)
    fix += "a parameter of the space (" + (params.empty() ? std::string("none") : join(params)) +
           ") or ";
  return "unknown name " + name + fix + "a problem size (" + sizes + "), or add " +
         in_double_quotes(name) + " to \"problem\"";
}

/// The evaluation failure of one value in one configuration.
class resolve_failure : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Evaluates the values of one spec for one configuration.
class resolver {
public:
  resolver(const launch_spec& spec, const configuration& config) : spec_(spec), config_(config) {
    for (const auto& p : config.params)
      params_.push_back(p.first);
    problem_ = problem_names(spec);
  }

  [[noreturn]] void fail(const launch_value& v, const std::string& problem) const {
    throw resolve_failure("launch file " + spec_.origin + ": " + v.where + ": " + problem);
  }

  expression_number evaluate(const launch_value& v, bool params_allowed) const {
    for (const auto& name : v.expr.variables())
      check_name(v, name, params_allowed);
    try {
      return v.expr.evaluate_number(
          [&](std::string_view name) { return lookup(name, params_allowed); });
    } catch (const expression_error& error) {
      fail(v, "in " + in_double_quotes(v.expr.text()) + ", " + error.what());
    }
  }

  std::int64_t integer(const launch_value& v,
                       std::int64_t min,
                       std::int64_t max,
                       bool params_allowed,
                       const std::string& expected) const {
    const expression_number n = evaluate(v, params_allowed);
    std::int64_t value = 0;
    if (const auto* i = std::get_if<std::int64_t>(&n)) {
      value = *i;
    } else {
      const double d = std::get<double>(n);
      if (!(std::trunc(d) == d) || d < -9.2e18 || d > 9.2e18)
        fail(v, in_double_quotes(v.expr.text()) + " evaluates to " + format(d) + "; expected " +
                    expected + "; fix: use integer arithmetic (/ on two integers truncates)");
      value = static_cast<std::int64_t>(d);
    }
    if (value < min || value > max)
      fail(v, in_double_quotes(v.expr.text()) + " evaluates to " + std::to_string(value) + " for " +
                  describe_config() + "; expected " + expected +
                  "; fix: correct the expression, or exclude such configurations with a "
                  "constraint in the space");
    return value;
  }

  double real(const launch_value& v) const {
    const expression_number n = evaluate(v, true);
    if (const auto* i = std::get_if<std::int64_t>(&n))
      return static_cast<double>(*i);
    return std::get<double>(n);
  }

private:
  void check_name(const launch_value& v, const std::string& name, bool params_allowed) const {
    const bool is_param = std::find(params_.begin(), params_.end(), name) != params_.end();
    const bool is_problem = std::find(problem_.begin(), problem_.end(), name) != problem_.end();
    if (is_problem || (is_param && params_allowed)) {
      if (!is_problem) {
        const param_value* p = config_.find(name);
        if (p != nullptr && std::holds_alternative<std::string>(*p))
          fail(v, "uses " + name + ", a string parameter (" +
                      in_double_quotes(std::get<std::string>(*p)) +
                      "), in arithmetic; fix: use numeric parameters only in launch expressions");
      }
      return;
    }
    fail(v, unknown_name_problem(name, params_, problem_, params_allowed));
  }

  std::optional<expression_number> lookup(std::string_view name, bool params_allowed) const {
    for (const auto& [key, value] : spec_.problem)
      if (key == name)
        return value;
    if (!params_allowed)
      return std::nullopt;
    const param_value* p = config_.find(name);
    if (p == nullptr)
      return std::nullopt;
    if (const auto* i = std::get_if<std::int64_t>(p))
      return *i;
    if (const auto* d = std::get_if<double>(p))
      return *d;
    return std::nullopt;
  }

  std::string describe_config() const {
    if (config_.params.empty())
      return "this configuration";
    std::string out;
    for (const auto& [name, value] : config_.params)
      out += (out.empty() ? "" : " ") + name + "=" + to_string(value);
    return out;
  }

  static std::string format(double d) {
    std::ostringstream out;
    out << d;
    return out.str();
  }

  const launch_spec& spec_;
  const configuration& config_;
  std::vector<std::string> params_;
  std::vector<std::string> problem_;
};

constexpr std::int64_t u32_max = std::numeric_limits<std::uint32_t>::max();

messages::launch_dims
dims(const resolver& r, const std::vector<launch_value>& values, bool params_allowed) {
  std::uint32_t out[3] = {1, 1, 1};
  for (std::size_t i = 0; i < values.size() && i < 3; ++i)
    out[i] = static_cast<std::uint32_t>(
        r.integer(values[i], 1, u32_max, params_allowed, "a positive integer"));
  return {out[0], out[1], out[2]};
}

std::uint32_t shared_bytes(const resolver& r, const launch_value& v, bool params_allowed) {
  return static_cast<std::uint32_t>(r.integer(v, 0, u32_max, params_allowed, "a byte count >= 0"));
}

void resolve_scalar(const resolver& r, const launch_arg_spec& a, messages::kernel_arg& out) {
  using messages::element_type;
  switch (a.type) {
  case element_type::i32:
    out.int_value = r.integer(*a.value, std::numeric_limits<std::int32_t>::min(),
                              std::numeric_limits<std::int32_t>::max(), true, "an i32");
    break;
  case element_type::u32: out.int_value = r.integer(*a.value, 0, u32_max, true, "a u32"); break;
  case element_type::i64:
    out.int_value = r.integer(*a.value, std::numeric_limits<std::int64_t>::min(),
                              std::numeric_limits<std::int64_t>::max(), true, "an i64");
    break;
  default: out.float_value = r.real(*a.value); break;
  }
}

messages::kernel_arg resolve_arg(const resolver& r, const launch_arg_spec& a) {
  messages::kernel_arg out;
  out.name = a.name;
  out.kind = a.kind;
  out.type = a.type;
  if (a.kind == messages::kernel_arg_kind::scalar) {
    resolve_scalar(r, a, out);
    return out;
  }
  const auto limit = static_cast<std::int64_t>(max_buffer_bytes / messages::element_size(a.type));
  out.count = static_cast<std::uint64_t>(
      r.integer(*a.count, 1, limit, true,
                "an element count from 1 to " + std::to_string(limit) + " (1 TiB)"));
  out.init = a.init;
  out.output = a.output;
  out.tolerance = a.tolerance;
  out.nondeterministic = a.nondeterministic;
  return out;
}

} // namespace

launch_spec parse_launch_spec(std::string_view json_text,
                              std::string origin,
                              const std::filesystem::path& base_dir) {
  const spec_reader reader(std::move(origin), base_dir);
  return reader.read(parse_json(json_text, reader));
}

launch_spec load_launch_spec(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw launch_spec_error("launch file " + path.string() +
                            ": cannot be read; fix: check the path given to --launch");
  std::ostringstream text;
  text << in.rdbuf();
  const fs::path base = fs::absolute(path).parent_path();
  launch_spec spec = parse_launch_spec(text.str(), path.string(), base);
  // The lane reads these files; a missing one is cheaper to report now than per candidate.
  for (const auto& a : spec.args)
    if (a.init.fill == messages::buffer_fill::file && !fs::is_regular_file(a.init.path))
      throw launch_spec_error("launch file " + path.string() + ": " + a.where +
                              ".init.file: " + a.init.path +
                              " is not a readable file; fix: correct the path "
                              "(relative paths start at the launch file's folder)");
  if (spec.reference && !spec.reference->code_object.empty() &&
      !fs::is_regular_file(spec.reference->code_object))
    throw launch_spec_error("launch file " + path.string() +
                            ": reference.code_object: " + spec.reference->code_object.string() +
                            " is not a readable file; fix: build the reference code object "
                            "first, or leave code_object out to use each candidate's");
  return spec;
}

void check_launch_names(const launch_spec& spec, const std::vector<std::string>& parameters) {
  const std::vector<std::string> problem = problem_names(spec);
  for (const auto& name : problem)
    if (std::find(parameters.begin(), parameters.end(), name) != parameters.end())
      throw launch_spec_error("launch file " + spec.origin + ": problem." + name +
                              ": shadows the space's parameter " + name +
                              "; fix: rename the problem size");
  for (const auto& [value, params_allowed] : all_values(spec)) {
    for (const auto& name : value->expr.variables()) {
      const bool known = std::find(problem.begin(), problem.end(), name) != problem.end() ||
                         (params_allowed && std::find(parameters.begin(), parameters.end(), name) !=
                                                parameters.end());
      if (!known)
        throw launch_spec_error("launch file " + spec.origin + ": " + value->where + ": " +
                                unknown_name_problem(name, parameters, problem, params_allowed));
    }
  }
}

launch_resolution resolve_launch(const launch_spec& spec, const configuration& config) {
  const resolver r(spec, config);
  try {
    messages::kernel_launch launch;
    launch.symbol = spec.kernel;
    launch.grid = dims(r, spec.geometry.grid, true);
    launch.block = dims(r, spec.geometry.block, true);
    launch.shared_bytes = shared_bytes(r, spec.geometry.shared_memory, true);
    for (const auto& a : spec.args)
      launch.args.push_back(resolve_arg(r, a));
    if (spec.reference) {
      messages::kernel_reference ref;
      ref.symbol = spec.reference->symbol;
      ref.code_object_path = spec.reference->code_object.string();
      ref.grid = dims(r, spec.reference->geometry.grid, false);
      ref.block = dims(r, spec.reference->geometry.block, false);
      ref.shared_bytes = shared_bytes(r, spec.reference->geometry.shared_memory, false);
      launch.reference = std::move(ref);
    }
    return {std::move(launch), {}};
  } catch (const resolve_failure& failure) {
    return {std::nullopt, failure.what()};
  }
}

} // namespace rpl::stages
