#pragma once
/// The search space: which configurations a tuning run tries, loaded from a JSON file.
///
/// Two formats are accepted:
///   (a) an explicit list: a JSON array of objects, each object one configuration, e.g.
///       [{"TILE": 8, "UNROLL": 1}, {"TILE": 16, "UNROLL": 2}]
///       Every object has the same keys; the parameter order is the first object's key order.
///   (b) a product with constraints:
///       {"params": {"TILE": [8, 16, 32], "UNROLL": [1, 2, 4]},
///        "constraints": ["TILE * UNROLL <= 64"]}
///       The Cartesian product in the parameter order written, the first parameter varying slowest,
///       keeping the configurations for which every constraint holds (see expression.hpp).
/// Values are integers, floats or strings. Parameter names match [A-Za-z_][A-Za-z0-9_]* and are
/// not OUT or BIN, which command templates reserve, nor and/or/not, which constraints reserve.

#include <cstddef>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "stages/search/param_value.hpp"

namespace rpl::stages {

/// A malformed space file; the message names the file, the place in it, the problem and a fix.
class space_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Largest product of value counts accepted before constraints, so that a typo such as an extra
/// parameter cannot make the engine enumerate billions of configurations.
inline constexpr std::size_t max_space_configurations = 1'000'000;

/// A loaded search space.
struct space {
  std::string origin;                        ///< the file path, for messages
  std::vector<std::string> names;            ///< parameter order
  std::vector<configuration> configurations; ///< after constraints, in deterministic order
  std::size_t total = 0;                     ///< configurations before constraints
  std::size_t cut_by_constraints = 0;        ///< total - configurations.size()
  std::vector<std::string> constraints;      ///< constraint texts as written
};

/// Parses a space from JSON text; `origin` names it in messages. Throws space_error.
space parse_space(std::string_view json_text, std::string origin);

/// Reads and parses the file at `path`; throws space_error when it cannot be read or is malformed.
space load_space(const std::filesystem::path& path);

} // namespace rpl::stages
