#pragma once
/// What the replay programs (cuda/replay_main.cpp, hsa/replay_main.cpp) share around their GPU
/// calls: the arguments every one takes, checking each region against the capture, the JSON they
/// print (the shape replay_run.hpp reads) and how errors become exit codes (0 verified, 1 the
/// replay failed, 2 bad input, 3 the output differs).

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stages/capture/output_compare.hpp"
#include "stages/capture/red_zones.hpp"
#include "workers/capture/capture_directory.hpp"
#include "workers/replay/replay_timing.hpp"

namespace rpl::workers::replay {

/// The replay could not be done (exit 1).
struct replay_failed : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// Arguments or a capture the program cannot use (exit 2).
struct bad_input : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct replay_arguments {
  std::string dir;
  int iterations = 20;
  int warmup = 3;
  std::optional<stages::capture::float_tolerance> tolerance;
  std::string json_out; ///< where the JSON goes (else stdout)
};

/// `value()` gives the argument after a flag (bad_input when there is none).
using extra_flag =
    std::function<bool(const std::string& flag, const std::function<std::string()>& value)>;

/// DIR --iterations N --warmup W --tolerance-abs A --tolerance-rel R --json-out FILE; any other
/// flag goes to `extra`, which returns false for one it does not know (bad_input).
replay_arguments parse_replay_arguments(int argc, char** argv, const extra_flag& extra);

/// Prints `doc` to stdout, or writes it whole to the --json-out file.
void emit(const replay_arguments& arguments, const nlohmann::json& doc);

/// The regions after one replayed dispatch against the capture: written ones (an after-file)
/// against the after-state, the others against their before-state.
struct region_check {
  nlohmann::json mismatched = nlohmann::json::array(); ///< base, size, written_by_capture, ...
  std::vector<std::size_t> written; ///< indices of the regions the dispatch writes
  bool passed() const { return mismatched.empty(); }
};

/// `read_back(i)` gives region i's bytes as the replay left them.
region_check check_regions(const capture::capture_directory& capture,
                           const std::vector<std::vector<std::uint8_t>>& before,
                           const std::function<std::vector<std::uint8_t>(std::size_t)>& read_back,
                           const std::optional<stages::capture::float_tolerance>& tolerance);

/// The "red_zones" object of the JSON: how many zones and bytes were checked, and the violation
/// (null when none: its region, side, offset, changed bytes, phase and message).
nlohmann::json red_zones_json(const std::vector<stages::capture::va_range>& zones,
                              const std::optional<stages::capture::red_zone_violation>& found,
                              const std::string& phase);

/// The "verification" object of the JSON.
nlohmann::json verification_json(const region_check& check,
                                 std::size_t regions,
                                 const std::optional<stages::capture::float_tolerance>& tolerance);

/// The "timing" object of the JSON: how the samples were taken (`method`: replay_timing.hpp's
/// names; `requested` and `fallback_reason` when --timing asked for another; `batch_size`;
/// `cupti_records`), the summary of `samples_ns` (stages/statistics) and the samples.
nlohmann::json timing_json(const std::vector<std::int64_t>& samples_ns,
                           const replay_arguments& arguments,
                           std::size_t restored_regions,
                           const timing_details& details);

/// Runs `body`, turning its exceptions into `program: message` on stderr and the exit code.
int replay_main(const char* program, const std::function<int()>& body);

} // namespace rpl::workers::replay
