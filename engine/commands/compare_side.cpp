#include "engine/commands/compare_side.hpp"

#include <algorithm>
#include <exception>
#include <map>
#include <system_error>
#include <thread>

#include <nlohmann/json.hpp>

#include "stages/analysis/profile_report_builder.hpp"
#include "stages/compare/launch_collector.hpp"
#include "stages/sqlite/sqlite_statement.hpp"
#include "stages/trace/counter_passes.hpp"
#include "stages/trace/rocpd_schema.hpp"

namespace rpl::engine::commands {

namespace {

namespace fs = std::filesystem;
namespace rocpd = stages::rocpd;

const char* const input_fix = "fix: give a rocpd file, a folder of them (rocprofv3 -d DIR) or a "
                              "`rocm-perf profile --out DIR` folder";

/// Whether `path` is an SQLite file holding the results store's tables (autotune, optimize).
bool is_results_store(const fs::path& path) {
  char header[16] = {};
  {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr)
      return false;
    const std::size_t read = std::fread(header, 1, sizeof header, f);
    std::fclose(f);
    if (read != sizeof header || std::string(header, 15) != "SQLite format 3")
      return false;
  }
  try {
    const stages::sqlite::connection db(path, SQLITE_OPEN_READONLY);
    stages::sqlite::statement q(db, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND "
                                    "name IN ('candidates', 'runs', 'candidate_intervals')");
    return q.step() && q.column_int64(0) == 3;
  } catch (const std::exception&) {
    return false; // the rocpd reader names what is wrong with it
  }
}

/// A `profile --out` folder's runs: traces/run-1, run-2, ... in number order, and its counters.
bool profile_out_runs(const fs::path& dir,
                      std::vector<std::vector<fs::path>>& runs,
                      std::vector<fs::path>& counters) {
  const fs::path traces = dir / "traces";
  if (!fs::exists(dir / "profile.json") || !fs::is_directory(traces))
    return false;
  std::vector<std::pair<long, fs::path>> numbered;
  for (const auto& entry : fs::directory_iterator(traces)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory() && name.rfind("run-", 0) == 0)
      numbered.emplace_back(std::strtol(name.c_str() + 4, nullptr, 10), entry.path());
  }
  std::sort(numbered.begin(), numbered.end());
  for (const auto& [n, path] : numbered)
    runs.push_back({path});
  if (fs::is_directory(traces / "counters"))
    counters.push_back(traces / "counters");
  return true;
}

/// The runs of the side: each input one run, a profile --out folder its runs.
std::vector<std::vector<fs::path>> resolve_runs(const std::string& label,
                                                const std::vector<fs::path>& inputs,
                                                std::vector<fs::path>& counter_inputs) {
  std::vector<std::vector<fs::path>> runs;
  for (const auto& input : inputs) {
    std::error_code ec;
    if (!fs::exists(input, ec))
      throw compare_input_error(label + ": " + input.string() + ": no such file or folder; " +
                                input_fix);
    // An optimize --out folder holds rocpd files of two states (before, after) and captures:
    // never one run. Its before and after are its two application profiles.
    const fs::path optimize_dir = fs::is_directory(input) ? input : input.parent_path();
    if ((fs::is_directory(input) || input.filename() == "optimize.sqlite") &&
        fs::exists(optimize_dir / "optimize.sqlite", ec))
      throw compare_input_error(
          label + ": " + input.string() +
          ": an optimize --out folder (or its journal), which keeps each kernel's medians, not "
          "one state of the application; fix: compare the application profiles it recorded, "
          "rocm-perf compare " +
          (optimize_dir / "app-profile").string() + " " +
          (optimize_dir / "app-reprofile").string());
    if (fs::is_directory(input)) {
      const std::size_t before = runs.size();
      if (profile_out_runs(input, runs, counter_inputs)) {
        if (runs.size() == before)
          throw compare_input_error(label + ": " + input.string() +
                                    ": a profile --out folder without traces/run-N folders (was "
                                    "it written with --out by an older rocm-perf?); fix: profile "
                                    "again with --out, or give the rocpd files");
        continue;
      }
    } else if (is_results_store(input)) {
      throw compare_input_error(label + ": " + input.string() +
                                ": a results store among other inputs; a store is a side on its "
                                "own; fix: give one store for each side (rocm-perf compare "
                                "BASE.db NEW.db), or only traces");
    }
    runs.push_back({input});
  }
  return runs;
}

/// "block_size_x=64 tile=2": a configuration's parameters in name order.
std::string configuration_name(const std::string& params_json) {
  const auto params = nlohmann::json::parse(params_json, nullptr, false);
  if (!params.is_object())
    return params_json;
  std::string out;
  for (const auto& [name, value] : params.items())
    out += (out.empty() ? "" : " ") + name + "=" +
           (value.is_string() ? value.get<std::string>() : value.dump());
  return out.empty() ? "(no parameters)" : out;
}

