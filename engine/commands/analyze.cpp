// `rocm-perf analyze`: the profile report from rocpd databases recorded elsewhere (rocprofv3 -d,
// our CUPTI tracer, or an earlier `profile --out`), built exactly as profile builds it.

#include <cstdio>
#include <memory>

#include "engine/commands/command.hpp"
#include "engine/commands/profile_output.hpp"
#include "stages/analysis/profile_report_builder.hpp"
#include "stages/trace/counter_passes.hpp"
#include "stages/trace/cupti_mapping.hpp"
#include "stages/trace/rocpd_schema.hpp"
#include "workers/capture/capture_directory.hpp"
#include "workers/replay/replay_run.hpp"
#include "workers/replay/replay_timing.hpp"

namespace rpl::engine::commands {

namespace {

struct analyze_options {
  std::vector<std::filesystem::path> inputs;
  bool per_run = false; ///< each input (file or folder) is one run, for stability across runs
  report_options report;
  std::filesystem::path replay; ///< a capture of one of the traced kernels, timed in isolation
  int replay_iterations = 20;
  std::string replay_timing; ///< --replay-timing; empty: the replay's default (cupti)
};

/// --replay: the captured dispatch timed in isolation (rpl-replay-cuda), next to the same kernel's
/// in-application median from the databases, and how each side was timed (by default both from
/// kernel activity records' GPU start/end: like with like). Printed after the report (on stderr
/// with --json, so stdout stays the report). 0 compared; 1 the replay failed; 2 a bad capture or a
/// kernel the trace does not hold; 3 the replay did not reproduce the captured output.
int compare_with_replay(const analyze_options& options, const stages::profile_report& report) {
  FILE* to = options.report.json ? stderr : stdout;
  workers::capture::capture_directory capture;
  try {
    capture = workers::capture::load_capture(options.replay);
  } catch (const stages::capture::capture_error& error) {
    std::fprintf(stderr, "rocm-perf analyze: error: --replay: %s\n", error.what());
    return exit_code::bad_input;
  }
  const std::string wanted = stages::cupti::demangle(capture.dispatch.kernel);
  const stages::kernel_report* in_app = nullptr;
  for (const auto& k : report.kernels) {
    if (k.runtime.name == wanted || k.runtime.name == capture.dispatch.kernel) {
      in_app = &k;
    }
  }
  if (in_app == nullptr) {
    std::fprintf(stderr,
                 "rocm-perf analyze: error: --replay: the databases hold no kernel %s (the "
                 "capture's); fix: capture a kernel of this trace\n",
                 wanted.c_str());
    return exit_code::bad_input;
  }
  const auto program = workers::replay::find_cuda_replay_program();
  if (!program) {
    std::fprintf(stderr, "rocm-perf analyze: error: --replay: rpl-replay-cuda was not found beside "
                         "rocm-perf; fix: build with CUDA (RPL_BUILD_CUDA=ON)\n");
    return exit_code::run_failed;
  }
  workers::replay::replay_run_options run;
  run.program = *program;
  run.capture = options.replay;
  run.iterations = options.replay_iterations;
  run.timing = options.replay_timing;
  const auto result = workers::replay::run_replay(run);
  if (result.exit_code != 0 || !result.document.is_object() ||
      !result.document["timing"].is_object()) {
    std::fprintf(stderr, "rocm-perf analyze: --replay: the replay %s: %s\n",
                 result.exit_code == 3 ? "did not reproduce the captured output" : "failed",
                 result.message.c_str());
    return result.exit_code == 3 ? exit_code::no_result : exit_code::run_failed;
  }
  const auto& t = result.document["timing"];
  const double isolated = t.value("median_ns", 0.0);
  const double app = in_app->runtime.median_ns;
  std::fprintf(to,
               "\nisolated replay of %s (%s, verified %s): median %.3f us over %d launches (cv "
               "%.2f %%)\nin the application: median %.3f us over %zu dispatches (cv %.2f %%); "
               "replay / application = %.4f\n",
               wanted.c_str(), options.replay.string().c_str(),
               result.document["verification"].value("mode", std::string()).c_str(), isolated / 1e3,
               t.value("iterations", 0), 100.0 * t.value("cv", 0.0), app / 1e3,
               in_app->runtime.count, 100.0 * in_app->runtime.cv, app > 0 ? isolated / app : 0.0);
  std::vector<std::string> agents;
  for (const auto& a : report.agents) {
    agents.push_back(a.name);
  }
  std::fprintf(to, "timed: application: %s\n       replay: %s\n",
               workers::replay::describe_trace_timing(in_app->runtime.count, agents).c_str(),
               workers::replay::describe_replay_timing(t).c_str());
  return exit_code::done;
}

/// 0 done, 2 bad input (no, unreadable or empty databases; profile.json not writable).
int analyze(const analyze_options& options) {
  if (options.inputs.empty()) {
    std::fprintf(stderr, "rocm-perf analyze: error: analyze: no database given; fix: rocm-perf "
                         "analyze DB... (files or folders that rocprofv3 wrote)\n");
    return exit_code::bad_input;
  }
  try {
    // Counter passes give counters only: their timestamps are the profiler's (counter_passes.hpp).
    std::vector<std::vector<std::filesystem::path>> runs;
    analysis_inputs analysis;
    for (const auto& input :
         options.per_run ? options.inputs : std::vector<std::filesystem::path>{}) {
      auto roles = stages::rocpd::split_counter_passes({input});
      runs.push_back(roles.timeline);
      analysis.counters.insert(analysis.counters.end(), roles.counters.begin(),
                               roles.counters.end());
    }
    if (!options.per_run) {
      const auto roles = stages::rocpd::split_counter_passes(options.inputs);
      runs.push_back(roles.timeline);
      analysis.counters = roles.counters;
      if (roles.timeline_from_counter_passes)
        analysis.notes.push_back("every database is a counter pass: its timestamps (serialized "
                                 "or replayed launches) stand in for the application's timeline");
    }
    // The timeline and the DAG come from one run: the last.
    analysis.timeline = runs.back();
    stages::report_context context;
    context.backend = "rocpd"; // no command: the databases were recorded elsewhere
    context.arch = options.report.arch;
    // When the counter passes are among the runs (every file is one, as rocprofv3 --pmc writes
    // them), their counters come from the same pass.
    context.counter_files = analysis.counters;
    // One pass over the dispatch tables gives the report and the last run's timeline.
    auto built = stages::build_profile_report_and_timeline(runs, context, /*side_thread=*/true);
    analysis.timeline_read =
        std::make_shared<const stages::rocpd::timeline>(std::move(built.timeline));
    if (built.counters)
      analysis.counters_read =
          std::make_shared<const std::map<std::string, stages::rocpd::kernel_counters>>(
              std::move(*built.counters));
    // The timeline and the counters (a million ops, a map per sampled dispatch) outlive the verb.
    keep_until_exit(analysis.timeline_read);
    keep_until_exit(analysis.counters_read);
    const stages::profile_report& report = built.report;
    const int emitted = emit_report(report, options.report, &analysis);
    if (emitted != exit_code::done || options.replay.empty()) {
      return emitted;
    }
    return compare_with_replay(options, report);
  } catch (const stages::report_error& error) {
    std::fprintf(stderr, "rocm-perf analyze: error: %s\n", error.what());
    return exit_code::bad_input;
  } catch (const stages::rocpd::rocpd_error& error) {
    std::fprintf(stderr, "rocm-perf analyze: error: %s\n", error.what());
    return exit_code::bad_input;
  }
}

class analyze_command final : public command {
public:
  void add_to(CLI::App& app) override {
    cmd_ = app.add_subcommand("analyze", "Analyze rocpd databases recorded elsewhere");
    cmd_->add_option("databases", options_.inputs, "rocpd databases or folders of them")
        ->expected(-1);
    cmd_->add_flag("--per-run", options_.per_run,
                   "Each argument is one run (for stability across runs)");
    cmd_->add_flag("--json", options_.report.json, "Print strict JSON");
    cmd_->add_option("--replay", options_.replay,
                     "A captured dispatch of one of the traced kernels (rocm-perf isolate --out "
                     "DIR): also time it in isolation, next to its in-application time");
    cmd_->add_option("--replay-iterations", options_.replay_iterations,
                     "Timed launches of the --replay (default 20)")
        ->check(CLI::Range(1, 1000000));
    cmd_->add_option("--replay-timing", options_.replay_timing,
                     "How the --replay's launches are timed: cupti (default, as the trace times "
                     "the application's dispatches), events or batch (rocm-perf replay --timing)")
        ->check(CLI::IsMember({"cupti", "events", "batch"}));
    cmd_->add_flag("--quiet", options_.report.quiet, "Print only the runtime in ms");
    cmd_->add_option("--out", options_.report.out,
                     "Write profile.json, analysis.json, dag.json and roofline.json here");
    cmd_->add_option("--perfetto", options_.report.perfetto,
                     "Write a Chrome/Perfetto trace (JSON) of the timeline here");
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
  }

  bool chosen() const override { return cmd_->parsed(); }

  int run() override {
    setup_logging(true);
    tune_allocator_for_traces();
    return analyze(options_);
  }

private:
  CLI::App* cmd_ = nullptr;
  analyze_options options_;
};

} // namespace

command_ptr make_analyze_command() {
  return std::make_unique<analyze_command>();
}

} // namespace rpl::engine::commands
