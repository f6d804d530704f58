#pragma once
/// The launch file (`--launch FILE`): how the kernel lane launches a candidate's kernel by itself.
/// It names the kernel symbol, its grid and block and dynamic shared memory as expressions of the
/// space's parameters and the file's problem sizes, and its arguments in order: buffers (element
/// type, element count, initial contents, which ones are outputs and their tolerance) and scalars.
/// docs/launch-file.md is the user's page, docs/schema/launch.schema.json the schema.
///
///   {"kernel": "rpl_sgemm_tiled",
///    "problem": {"M": 2048, "N": 2048, "K": 2048},
///    "grid": ["(N + TILE_N - 1) / TILE_N", "(M + TILE_M - 1) / TILE_M"],
///    "block": ["(TILE_M / THREAD_M) * (TILE_N / THREAD_N)"],
///    "args": [{"name": "A", "kind": "buffer", "type": "f32", "count": "M * K",
///              "init": {"random": {"seed": 1, "min": -1, "max": 1}}}, ...,
///             {"name": "m", "kind": "scalar", "type": "i32", "value": "M"}]}
///
/// Parsing (start-up: errors throw launch_spec_error) checks the shape and the expressions'
/// syntax; check_launch_names() checks every name against the space; resolve_launch() evaluates
/// one configuration (a per-candidate failure comes back as a value). Pure apart from
/// load_launch_spec reading the file; file-initialised buffers are read by the lane.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "messages/kernel_lane.hpp"
#include "stages/search/expression.hpp"
#include "stages/search/param_value.hpp"

namespace rpl::stages {

/// A malformed launch file: "launch file F: args[2].count: problem; fix: ...".
class launch_spec_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// One number of the file: a JSON number or an expression string, and where it was written.
struct launch_value {
  std::string where; ///< JSON path for messages, e.g. "grid[0]", "args[2].count"
  expression expr;
};

/// Grid, block and dynamic shared memory: the kernel's or the reference kernel's.
struct launch_geometry {
  std::vector<launch_value> grid;  ///< x, y, z (missing ones are 1)
  std::vector<launch_value> block; ///< x, y, z
  launch_value shared_memory;      ///< bytes of dynamic shared memory per block
};

struct launch_arg_spec {
  std::string where; ///< "args[2]"
  std::string name;  ///< as written, or the JSON path when the file names none
  messages::kernel_arg_kind kind = messages::kernel_arg_kind::buffer;
  messages::element_type type = messages::element_type::f32;
  std::optional<launch_value> count; ///< buffers: element count
  messages::buffer_init init;        ///< buffers; a file path is absolute (relative to the file)
  bool output = false;
  messages::value_tolerance tolerance;
  /// Outputs: two launches may differ within the tolerance (atomics); else bit for bit.
  bool nondeterministic = false;
  std::optional<launch_value> value; ///< scalars
};

/// A reference kernel; its expressions may use only problem sizes (it runs once per lane).
struct launch_reference_spec {
  std::string symbol;
  std::filesystem::path code_object; ///< empty: the candidate's own code object; else absolute
  launch_geometry geometry;
};

/// A parsed launch file.
struct launch_spec {
  std::string origin; ///< the file as named, for messages
  std::string kernel; ///< the symbol to launch (unmangled for extern "C" kernels)
  std::vector<std::pair<std::string, expression_number>> problem; ///< in the order written
  launch_geometry geometry;
  std::vector<launch_arg_spec> args;
  /// nullopt ("first_valid", the default): the first candidate that runs defines the outputs.
  std::optional<launch_reference_spec> reference;
};

/// Parses a launch file's text. `origin` names it in messages; relative file paths in it
/// (buffer files, the reference's code object) are taken relative to `base_dir`.
launch_spec parse_launch_spec(std::string_view json_text,
                              std::string origin,
                              const std::filesystem::path& base_dir);

/// Reads and parses the file at `path`.
launch_spec load_launch_spec(const std::filesystem::path& path);

/// Checks that every expression uses only the problem sizes and `parameters` (the space's
/// names), and that no problem size shadows a parameter; throws launch_spec_error naming the
/// first one that does not. Call it once at start-up, before any candidate is built.
void check_launch_names(const launch_spec& spec, const std::vector<std::string>& parameters);

/// One configuration's launch, or why it has none.
struct launch_resolution {
  std::optional<messages::kernel_launch> launch;
  std::string error; ///< "launch file F: grid[0]: evaluates to 0; fix: ..." when launch is empty
  bool ok() const { return launch.has_value(); }
};

/// Evaluates the file for `config`: concrete grid, block, shared memory, element counts and
/// scalar values. String parameters cannot take part in arithmetic and give an error if used.
launch_resolution resolve_launch(const launch_spec& spec, const configuration& config);

} // namespace rpl::stages