/// A results store's side: its latest run's measured configurations, each with its samples.
compare_side read_store_side(const std::string& label, const fs::path& path) {
  compare_side side;
  try {
    const stages::sqlite::connection db(path, SQLITE_OPEN_READONLY);
    stages::sqlite::statement run(db, "SELECT run_id FROM runs ORDER BY started_at DESC, rowid "
                                      "DESC LIMIT 1");
    if (!run.step())
      throw compare_input_error(label + ": " + path.string() +
                                ": a results store with no run; fix: give the --db of an "
                                "autotune run that measured something");
    side.summary.store_run = run.column_text(0);
    std::map<std::string, std::string> names; // candidate key -> configuration
    stages::sqlite::statement candidates(
        db, "SELECT key, params_json FROM candidates WHERE run_id = ?1 ORDER BY space_index");
    candidates.bind_text(1, side.summary.store_run);
    while (candidates.step())
      names[candidates.column_text(0)] = configuration_name(candidates.column_text(1));
    stages::sqlite::statement samples(db, "SELECT key, duration_ns FROM measurements WHERE "
                                          "run_id = ?1 ORDER BY key, sample_index");
    samples.bind_text(1, side.summary.store_run);
    std::map<std::string, stages::compare::launch_samples> by_key;
    while (samples.step()) {
      const std::string key = samples.column_text(0);
      auto& launch = by_key[key];
      if (launch.name.empty())
        launch.name = names.count(key) != 0 ? names[key] : key;
      launch.durations_ns.push_back(static_cast<double>(samples.column_int64(1)));
      ++side.summary.dispatches;
    }
    for (auto& [key, launch] : by_key)
      side.launches.push_back(std::move(launch));
  } catch (const stages::sqlite::sqlite_error& error) {
    throw compare_input_error(label + ": " + path.string() + ": cannot read the results store (" +
                              error.what() + "); fix: give a store that autotune --db wrote");
  }
  if (side.launches.empty())
    throw compare_input_error(label + ": " + path.string() + ": run " + side.summary.store_run +
                              " of the results store has no measured configuration; fix: give "
                              "the --db of an autotune run that measured something");
  side.summary.inputs = {path.string()};
  side.summary.databases = {path.string()};
  side.summary.runs = 1;
  return side;
}

/// Sorts each run's files into timeline and counter passes; adds the counters to `counters`.
/// A run whose every file is a counter pass (rocprofv3 --pmc on every dispatch) is its own
/// timeline, and its counters are read in the same pass as its dispatches.
std::vector<std::vector<fs::path>> timeline_runs(const std::vector<std::vector<fs::path>>& runs,
                                                 std::vector<fs::path>& counters) {
  std::vector<std::vector<fs::path>> out;
  for (const auto& run : runs) {
    auto roles = rocpd::split_counter_passes(run);
    out.push_back(roles.timeline);
    counters.insert(counters.end(), roles.counters.begin(), roles.counters.end());
  }
  return out;
}

} // namespace

compare_side read_compare_side(const std::string& label,
                               const std::vector<fs::path>& inputs,
                               const std::string& arch) {
  if (inputs.size() == 1 && fs::is_regular_file(inputs.front()) && is_results_store(inputs.front()))
    return read_store_side(label, inputs.front());
  compare_side side;
  try {
    std::vector<fs::path> counter_inputs;
    const auto given = resolve_runs(label, inputs, counter_inputs);
    std::vector<fs::path> counters;
    if (!counter_inputs.empty())
      counters = rocpd::split_counter_passes(counter_inputs).counters;
    const auto runs = timeline_runs(given, counters);
    std::vector<std::size_t> run_of_database;
    for (std::size_t r = 0; r < runs.size(); ++r)
      run_of_database.resize(run_of_database.size() + runs[r].size(), r);
    stages::compare::launch_collector collector(run_of_database);
    stages::report_context context;
    context.backend = "rocpd";
    context.arch = arch;
    // Counter passes among the runs' files are read in the same pass as the dispatches.
    context.counter_files = counters;
    auto built = stages::build_profile_report_and_timeline(
        runs, context, /*side_thread=*/true,
        [&collector](const rocpd::dispatch_row& row) { collector.add(row); });
    side.report = std::move(built.report);
    side.timeline = std::move(built.timeline);
    side.launches = collector.finish();
    side.path = stages::analysis::critical_path(side.timeline);
    if (built.counters)
      side.counters = std::move(*built.counters);
    else if (!counters.empty())
      side.counters = rocpd::read_kernel_counters(counters);
    for (const auto& i : inputs)
      side.summary.inputs.push_back(i.string());
    side.summary.databases = side.report.databases;
    for (const auto& c : counters)
      if (std::find(side.summary.databases.begin(), side.summary.databases.end(), c.string()) ==
          side.summary.databases.end())
        side.summary.databases.push_back(c.string());
    side.summary.runs = runs.size();
    side.summary.counters = !side.counters.empty();
  } catch (const rocpd::rocpd_error& error) {
    throw compare_input_error(label + ": " + error.what());
  } catch (const stages::report_error& error) {
    throw compare_input_error(label + ": " + error.what());
  }
  return side;
}

} // namespace rpl::engine::commands
