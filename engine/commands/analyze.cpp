// `rocm-perf analyze`: the profile report from rocpd databases recorded elsewhere (rocprofv3 -d,
// our CUPTI tracer, or an earlier `profile --out`), built exactly as profile builds it.

#include <cstdio>

#include "engine/commands/command.hpp"
#include "engine/commands/profile_output.hpp"
#include "stages/analysis/profile_report_builder.hpp"
#include "stages/trace/counter_passes.hpp"
#include "stages/trace/rocpd_schema.hpp"

namespace rpl::engine::commands {

namespace {

struct analyze_options {
  std::vector<std::filesystem::path> inputs;
  bool per_run = false; ///< each input (file or folder) is one run, for stability across runs
  report_options report;
};

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
    return emit_report(stages::build_profile_report(runs, context), options.report, &analysis);
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
