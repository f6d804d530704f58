#pragma once
/// One side of `rocm-perf compare` read from disk: its inputs resolved to runs (a rocpd file, a
/// folder of them as rocprofv3 writes them, or a `profile --out` folder whose traces/run-N are its
/// runs), then one pass over each run's dispatch tables giving the profile report, the launch
/// samples and the last run's timeline (build_profile_report_and_timeline), its critical path and
/// the counter passes' values.

#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "stages/analysis/profile_report.hpp"
#include "stages/analysis/timeline_dag.hpp"
#include "stages/compare/comparison.hpp"
#include "stages/compare/launch_samples.hpp"
#include "stages/trace/counter_values.hpp"
#include "stages/trace/rocpd_timeline.hpp"

namespace rpl::engine::commands {

/// A side that cannot be read: the message names the side, the input, the problem and a fix.
class compare_input_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct compare_side {
  stages::compare::side_summary summary; ///< inputs, runs, databases, counters
  stages::profile_report report;
  std::vector<stages::compare::launch_samples> launches; ///< user kernels only
  stages::rocpd::timeline timeline;                      ///< of the last run
  stages::analysis::critical_path_result path;
  std::map<std::string, stages::rocpd::kernel_counters> counters; ///< by kernel_key
};

/// Reads the side called `label` ("BASE" or "NEW") from `inputs` (each one run, or a profile
/// --out folder of several). `arch` overrides the agents' targets for occupancy. Throws
/// compare_input_error for a missing path, a results store among other inputs (a store alone
/// is a side: its latest run's configurations), a profile folder without runs, and
/// (their messages prefixed with the label) rocpd_error and report_error.
compare_side read_compare_side(const std::string& label,
                               const std::vector<std::filesystem::path>& inputs,
                               const std::string& arch);

} // namespace rpl::engine::commands
