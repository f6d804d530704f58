#pragma once
/// A recorded tuning landscape: every configuration of a kernel's space with its measured
/// objective, as Kernel Tuner's cache files hold it (../shared/landscapes/README.md): the
/// parameter order (`tune_params_keys`), each parameter's values (`tune_params`), the objective's
/// name (`objective`, "time" in milliseconds unless `objective_higher_is_better`), and `cache`,
/// keyed by the comma-joined values in parameter order, each entry holding the parameters and the
/// objective. An objective that is not a number ("CompilationFailedConfig", "RuntimeFailedConfig")
/// marks a failed configuration; the keys of `cache` are the valid space. Our exhaustive sweeps
/// export to the same format (`to_kernel_tuner_cache`), so the recorded lane replays either.

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "stages/search/param_value.hpp"
#include "stages/search/space.hpp"

namespace rpl::stages {

/// A cache file that is not one, with what is wrong and a fix.
class landscape_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct landscape_entry {
  configuration config;        ///< in the landscape's parameter order
  std::optional<double> value; ///< the objective; nullopt for a failed configuration
  std::string failure;         ///< why there is no value ("RuntimeFailedConfig", ...)
  std::vector<double> samples; ///< the raw samples (`times`, same unit), when the file has them
};

struct landscape {
  std::string origin; ///< the file, for messages
  std::string kernel_name;
  std::string device_name;
  std::string objective = "time"; ///< the entries' objective key
  bool higher_is_better = false;
  std::vector<std::string> parameters;  ///< tune_params_keys
  std::vector<landscape_entry> entries; ///< in the cache's key order (sorted by key text)

  /// The entry whose cache key (values joined by commas in parameter order) is `key`.
  std::optional<std::size_t> find(std::string_view key) const;
  /// The best valid entry by the objective; nullopt when every configuration failed.
  std::optional<std::size_t> best() const;
  /// A value that smaller is better for: the objective, negated when higher is better.
  double cost(std::size_t entry) const;
  /// The space the landscape covers: its configurations in entry order (an explicit list).
  space as_space() const;

  std::unordered_map<std::string, std::size_t> index; ///< cache key -> entry
};

/// The cache key of a configuration: its values' text joined by commas, in its order (Kernel
/// Tuner's form: "16,1,1,1,0,0,0,1,15,15").
std::string cache_key(const configuration& config);

/// The key Kernel Tuner (Python's str) writes: the same, but a whole float keeps its ".0" ("1.0").
std::string python_key(const configuration& config);

/// Parses a Kernel Tuner cache (JSON text, already decompressed). Throws landscape_error naming
/// `origin`: not JSON, no `tune_params_keys`/`cache`, an entry without one of the parameters or
/// the objective, or a key that does not match its entry's values.
landscape parse_kernel_tuner_cache(std::string_view text, const std::string& origin);

/// The cache file of a landscape: `tune_params_keys`, `tune_params` (each parameter's values in
/// the order first seen), `objective`, `objective_higher_is_better`, `kernel_name`,
/// `device_name` and `cache` (each entry: the parameters and the objective, or its failure text).
/// parse_kernel_tuner_cache reads it back to the same landscape.
nlohmann::json to_kernel_tuner_cache(const landscape& l);

} // namespace rpl::stages
