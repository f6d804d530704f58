#pragma once
/// The application mode of `rocm-perf optimize --source FILE... --top K [--app-build STR] -- APP`:
/// profile the application once under the CUDA tracer, rank its kernels as `analyze` does
/// (critical-path share, weighted by how far each kernel is from its roof), map the top K to
/// their definitions in the sources with libclang, and capture each one's first dispatch
/// (`rocm-perf isolate`'s format) so that the loop measures candidates on the replay lane. After
/// the loop, `reprofile_app` rebuilds the application from the patched sources in a scratch copy
/// and profiles it again for the before/after figures. The tracer and the capture are seams
/// (app_tools) so that tests run without a GPU.

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "workers/tracers/trace_recorder.hpp"

namespace rpl::engine {

/// The application could not be profiled, built or captured as asked (exit 1): the message names
/// the command, where its output is, and a fix.
class app_run_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// One kernel chosen from the profile.
struct app_kernel {
  std::string name;   ///< as the trace names it (demangled or mangled as recorded)
  std::string symbol; ///< the code-object symbol (mangled; extern "C": plain)
  /// The function's name in the source (kernel_target::kernel), unqualified.
  std::string function;
  std::filesystem::path source;   ///< the --source that defines it
  double critical_path_share = 0; ///< 0..1, from analyze's ranking (GPU-time share without a path)
  std::string bottleneck;    ///< "latency bound: <analyze's evidence>", or why there is no class
  std::string analysis_text; ///< a few lines: class, counters, occupancy limiter, share
  std::filesystem::path capture_dir; ///< its captured first dispatch, for the replay lane
};

/// One profiled run of the application.
struct app_profile {
  double gpu_time_ns = 0;      ///< every kernel dispatch's duration, summed (helpers included)
  double critical_path_ns = 0; ///< the timeline DAG's critical path (the makespan without one)
  std::string summary;         ///< two lines for the report
  std::filesystem::path trace; ///< the folder of its rocpd databases
};

/// How the application is recorded, captured and built. default_app_tools() gives the CUDA
/// tracer (librpl_cupti_tracer.so) and capture library (librpl_cuda_capture.so), found when first
/// used (a missing one is optimize_input_error then); tests replace them with stand-ins.
struct app_tools {
  /// Records one run of `argv` into `folder` (rocpd databases); expected failures as a status.
  std::function<workers::recorded_run(const std::vector<std::string>& argv,
                                      const std::filesystem::path& folder)>
      record;
  /// Captures the first dispatch of the kernel whose mangled name is `symbol` into `out` (which
  /// does not exist yet); returns an empty string when captured, else why not.
  std::function<std::string(const std::vector<std::string>& argv,
                            const std::string& symbol,
                            const std::filesystem::path& out)>
      capture;
  std::string backend = "cuda"; ///< the profile report's backend name ("rocm" for rocprofv3)
  std::chrono::milliseconds build_timeout{std::chrono::hours(1)}; ///< --app-build's command
};

app_tools default_app_tools();

/// Profiles `app` (argv) under the CUDA tracer into out_dir/app-profile/, ranks its kernels with
/// analyze's analysis by critical-path share times distance to the roof (1 - the higher of the
/// compute and memory % of peak; 1 where no counters say), and walks that ranking: a kernel
/// defined in `sources` (libclang: the trace's mangled name against the declaration's device
/// symbol, else its demangled name against the declaration's qualified name) is kept and its
/// first dispatch captured into out_dir/captures/<symbol>/; one not found, defined twice, or
/// whose capture failed gets one line in `skipped` and the walk goes on, until `k` are kept.
/// `before` gets the run's profile. Throws optimize_input_error for bad input (k = 0, an empty
/// app, no or a missing source, no libclang) and app_run_error when the application fails or
/// leaves no trace.
std::vector<app_kernel> rank_app_kernels(const std::vector<std::string>& app,
                                         const std::vector<std::filesystem::path>& sources,
                                         std::size_t k,
                                         const std::filesystem::path& out_dir,
                                         std::vector<std::string>& skipped,
                                         app_profile& before);
std::vector<app_kernel> rank_app_kernels(const std::vector<std::string>& app,
                                         const std::vector<std::filesystem::path>& sources,
                                         std::size_t k,
                                         const std::filesystem::path& out_dir,
                                         std::vector<std::string>& skipped,
                                         app_profile& before,
                                         const app_tools& tools);

/// Copies `sources` into out_dir/app-build/ (by file name; emptied first), writes `patched` (a
/// source's file name, or its path as given, -> text) over them, runs `build_command` there
/// (split like a command template, {SRC_DIR} = that folder, no shell; its output in
/// out_dir/app-build.log), then profiles `app` into out_dir/app-reprofile/, with argv[0] taken
/// from the scratch folder when the build made a file of that name there. Throws
/// optimize_input_error for bad input (an empty or malformed command, an unknown placeholder, two
/// sources with one file name, a patched name that is no source) and app_run_error when the build
/// fails (naming the log) or the application does.
app_profile reprofile_app(const std::string& build_command,
                          const std::vector<std::filesystem::path>& sources,
                          const std::map<std::string, std::string>& patched,
                          const std::vector<std::string>& app,
                          const std::filesystem::path& out_dir);
app_profile reprofile_app(const std::string& build_command,
                          const std::vector<std::filesystem::path>& sources,
                          const std::map<std::string, std::string>& patched,
                          const std::vector<std::string>& app,
                          const std::filesystem::path& out_dir,
                          const app_tools& tools);

} // namespace rpl::engine
