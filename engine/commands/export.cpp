// `rocm-perf export --format kernel-tuner --db FILE --run N`: a run's results as a Kernel Tuner
// cache file, so an exhaustive sweep becomes a landscape that others (and `autotune --recorded`)
// can replay. The objective is `time` in milliseconds: the candidate's median with its samples as
// `times`; a candidate whose build failed is "CompilationFailedConfig", one that failed to run
// "RuntimeFailedConfig", as Kernel Tuner writes them. Parameters in name order.

#include <cstdio>
#include <fstream>
#include <iostream>

#include "engine/commands/command.hpp"
#include "engine/store/results_store.hpp"
#include "stages/search/landscape.hpp"

namespace rpl::engine::commands {

namespace {

struct export_options {
  std::string format = "kernel-tuner";
  std::filesystem::path db;
  std::string run; ///< 1-based index in the store's order, or a run id
  std::filesystem::path out;
};

/// The run `which` names, or nullptr; `list` gets every run for the error.
const run_record* pick(const std::vector<run_record>& runs, const std::string& which) {
  const bool index = !which.empty() && which.find_first_not_of("0123456789") == std::string::npos;
  if (index) {
    const auto n = std::stoull(which);
    return n >= 1 && n <= runs.size() ? &runs[n - 1] : nullptr;
  }
  for (const auto& r : runs)
    if (r.run_id == which)
      return &r;
  return nullptr;
}

int export_run(const export_options& options) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(options.db, error)) {
    std::fprintf(stderr,
                 "rocm-perf export: error: --db %s: no such results database; fix: pass "
                 "the --db of an autotune run\n",
                 options.db.c_str());
    return exit_code::bad_input;
  }
  try {
    results_store store(options.db);
    const auto runs = store.runs();
    const run_record* run = pick(runs, options.run);
    if (run == nullptr) {
      std::string list;
      for (std::size_t i = 0; i < runs.size(); ++i)
        list += (list.empty() ? "" : ", ") + std::to_string(i + 1) + " (" + runs[i].run_id + ", " +
                runs[i].status + ")";
      std::fprintf(stderr,
                   "rocm-perf export: error: --run %s: no such run in %s; fix: one of: %s\n",
                   options.run.c_str(), options.db.c_str(),
                   list.empty() ? "(the database holds no run)" : list.c_str());
      return exit_code::bad_input;
    }
    const auto candidates = store.candidates(run->run_id);
    if (candidates.empty()) {
      std::fprintf(stderr, "rocm-perf export: run %s measured no candidate: nothing to export\n",
                   run->run_id.c_str());
      return exit_code::no_result;
    }
    stages::landscape l;
    l.kernel_name = run->space_file;
    for (const auto& [name, value] : candidates.front().params.items())
      l.parameters.push_back(name);
    for (const auto& c : candidates) {
      if (!c.device_model.empty() && l.device_name.empty())
        l.device_name = c.device_model;
      stages::landscape_entry e;
      for (const auto& name : l.parameters) {
        const auto value =
            c.params.contains(name) ? stages::from_json_value(c.params[name]) : std::nullopt;
        if (!value) {
          std::fprintf(stderr,
                       "rocm-perf export: error: candidate %s has no value of %s; fix: "
                       "export a run of one space\n",
                       c.key.c_str(), name.c_str());
          return exit_code::bad_input;
        }
        e.config.params.emplace_back(name, *value);
      }
      if (c.status == "ok") {
        e.value = c.stats.median / 1e6;
        for (const auto ns : store.samples(run->run_id, c.key))
          e.samples.push_back(static_cast<double>(ns) / 1e6);
      } else {
        // A recorded run keeps the file's own reason.
        const std::string recorded = "recorded: ";
        e.failure = c.reason.rfind(recorded, 0) == 0 ? c.reason.substr(recorded.size())
                    : c.compile_status != "ok"       ? "CompilationFailedConfig"
                                                     : "RuntimeFailedConfig";
      }
      l.entries.push_back(std::move(e));
    }
    if (l.device_name.empty())
      l.device_name = candidates.front().lane;
    const std::string text = stages::to_kernel_tuner_cache(l).dump(1) + "\n";
    if (options.out.empty()) {
      std::cout << text;
    } else {
      std::ofstream out(options.out, std::ios::binary);
      out << text;
      if (!out) {
        std::fprintf(stderr,
                     "rocm-perf export: error: --out %s: cannot write it; fix: check the "
                     "folder and its permissions\n",
                     options.out.c_str());
        return exit_code::bad_input;
      }
      std::fprintf(stderr, "wrote %s: %zu configurations of run %s\n", options.out.c_str(),
                   l.entries.size(), run->run_id.c_str());
    }
    return exit_code::done;
  } catch (const store_error& e) {
    std::fprintf(stderr, "rocm-perf export: error: %s\n", e.what());
    return exit_code::bad_input;
  }
}

class export_command final : public command {
public:
  void add_to(CLI::App& app) override {
    cmd_ = app.add_subcommand("export", "Write an autotune run's results in another tool's format");
    cmd_->add_option("--format", options_.format, "kernel-tuner (a Kernel Tuner cache file)")
        ->check(CLI::IsMember({"kernel-tuner"}));
    cmd_->add_option("--db", options_.db, "Results database of the run")->required();
    cmd_->add_option("--run", options_.run, "The run: its number (1 = oldest) or its id")
        ->required();
    cmd_->add_option("--out", options_.out, "Write here instead of standard output");
  }
  bool chosen() const override { return cmd_->parsed(); }
  int run() override {
    setup_logging(true);
    return export_run(options_);
  }

private:
  CLI::App* cmd_ = nullptr;
  export_options options_;
};

} // namespace

command_ptr make_export_command() {
  return std::make_unique<export_command>();
}

} // namespace rpl::engine::commands
