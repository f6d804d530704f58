// `rocm-perf profile`: runs an application `--runs` times under a trace recorder (rocprofv3, our
// CUPTI tracer, or plain wall-clock timing) and reports its kernels from the databases exactly as
// `analyze` would: runtime, stability across runs, resources, occupancy. With the CUPTI tracer, an
// application that crashes or times out still leaves its trace up to the end: that run is reported
// as partial (exit 1), and no later run starts.

#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include <spdlog/spdlog.h>
#include <stdlib.h>

#include "engine/commands/command.hpp"
#include "engine/commands/profile_output.hpp"
#include "stages/analysis/profile_report_builder.hpp"
#include "stages/trace/rocpd_schema.hpp"
#include "workers/devices/nvidia_gpu.hpp"
#include "workers/tracers/cuda/cupti_recorder.hpp"
#include "workers/tracers/ncu/ncu_counter_recorder.hpp"
#include "workers/tracers/rocprofv3/rocprofv3_counter_recorder.hpp"
#include "workers/tracers/rocprofv3/rocprofv3_recorder.hpp"
#include "workers/tracers/timing/timing_recorder.hpp"

namespace rpl::engine::commands {

namespace {

struct profile_options {
  std::vector<std::string> app; ///< argv after `--`
  std::string backend = "rocm"; ///< rocm | cuda | timing | auto
  unsigned runs = 5;
  bool debug = false;
  bool no_rocprof = false;
  std::filesystem::path rocprofv3; ///< empty: $ROCPROFV3, then PATH
  std::filesystem::path
      tracer; ///< CUPTI tracer library; empty: $RPL_CUPTI_TRACER, then beside this executable
  double timeout_s = 0.0;        ///< per run; 0: none
  std::string counters;          ///< "roofline": one counter pass (or set of passes) after the runs
  std::filesystem::path ncu;     ///< empty: $NCU, PATH, /usr/local/cuda/bin/ncu
  unsigned counter_launches = 0; ///< ncu --launch-count; 0: every launch
  report_options report;
};

/// Bad input or a missing tool: exit 2.
class input_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The application or the tracer failed: exit 1.
class run_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The tools found for the backends that need one.
struct found_tools {
  std::optional<std::filesystem::path> rocprofv3;
  std::optional<std::filesystem::path> tracer;
};

std::chrono::milliseconds run_timeout(const profile_options& options) {
  return std::chrono::milliseconds(
      options.timeout_s > 0 ? static_cast<long>(options.timeout_s * 1000) : 24L * 3600 * 1000);
}

/// --backend auto: rocm when rocprofv3 is there, cuda with an NVIDIA GPU and the tracer, else
/// timing; says which and why on stderr unless the output is machine-read.
std::string choose_backend(const profile_options& options, const found_tools& tools) {
  std::string backend = options.no_rocprof ? "timing" : options.backend;
  if (backend != "auto") {
    return backend;
  }
  std::string why;
  if (tools.rocprofv3) {
    backend = "rocm";
    why = "rocprofv3 found";
  } else if (tools.tracer && workers::nvidia_gpu_present()) {
    backend = "cuda";
    why = "an NVIDIA GPU and the CUPTI tracer found";
  } else {
    backend = "timing";
    why = "no rocprofv3 on PATH and no NVIDIA GPU with the CUPTI tracer";
  }
  if (!options.report.json && !options.report.quiet) {
    std::fprintf(stderr, "rocm-perf profile: --backend auto chose %s (%s)\n", backend.c_str(),
                 why.c_str());
  }
  return backend;
}

/// The recorder of a tracing backend (rocm or cuda), or input_error naming the missing tool.
workers::trace_recorder_ptr make_trace_recorder(const std::string& backend,
                                                const found_tools& tools,
                                                const profile_options& options) {
  if (backend == "cuda" && !tools.tracer) {
    throw input_error("the CUPTI tracer librpl_cupti_tracer.so was not found beside rocm-perf; "
                      "fix: build with the CUDA toolkit (RPL_BUILD_CUDA=ON), pass --tracer PATH, "
                      "or set RPL_CUPTI_TRACER");
  }
  if (backend != "rocm" && backend != "cuda") {
    throw input_error("--backend " + backend +
                      ": unknown backend; fix: rocm, cuda, timing or auto");
  }
  if (backend == "rocm" && !tools.rocprofv3) {
    throw input_error("rocprofv3 not found on PATH (it comes with ROCm 7.x, in rocprofiler-sdk); "
                      "fix: install ROCm and put /opt/rocm/bin on PATH, pass --rocprofv3 PATH, or "
                      "use --no-rocprof to time whole processes instead");
  }
  if (backend == "cuda") {
    return std::make_unique<workers::cupti_recorder>(
        workers::cupti_recorder_options{*tools.tracer, run_timeout(options), options.debug});
  }
  return std::make_unique<workers::rocprofv3_recorder>(
      workers::rocprofv3_options{.executable = *tools.rocprofv3,
                                 .timeout = run_timeout(options),
                                 .echo_output = options.debug});
}

/// Records run `run`; a failure becomes run_error (exit 1), a run without a trace input_error.
/// With `keep_partial`, a failed run that left databases (the CUPTI tracer writes while the
/// application runs) comes back as it is, for the caller to report as partial.
workers::recorded_run record_run(workers::trace_recorder& recorder,
                                 const profile_options& options,
                                 const std::filesystem::path& folder,
                                 unsigned run,
                                 bool keep_partial = false) {
  auto recorded = recorder.record(options.app, folder, run);
  const std::string what = "run " + std::to_string(run) + ": " + recorded.reason;
  if (!recorded.leftovers.empty()) {
    std::string pids;
    for (const pid_t pid : recorded.leftovers)
      pids += (pids.empty() ? "" : ", ") + std::to_string(pid);
    spdlog::warn(
        "run {}: the application left {} process(es) running (pid {}), killed when the run "
        "ended; they may have shared the GPU with what was traced",
        run, recorded.leftovers.size(), pids);
  }
  if (recorded.status == workers::record_status::run_failed) {
    if (keep_partial && !recorded.databases.empty()) {
      return recorded;
    }
    throw run_error(what);
  }
  if (recorded.status == workers::record_status::no_trace) {
    throw input_error(what);
  }
  return recorded;
}

/// The timing backend: whole-process wall time of each run, no per-kernel data.
stages::profile_report timing_report(const profile_options& options) {
  workers::timing_recorder recorder({run_timeout(options), options.debug});
  std::vector<std::int64_t> samples;
  for (unsigned run = 1; run <= options.runs; ++run) {
    samples.push_back(record_run(recorder, options, {}, run).wall.count());
  }
  return stages::timing_profile_report(options.app, samples);
}

/// The runs' folder: --out's traces/ (emptied first), or a temporary one that `temporary` says to
/// remove afterwards.
std::filesystem::path traces_root(const profile_options& options, bool& temporary) {
  if (!options.report.out.empty()) {
    const auto root = options.report.out / "traces";
    std::filesystem::remove_all(root);
    temporary = false;
    return root;
  }
  char pattern[] = "/tmp/rocm-perf-profile-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) {
    throw input_error("cannot create a temporary folder under /tmp");
  }
  temporary = true;
  return pattern;
}

/// The first line of a recorder's reason, without its fix: "./app was killed by SIGABRT
/// (Aborted) under the CUPTI tracer".
std::string reason_summary(const std::string& reason) {
  std::string line = reason.substr(0, reason.find('\n'));
  if (const auto fix = line.find("; fix:"); fix != std::string::npos) {
    line.erase(fix);
  }
  return line;
}

/// The counter passes of --counters roofline, after the traced runs: ncu on CUDA, rocprofv3 --pmc
/// passes for the traced GPU's target on ROCm. Returns their databases; a failure is run_error.
std::vector<std::filesystem::path> record_counters(const profile_options& options,
                                                   const std::string& backend,
                                                   const std::vector<std::filesystem::path>& traced,
                                                   const std::filesystem::path& folder) {
  workers::trace_recorder_ptr recorder;
  if (backend == "cuda") {
    const auto ncu = workers::find_ncu(options.ncu);
    if (!ncu)
      throw input_error("--counters roofline needs Nsight Compute (ncu), which was not found; "
                        "fix: install it with the CUDA toolkit, pass --ncu PATH or set NCU");
    workers::ncu_options o;
    o.executable = *ncu;
    for (const auto& agent : stages::rocpd::reader::open(traced).agents())
      if (agent.type == "GPU") {
        o.metrics = workers::ncu_roofline_metrics(agent.name);
        break;
      }
    o.launch_count = options.counter_launches;
    o.timeout = run_timeout(options);
    o.echo_output = options.debug;
    recorder = std::make_unique<workers::ncu_counter_recorder>(o);
  } else {
    std::string target;
    for (const auto& agent : stages::rocpd::reader::open(traced).agents())
      if (agent.type == "GPU") {
        target = agent.name;
        break;
      }
    auto passes = workers::rocm_roofline_passes(target);
    if (passes.empty())
      throw input_error("--counters roofline: no counter passes are known for " +
                        (target.empty() ? std::string("this GPU") : target) +
                        " (hardware-models.md gives the HBM formula for gfx90a and gfx942); fix: "
                        "record counters with rocprofv3 --pmc yourself and pass the databases to "
                        "rocm-perf analyze");
    const auto rocprofv3 = workers::find_rocprofv3(options.rocprofv3);
    recorder = std::make_unique<workers::rocprofv3_counter_recorder>(
        workers::rocprofv3_options{.executable = *rocprofv3,
                                   .timeout = run_timeout(options),
                                   .echo_output = options.debug},
        std::move(passes));
  }
  auto recorded = recorder->record(options.app, folder, 1);
  if (!recorded.recorded())
    throw run_error("counter pass: " + recorded.reason);
  return recorded.databases;
}

/// Records every run under `root`/run-N, then reports on all of them. A run that failed but left
/// databases (cuda backend) ends the runs: the report covers it and the runs before, says it is
/// partial, and profile exits 1 after printing it.
int trace_and_report(const profile_options& options,
                     const std::string& backend,
                     workers::trace_recorder& recorder,
                     const std::filesystem::path& root) {
  std::vector<std::vector<std::filesystem::path>> runs;
  std::optional<std::pair<unsigned, workers::recorded_run>> failed;
  for (unsigned run = 1; run <= options.runs && !failed; ++run) {
    const auto folder = root / ("run-" + std::to_string(run));
    auto recorded = record_run(recorder, options, folder, run, backend == "cuda");
    if (recorded.status == workers::record_status::run_failed) {
      failed.emplace(run, std::move(recorded));
    }
    // The folder, not the files: the reader expands it and says what is wrong with an empty one.
    runs.push_back({folder});
  }
  const stages::report_context context{
      .backend = backend, .command = options.app, .arch = options.report.arch};
  // The analysis reads the last run's trace (its timeline and DAG) and the counter passes.
  analysis_inputs analysis;
  analysis.timeline = runs.back();
  if (!options.counters.empty() && !failed)
    analysis.counters = record_counters(options, backend, runs.back(), root / "counters");
  if (!failed) {
    // One pass over the dispatch tables gives the report and the last run's timeline.
    auto built = stages::build_profile_report_and_timeline(runs, context, /*side_thread=*/true);
    analysis.timeline_read =
        std::make_shared<const stages::rocpd::timeline>(std::move(built.timeline));
    return emit_report(built.report, options.report, &analysis);
  }
  const std::string run = "run " + std::to_string(failed->first);
  stages::profile_report report;
  try {
    report = stages::build_profile_report(runs, context);
  } catch (const std::exception& error) { // report_error (no dispatch), rocpd_error
    throw run_error(run + ": " + failed->second.reason + "\nwhat the tracer wrote before the end " +
                    "cannot be reported: " + error.what());
  }
  report.partial = true;
  report.partial_reasons.insert(
      report.partial_reasons.begin(),
      run + ": the application ended abnormally: " + reason_summary(failed->second.reason));
  analysis.notes.push_back("the last run ended abnormally: its timeline is what the tracer "
                           "wrote before the end");
  const int emitted = emit_report(report, options.report, &analysis);
  std::fprintf(stderr,
               "rocm-perf profile: error: %s: %s\nrocm-perf profile: the report is partial: it "
               "holds what the tracer wrote before the application ended%s\n",
               run.c_str(), failed->second.reason.c_str(),
               failed->first < options.runs ? " (later runs were not started)" : "");
  return emitted != 0 ? emitted : exit_code::run_failed;
}

int profile(const profile_options& options) {
  if (options.app.empty()) {
    throw input_error(
        "profile: no application given; fix: rocm-perf profile [options] -- APP [ARGS...]");
  }
  if (options.runs == 0) {
    throw input_error("--runs 0: at least one run is needed; fix: --runs 5");
  }
  const found_tools tools{workers::find_rocprofv3(options.rocprofv3),
                          workers::find_cupti_tracer(options.tracer)};
  const std::string backend = choose_backend(options, tools);
  if (backend == "timing") {
    if (!options.counters.empty())
      throw input_error("--counters " + options.counters +
                        " needs a tracing backend (rocm or cuda), not timing; fix: drop "
                        "--no-rocprof or pass --backend rocm|cuda");
    return emit_report(timing_report(options), options.report);
  }
  const auto recorder = make_trace_recorder(backend, tools, options);
  bool temporary = false;
  const auto root = traces_root(options, temporary);
  const bool remove_root = temporary && !options.debug; // --debug keeps the traces
  try {
    const int code = trace_and_report(options, backend, *recorder, root);
    if (remove_root) {
      std::filesystem::remove_all(root);
    }
    return code;
  } catch (...) {
    if (remove_root) {
      std::filesystem::remove_all(root);
    }
    throw;
  }
}

/// 0 done, 1 the application or tracer failed, 2 bad input or a missing tool.
int profile_main(const profile_options& options) {
  try {
    return profile(options);
  } catch (const input_error& error) {
    std::fprintf(stderr, "rocm-perf profile: error: %s\n", error.what());
    return exit_code::bad_input;
  } catch (const stages::report_error& error) {
    std::fprintf(stderr, "rocm-perf profile: error: %s\n", error.what());
    return exit_code::bad_input;
  } catch (const stages::rocpd::rocpd_error& error) {
    std::fprintf(stderr, "rocm-perf profile: error: %s\n", error.what());
    return exit_code::bad_input;
  } catch (const run_error& error) {
    std::fprintf(stderr, "rocm-perf profile: error: %s\n", error.what());
    return exit_code::run_failed;
  }
}

class profile_command final : public command {
public:
  void add_to(CLI::App& app) override {
    cmd_ = app.add_subcommand("profile",
                              "Run an application under a tracer and report its kernels: runtime, "
                              "stability, resources, occupancy");
    cmd_->add_option("--backend", options_.backend,
                     "rocm (rocprofv3) | cuda (CUPTI tracer) | timing | auto")
        ->check(CLI::IsMember({"rocm", "cuda", "timing", "auto"}));
    cmd_->add_option("--tracer", options_.tracer, "CUPTI tracer library for --backend cuda");
    cmd_->add_option("--counters", options_.counters,
                     "roofline: after the runs, record the roofline's hardware counters (cuda: "
                     "one ncu pass; rocm: rocprofv3 --pmc passes) for roofline.json and the "
                     "bottleneck classes")
        ->check(CLI::IsMember({"roofline"}));
    cmd_->add_option("--ncu", options_.ncu, "Nsight Compute for --counters (default: PATH)");
    cmd_->add_option("--counter-launches", options_.counter_launches,
                     "ncu: profile only the first N kernel launches (default: all)");
    cmd_->add_option("--runs", options_.runs, "Runs of the application");
    cmd_->add_flag("--json", options_.report.json,
                   "Print strict JSON (docs/schema/profile.schema.json)");
    cmd_->add_flag("--quiet", options_.report.quiet, "Print only the runtime in ms");
    cmd_->add_flag("--debug", options_.debug, "Show rocprofv3's own output; keep its traces");
    cmd_->add_flag("--no-rocprof", options_.no_rocprof,
                   "Timing backend: whole-process wall time, no per-kernel data");
    cmd_->add_option("--out", options_.report.out,
                     "Write profile.json, analysis.json, dag.json, roofline.json (and the traces) "
                     "here");
    cmd_->add_option("--perfetto", options_.report.perfetto,
                     "Write a Chrome/Perfetto trace (JSON) of the last run's timeline here");
    cmd_->add_option("--report", options_.report.html,
                     "Write a self-contained HTML report (roofline, timeline, kernels) here");
    cmd_->add_option("--peak", options_.report.peaks,
                     "Roofline peak KEY=VALUE instead of configs/arch's: hbm (bytes/s) or a data "
                     "type (FLOP/s), e.g. --peak hbm=4.8e12")
        ->expected(1)
        ->take_all();
    cmd_->add_option("--arch", options_.report.arch, "Target for occupancy (default: the agent's)");
    cmd_->add_option("--thread-trace", options_.report.thread_traces,
                     "AMD thread-trace output (rocprofv3 --att: its folder, stats_*.csv or "
                     "code.json) for each traced kernel's stall summary; repeatable")
        ->expected(1)
        ->take_all();
    cmd_->add_option("--rocprofv3", options_.rocprofv3, "rocprofv3 executable (default: PATH)");
    cmd_->add_option("--timeout", options_.timeout_s,
                     "Per-run timeout, seconds (0: none); cuda: SIGTERM, SIGKILL 5 s later, and "
                     "the partial trace is reported");
    cmd_->add_option("app", options_.app, "-- APP [ARGS...]")->expected(-1);
  }

  bool chosen() const override { return cmd_->parsed(); }

  int run() override {
    setup_logging(true);
    tune_allocator_for_traces();
    return profile_main(options_);
  }

private:
  CLI::App* cmd_ = nullptr;
  profile_options options_;
};

} // namespace

command_ptr make_profile_command() {
  return std::make_unique<profile_command>();
}

} // namespace rpl::engine::commands
