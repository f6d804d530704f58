#pragma once
/// Nsight Compute's raw CSV (`ncu --csv --page raw --metrics ...`, stdout) as plain values: one row
/// per profiled kernel launch with its launch columns and every numeric metric, and its mapping to
/// rocpd rows (a counter pass as its own database: agents, kernel symbols, one dispatch per row
/// with the measured `gpu__time_duration.sum` as its duration, and the metrics as rocpd_info_pmc /
/// rocpd_pmc_event rows), so one analysis reads counters from either vendor.
///
/// What ncu prints, as observed (tests/fixtures/ncu/): the application's output and ncu's
/// `==PROF==`/`==WARNING==` lines may come first; then a header row starting with "ID", a units
/// row, and a row per kernel; values are quoted, numbers carry thousands separators
/// ("1,073,741,824"), each requested metric is expanded to .avg/.max/.min/.sum, and ncu adds every
/// `launch__*` and `device__attribute_*` column.

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "stages/trace/rocpd_writer.hpp"

namespace rpl::stages::ncu {

/// A CSV that is not ncu's raw page, named with what is wrong and a fix.
class ncu_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// One profiled launch.
struct kernel_row {
  std::int64_t id = 0; ///< ncu's launch index (0, 1, ...) in profiling order
  std::int64_t pid = 0;
  std::string process_name;
  std::string kernel_name; ///< demangled, with its signature
  std::int64_t context = 0;
  std::int64_t stream = 0;
  std::uint32_t block[3] = {0, 0, 0};
  std::uint32_t grid[3] = {0, 0, 0};
  std::int64_t device = 0;
  std::string compute_capability; ///< "9.0"
  /// Every column whose value is a number (launch__*, device__attribute_*, the metrics), by name,
  /// in base units: bytes and nanoseconds (ncu's automatic "Mbyte", "usecond", ... are scaled).
  std::map<std::string, double> metrics;
};

struct report {
  std::vector<std::string> columns;         ///< the header, in order
  std::map<std::string, std::string> units; ///< column -> unit ("byte", "ns", "%", "")
  std::vector<kernel_row> kernels;
};

/// Parses ncu's raw CSV. Throws ncu_error (naming the line) for text without a header row, a row
/// with a column count other than the header's, or a malformed quoted field.
report parse_raw_csv(std::string_view text);

/// The rocpd name of a compute capability: "9.0" -> "sm_90".
std::string agent_name(const std::string& compute_capability);

/// Writes `r` as one process's rocpd database through `w`: node, process `pid` (ncu's, or
/// `fallback_pid` when the report has none), one GPU agent per device, a kernel symbol per name and
/// device, one dispatch per row, back to back in profiling order from `start_ns`, each lasting its
/// gpu__time_duration.sum (ncu serializes the launches it profiles, so only durations are real),
/// and a pmc row per numeric metric column and dispatch. Adds the metadata `rpl_counter_pass` =
/// "ncu" so that analyses use its counters but not its timeline. Does not commit.
void write_counter_pass(const report& r,
                        rocpd::writer& w,
                        std::int64_t fallback_pid,
                        std::int64_t start_ns = 0);

} // namespace rpl::stages::ncu
