#pragma once
/// The application mode of `rocm-perf optimize --top K [--source-dir DIR | --source FILE...]
/// [--app-build STR] -- APP`: profile the application once under the CUDA tracer, rank its
/// kernels as `analyze` does (critical-path share, weighted by how far each kernel is from its
/// roof), find the top K's definitions in the sources with libclang, and capture each one's first
/// dispatch
/// (`rocm-perf isolate`'s format) so that the loop measures candidates on the replay lane. After
/// the loop, `reprofile_app` rebuilds the application from the patched sources in a scratch copy
/// and profiles it again for the before/after figures. The tracer and the capture are seams
/// (app_tools) so that tests run without a GPU.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "workers/lanes/kernel/sanitizer_pass.hpp"
#include "workers/lanes/lane_backend.hpp"
#include "workers/tracers/trace_recorder.hpp"

namespace rpl::engine {

/// The application could not be profiled, built or captured as asked (exit 1): the message names
/// the command, where its output is, and a fix.
class app_run_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Where the ranked kernels' definitions are looked for.
struct app_source_search {
  /// --source: only these files are searched (each must exist); empty: `dir` is searched.
  std::vector<std::filesystem::path> files;
  /// --source-dir (default: the current directory): searched recursively for .cu, .cuh, .hip,
  /// .cpp, .cc, .cxx, .h and .hpp files when `files` is empty, leaving out hidden folders, build
  /// folders (build*, cmake-build-*, CMakeFiles, _build) and `exclude`. With it, the --app-build
  /// copy is this folder's tree.
  std::filesystem::path dir;
  std::vector<std::filesystem::path> exclude;  ///< folders left out (--out)
  std::size_t max_files = 5000;                ///< files read at most (the notes say when hit)
  std::uintmax_t max_total_bytes = 256u << 20; ///< bytes read at most (the notes say when hit)
  std::uintmax_t max_file_bytes = 4u << 20;    ///< larger files are not read
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
  double capture_seconds = 0;        ///< the capture's wall time
  std::size_t rank = 0;              ///< its place in the walk down the ranking (0: first)
};

/// A ranked kernel left out before its loop: `skipped` (not in the sources, defined twice, its
/// dispatch not capturable) or `not_reached` (no time left for its capture, or interrupted).
struct app_left_out {
  std::string name;   ///< the function's name when its definition was found, else the trace's
  std::string status; ///< "skipped" or "not_reached"
  std::string reason; ///< why, and a fix where there is one
  std::filesystem::path source; ///< where it is defined, when known
  double seconds = 0;           ///< spent on it (a failed capture)
  std::size_t rank = 0;         ///< its place in the walk down the ranking (0: first)
};

/// One profiled run of the application.
struct app_profile {
  double gpu_time_ns = 0;      ///< every kernel dispatch's duration, summed (helpers included)
  double critical_path_ns = 0; ///< the timeline DAG's critical path (the makespan without one)
  /// Kernel time on the critical path (analyze's per-kernel critical_path_ns, summed) over its
  /// length, 0..1; none without a critical path. The rest of the path is host work, copies and
  /// waits, which kernel gains do not shorten.
  std::optional<double> gpu_share;
  std::string summary;         ///< two lines for the report
  std::filesystem::path trace; ///< the folder of its rocpd databases
};

/// One run of the application under the tracer or the capture library at most: an application
/// that waits on itself across streams (a host function holding a stream while another dispatch
/// is captured) never ends under capture; the kernel is then skipped with the reason.
inline constexpr std::chrono::milliseconds app_run_timeout{std::chrono::seconds(180)};

/// Where a capture runs and how long it may take.
struct capture_place {
  std::optional<int> device; ///< the GPU it runs on (as the lanes pin theirs); none: the app's
  std::chrono::milliseconds timeout = app_run_timeout;
};

/// One run of the application pass of the sanitizer.
struct app_sanitize_request {
  std::vector<std::string> argv;
  workers::app_kernel_watch kernel;
  std::string tool;
  std::filesystem::path log_dir;
  std::string log_stem; ///< the log is <log_stem>.<tool>.log in log_dir
  int device = 0;
  std::chrono::milliseconds timeout = app_run_timeout;
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
  /// does not exist yet), on `where`; returns an empty string when captured, else why not.
  std::function<std::string(const std::vector<std::string>& argv,
                            const std::string& symbol,
                            const std::filesystem::path& out,
                            const capture_place& where)>
      capture;
  /// The application pass of the sanitizer (app_sanitizer.hpp): one run of an application
  /// under one compute-sanitizer tool, watching one kernel
  /// (workers/lanes/kernel/sanitizer_pass.hpp, run_app_sanitizer).
  std::function<workers::sanitizer_outcome(const app_sanitize_request&)> sanitize;
  /// Why `sanitize` cannot run here (no compute-sanitizer); empty when it can.
  std::function<std::string()> sanitizer_missing;
  std::string backend = "cuda"; ///< the profile report's backend name ("rocm" for rocprofv3)
  std::chrono::milliseconds build_timeout{std::chrono::hours(1)}; ///< --app-build's command
};

app_tools default_app_tools();

/// What the walk down the ranking reports and asks as it goes (all optional): the before
/// profile's wall time (the budget reserves the after phase from it), before each capture
/// whether it may start (empty: yes; else the reason the kernel is not_reached), and each
/// capture's wall time, failed or not.
struct app_walk_hooks {
  std::function<void(std::chrono::steady_clock::duration)> profiled;
  std::function<std::string()> may_capture;
  std::function<void(std::chrono::steady_clock::duration)> captured; ///< each capture's time
  /// Several GPUs: the walk captures nothing. It keeps the first `k` kernels defined in the
  /// sources and up to `k` more after them (spares for captures that fail), each with its
  /// capture_dir named, and the device that takes a kernel captures it there
  /// (capture_app_kernel) just before its loop, beside the other devices' loops. may_capture
  /// and captured are not called then.
  bool defer_captures = false;
};

/// rank_app_kernels' outcome.
struct app_ranking {
  std::vector<app_kernel> chosen;     ///< at most k, in ranking order
  std::vector<app_left_out> left_out; ///< ranked kernels not kept, in ranking order
  app_profile before;                 ///< the application's profile
  std::vector<std::string> notes;     ///< how the sources were searched (files, caps)
};

/// Profiles `app` (argv) under the CUDA tracer into out_dir/app-profile/, ranks its kernels with
/// analyze's analysis by critical-path share times distance to the roof (1 - the higher of the
/// compute and memory % of peak; 1 where no counters say), and walks that ranking: a kernel
/// defined once in the sources (libclang: the trace's mangled name against the declaration's
/// device symbol, else its demangled name against the declaration's qualified name; with
/// source-dir discovery only files whose text holds `__global__` and the kernel's base name are
/// parsed) is kept and its first dispatch captured into out_dir/captures/<symbol>/; one not
/// found, defined twice, or whose capture failed is `skipped` with the reason, one whose capture
/// the hooks refuse `not_reached`, and the walk goes on until `k` are kept (with
/// hooks.defer_captures: nothing captured, up to `2k` kept). Throws
/// optimize_input_error for bad input (k = 0, an empty app, a missing --source or --source-dir,
/// no libclang) and app_run_error when the application fails or leaves no trace.
app_ranking rank_app_kernels(const std::vector<std::string>& app,
                             const app_source_search& search,
                             std::size_t k,
                             const std::filesystem::path& out_dir,
                             const app_tools& tools,
                             const app_walk_hooks& hooks = {});

/// Captures `kernel`'s first dispatch into its capture_dir (emptied first) on `where` and sets
/// its capture_seconds; returns an empty string when captured, else the reason it is skipped
/// (with a fix).
std::string capture_app_kernel(const std::vector<std::string>& app,
                               const app_tools& tools,
                               const capture_place& where,
                               app_kernel& kernel);

/// The sources the --app-build copy is made of: `root` (its tree is copied, less hidden and build
/// folders and `exclude`; patched files keep their paths under it) or, without a root, `files`
/// (copied flat by file name, as named with --source). In a tree copy, files over 16 MiB (data)
/// are symbolic links to the originals.
struct app_build_sources {
  std::filesystem::path root;
  std::vector<std::filesystem::path> files;
  std::vector<std::filesystem::path> exclude;
};

/// Copies the sources into out_dir/app-build/ (emptied first), writes `patched` (a source's path
/// as the report names it, or its file name for a flat copy -> text) over them, runs
/// `build_command` there (split like a command template, {SRC_DIR} = that folder, no shell; its
/// output in out_dir/app-build.log; at most `build_timeout`, the tools' when zero), then profiles
/// `app` into out_dir/app-reprofile/, with argv[0] taken from the scratch folder when the build
/// made a file of that name there. Throws optimize_input_error for bad input (an empty or
/// malformed command, an unknown placeholder, two flat sources with one file name, a patched
/// file that is no source) and app_run_error when the build fails (naming the log) or the
/// application does.
/// reprofile_app's first half: the copy made, patched and built as described there; returns
/// APP's argv to run the build (argv[0] from the scratch folder when the build made it).
std::vector<std::string> build_app(const std::string& build_command,
                                   const app_build_sources& sources,
                                   const std::map<std::string, std::string>& patched,
                                   const std::vector<std::string>& app,
                                   const std::filesystem::path& out_dir,
                                   const app_tools& tools,
                                   std::chrono::milliseconds build_timeout = {});

/// The built application `argv` profiled into out_dir/app-reprofile/ (reprofile_app's second
/// half).
app_profile profile_built_app(const std::vector<std::string>& argv,
                              const std::filesystem::path& out_dir,
                              const app_tools& tools);

app_profile reprofile_app(const std::string& build_command,
                          const app_build_sources& sources,
                          const std::map<std::string, std::string>& patched,
                          const std::vector<std::string>& app,
                          const std::filesystem::path& out_dir,
                          const app_tools& tools,
                          std::chrono::milliseconds build_timeout = {});

} // namespace rpl::engine
