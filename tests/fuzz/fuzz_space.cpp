// libFuzzer target: the space file and its constraint language (stages/search/space.hpp,
// stages/search/expression.hpp), the text a user hands to `rocm-perf autotune --space`.
//
// The whole input is parsed as a space file, then as one constraint expression, which is evaluated
// with its variables bound to edge values (0, -1, INT64_MIN, INT64_MAX, floats; names starting
// with `z` are unknown). parse_space may only throw space_error and the expression only
// expression_error; anything else escaping is reported by libFuzzer as a crash, and so is a space
// that breaks its own invariants (counts, names, configurations of the wrong width).

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>

#include "stages/search/expression.hpp"
#include "stages/search/space.hpp"

namespace {

namespace s = rpl::stages;

void check(bool condition) {
  if (!condition) {
    __builtin_trap();
  }
}

void space_file(std::string_view text) {
  s::space parsed;
  try {
    parsed = s::parse_space(text, "fuzz.json");
  } catch (const s::space_error&) {
    return;
  }
  check(!parsed.names.empty());
  check(!parsed.configurations.empty());
  check(parsed.configurations.size() <= parsed.total);
  check(parsed.total <= s::max_space_configurations);
  check(parsed.cut_by_constraints == parsed.total - parsed.configurations.size());
  for (const s::configuration& config : parsed.configurations) {
    check(config.params.size() == parsed.names.size());
  }
}

std::optional<s::expression_number> edge_value(std::string_view name) {
  if (name.empty() || name.front() == 'z') {
    return std::nullopt;
  }
  switch ((name.size() + static_cast<unsigned char>(name.front())) % 9) {
  case 0: return std::int64_t{0};
  case 1: return std::int64_t{1};
  case 2: return std::int64_t{-1};
  case 3: return std::int64_t{7};
  case 4: return std::numeric_limits<std::int64_t>::max();
  case 5: return std::numeric_limits<std::int64_t>::min();
  case 6: return 2.5;
  case 7: return -0.0;
  default: return 1e308;
  }
}

void constraint(std::string_view text) {
  try {
    const s::expression parsed = s::expression::parse(text);
    check(parsed.variables().size() == parsed.variable_columns().size());
    for (const std::size_t column : parsed.variable_columns()) {
      check(column >= 1 && column <= text.size());
    }
    (void)parsed.holds(edge_value);
  } catch (const s::expression_error& error) {
    check(error.column() >= 1 && error.column() <= text.size() + 1);
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  space_file(text);
  constraint(text);
  return 0;
}
