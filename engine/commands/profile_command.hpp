#pragma once
/// `rocm-perf profile` (run an application under a tracer, N times) and `rocm-perf analyze` (the
/// same analysis on rocpd databases recorded elsewhere). Both build one report: per-kernel runtime
/// from trace timestamps, stability across runs, resources and theoretical occupancy.

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rpl::engine {

struct report_options {
  bool json = false;
  bool quiet = false;
  std::filesystem::path out;  ///< write profile.json here when set
  std::string arch;           ///< override the agents' targets for occupancy
};

struct profile_options {
  std::vector<std::string> app;  ///< argv after `--`
  std::string backend = "rocm";  ///< rocm | cuda | timing | auto
  unsigned runs = 5;
  bool debug = false;
  bool no_rocprof = false;
  std::filesystem::path rocprofv3;  ///< empty: found on PATH (or $ROCPROFV3)
  std::filesystem::path tracer;     ///< CUPTI tracer library; empty: next to this executable (or $RPL_CUPTI_TRACER)
  double timeout_s = 0.0;           ///< per run; 0: none
  report_options report;
};

struct analyze_options {
  std::vector<std::filesystem::path> inputs;
  bool per_run = false;  ///< each input (file or folder) is one run, for stability across runs
  report_options report;
};

/// Each returns the process exit code: 0 done, 1 the application or tracer failed, 2 bad input or a
/// missing tool.
int profile_main(const profile_options& options);
int analyze_main(const analyze_options& options);

}  // namespace rpl::engine
