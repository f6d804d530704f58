#include "engine/commands/profile_command.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "stages/hardware/arch_model.hpp"
#include "stages/hardware/occupancy_model.hpp"
#include "stages/trace/rocpd_reader.hpp"
#include "stages/trace/runtime_accounting.hpp"
#include "stages/statistics/statistics.hpp"
#include "workers/process/child_process.hpp"

namespace rpl::engine {

namespace {

namespace rocpd = stages::rocpd;

/// Bad input or a missing tool, found before or while reading: exit 2.
class report_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The application or the tracer failed: exit 1.
class run_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

double ms(double ns) { return ns / 1e6; }

std::optional<std::filesystem::path> find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) {
    return std::nullopt;
  }
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) {
      continue;
    }
    const auto candidate = std::filesystem::path(dir) / name;
    if (::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return std::nullopt;
}

/// What the dispatches say about one kernel beyond its timings.
struct kernel_shape {
  std::map<std::array<std::uint32_t, 3>, std::size_t> blocks;
  std::map<std::array<std::uint32_t, 3>, std::size_t> grids;
  std::map<std::int64_t, std::size_t> lds_bytes;  // the dispatch's, dynamic included
  std::pair<std::size_t, std::int64_t> agent{0, 0};  // database, agent id of the first dispatch
  std::pair<std::size_t, std::int64_t> symbol{0, 0};  // database, kernel id
};

template <class Map>
typename Map::key_type most_common(const Map& counts) {
  return std::max_element(counts.begin(), counts.end(), [](const auto& a, const auto& b) {
           return a.second < b.second;
         })->first;
}

nlohmann::json dims(const std::array<std::uint32_t, 3>& d) { return {d[0], d[1], d[2]}; }

nlohmann::json kernel_json(const rocpd::kernel_stats& k, double total_gpu_ns) {
  return {{"name", k.name},
          {"dispatches", k.count},
          {"total_ms", ms(k.total_ns)},
          {"mean_ms", ms(k.mean_ns)},
          {"median_ms", ms(k.median_ns)},
          {"p95_ms", ms(k.p95_ns)},
          {"min_ms", ms(k.min_ns)},
          {"max_ms", ms(k.max_ns)},
          {"cv", k.cv},
          {"share", total_gpu_ns > 0 ? k.total_ns / total_gpu_ns : 0.0}};
}

nlohmann::json occupancy_json(const stages::occupancy_result& o, const std::string& target,
                              std::uint32_t block) {
  nlohmann::json limits = nlohmann::json::object();
  for (const auto& [name, value] : o.limit_by_resource) {
    limits[name] = value;
  }
  return {{"target", target},
          {"threads_per_block", block},
          {"wave_size", o.wave_size},
          {"unit", o.unit},
          {"active", o.active_waves_per_simd},
          {"max", o.max_waves_per_simd},
          {"workgroups_per_cu", o.active_workgroups_per_cu},
          {"theoretical", o.occupancy},
          {"limiter", stages::to_string(o.limiter)},
          {"limits", limits},
          {"suggestions", o.suggestions}};
}

nlohmann::json groups_json(const std::vector<rocpd::group_total>& groups) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& g : groups) {
    out.push_back({{"name", g.name}, {"dispatches", g.count}, {"total_ms", ms(g.total_ns)}});
  }
  return out;
}

/// Reads the runs' databases and builds the report (docs/schema/profile.schema.json).
nlohmann::json build_report(const std::vector<std::vector<std::filesystem::path>>& runs,
                            const std::string& backend, const nlohmann::json& command,
                            const report_options& options) {
  // Per run: the total GPU time, for stability across runs.
  std::vector<rocpd::runtime_summary> per_run;
  std::vector<std::filesystem::path> all_paths;
  for (const auto& paths : runs) {
    auto reader = rocpd::reader::open(paths);
    per_run.push_back(rocpd::summarize(reader));
    all_paths.insert(all_paths.end(), reader.paths().begin(), reader.paths().end());
  }
  // All runs together: the per-kernel table, with the dispatch shapes seen on the way.
  auto reader = rocpd::reader::open(all_paths);
  rocpd::runtime_accumulator accumulator(reader);
  std::map<std::string, kernel_shape, std::less<>> shapes;
  reader.for_each_dispatch([&](const rocpd::dispatch_row& row) {
    accumulator.add(row);
    auto it = shapes.find(row.kernel_name);
    if (it == shapes.end()) {
      it = shapes.emplace(std::string(row.kernel_name), kernel_shape{}).first;
      it->second.agent = {row.database, row.agent_id};
      it->second.symbol = {row.database, row.kernel_id};
    }
    ++it->second.blocks[{row.workgroup[0], row.workgroup[1], row.workgroup[2]}];
    ++it->second.grids[{row.grid[0], row.grid[1], row.grid[2]}];
    ++it->second.lds_bytes[row.group_segment_size];
  });
  const auto summary = accumulator.finish();
  if (summary.dispatch_count == 0) {
    std::string files;
    for (const auto& p : all_paths) {
      files += (files.empty() ? "" : ", ") + p.string();
    }
    throw report_error(files + ": no kernel dispatches in the trace; fix: check that the "
                               "application launches GPU kernels and was recorded with "
                               "rocprofv3 --kernel-trace");
  }

  std::map<std::pair<std::size_t, std::int64_t>, rocpd::agent_row> agents;
  nlohmann::json agents_json = nlohmann::json::array();
  std::set<std::string> seen_agents;
  for (auto& a : reader.agents()) {
    if (a.type == "GPU" && seen_agents.insert(a.name + "/" + std::to_string(a.logical_index)).second) {
      agents_json.push_back({{"name", a.name},
                             {"product_name", a.product_name},
                             {"logical_index", a.logical_index}});
    }
    agents[{a.database, a.id}] = std::move(a);
  }
  std::map<std::pair<std::size_t, std::int64_t>, rocpd::kernel_symbol_row> symbols;
  for (auto& s : reader.kernel_symbols()) {
    symbols[{s.database, s.id}] = std::move(s);
  }

  auto describe_kernel = [&](const rocpd::kernel_stats& k, bool with_occupancy) {
    auto j = kernel_json(k, summary.total_gpu_ns);
    const auto& shape = shapes.at(k.name);
    const auto block = most_common(shape.blocks);
    j["block"] = dims(block);
    j["grid"] = dims(most_common(shape.grids));
    j["resources"] = nullptr;
    j["occupancy"] = nullptr;
    const auto symbol = symbols.find(shape.symbol);
    if (symbol == symbols.end()) {
      return j;
    }
    const auto& s = symbol->second;
    j["resources"] = {{"vgpr", s.arch_vgpr_count},
                      {"agpr", s.accum_vgpr_count},
                      {"sgpr", s.sgpr_count},
                      {"lds_bytes", s.group_segment_size},
                      {"scratch_bytes", s.private_segment_size},
                      {"kernarg_bytes", s.kernarg_segment_size}};
    if (!with_occupancy) {
      return j;
    }
    std::string target = options.arch;
    if (target.empty()) {
      if (auto agent = agents.find(shape.agent); agent != agents.end()) {
        target = agent->second.name;
      }
    }
    try {
      const auto arch = stages::load_arch(target);
      stages::kernel_resources resources;
      resources.block_size = block[0] * std::max(1u, block[1]) * std::max(1u, block[2]);
      resources.vgprs = static_cast<std::uint32_t>(s.arch_vgpr_count);
      // rocpd's arch_vgpr_count is taken as the architectural VGPRs alone, as its name says; the
      // accumulation registers come on top (unified file on gfx90a and later).
      resources.agprs = static_cast<std::uint32_t>(s.accum_vgpr_count);
      resources.sgprs = static_cast<std::uint32_t>(s.sgpr_count);
      // The dispatch's group segment includes dynamic LDS (shared memory); the symbol's is only
      // the static part, so the dispatch's wins where the trace has it.
      const auto dispatch_lds = most_common(shape.lds_bytes);
      resources.lds_bytes = static_cast<std::uint64_t>(
          std::max<std::int64_t>(dispatch_lds, s.group_segment_size));
      resources.scratch_bytes = static_cast<std::uint64_t>(s.private_segment_size);
      j["occupancy"] = occupancy_json(stages::compute_occupancy(arch, resources), arch.target,
                                      resources.block_size);
    } catch (const stages::arch_error& error) {
      j["occupancy_note"] = error.what();
    }
    return j;
  };

  nlohmann::json report;
  report["schema_version"] = "1.0";
  report["backend"] = backend;
  report["command"] = command;
  nlohmann::json files = nlohmann::json::array();
  for (const auto& p : all_paths) {
    files.push_back(p.string());
  }
  report["databases"] = files;
  report["gpu"] = {{"agents", agents_json}};

  const auto stability = rocpd::across_runs(per_run);
  nlohmann::json per_run_ms = nlohmann::json::array();
  for (double ns : stability.per_run_total_ns) {
    per_run_ms.push_back(ms(ns));
  }
  report["runtime_ms"] = ms(stability.median);
  report["stability"] = {{"runs", per_run.size()},
                         {"per_run_ms", per_run_ms},
                         {"mean_ms", ms(stability.mean)},
                         {"median_ms", ms(stability.median)},
                         {"stddev_ms", ms(stability.stddev)},
                         {"cv", stability.cv},
                         {"classification", stages::to_string(stability.stability)}};
  report["totals"] = {{"gpu_time_ms", ms(summary.total_gpu_ns)},
                      {"helper_gpu_time_ms", ms(summary.helper_gpu_ns)},
                      {"wall_span_ms", ms(summary.wall_span_ns)},
                      {"dispatches", summary.dispatch_count}};
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& k : summary.kernels) {
    kernels.push_back(describe_kernel(k, true));
  }
  nlohmann::json helpers = nlohmann::json::array();
  for (const auto& k : summary.helper_kernels) {
    helpers.push_back(describe_kernel(k, false));
  }
  report["kernels"] = kernels;
  report["helper_kernels"] = helpers;
  report["per_agent"] = groups_json(summary.per_agent);
  report["per_queue"] = groups_json(summary.per_queue);
  report["per_stream"] = groups_json(summary.per_stream);
  report["per_process"] = groups_json(summary.per_process);
  // The specification's single-kernel fields describe the dominant kernel.
  report["kernel"] = nullptr;
  report["resources"] = nullptr;
  report["occupancy"] = nullptr;
  for (const auto& k : kernels) {
    if (k["name"] == summary.dominant_kernel) {
      report["kernel"] = {{"name", k["name"]}, {"grid", k["grid"]}, {"block", k["block"]}};
      report["resources"] = k["resources"];
      report["occupancy"] = k["occupancy"];
    }
  }
  report["dominant_kernel"] =
      summary.dominant_kernel.empty() ? nlohmann::json(nullptr) : nlohmann::json(summary.dominant_kernel);
  report["roofline"] = nullptr;
  report["note"] = nullptr;
  return report;
}

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

std::string shorten(const std::string& name, std::size_t width) {
  return name.size() <= width ? name : name.substr(0, width - 3) + "...";
}

void print_text(const nlohmann::json& r) {
  const auto& st = r["stability"];
  const bool timing = r["backend"] == "timing";
  std::printf("backend %s, %d run(s): %s per run median %s ms (mean %s, cv %s, %s)\n",
              r["backend"].get<std::string>().c_str(), st["runs"].get<int>(),
              timing ? "process wall time" : "GPU time",
              fixed(st["median_ms"], 3).c_str(), fixed(st["mean_ms"], 3).c_str(),
              fixed(st["cv"], 4).c_str(), st["classification"].get<std::string>().c_str());
  if (r.contains("note") && r["note"].is_string()) {
    std::printf("note: %s\n", r["note"].get<std::string>().c_str());
  }
  if (timing) {
    return;
  }
  for (const auto& a : r["gpu"]["agents"]) {
    std::printf("agent %s (%s)\n", a["name"].get<std::string>().c_str(),
                a["product_name"].get<std::string>().c_str());
  }
  const auto& t = r["totals"];
  std::printf("all runs: %d dispatches, GPU time %s ms, runtime helpers %s ms, wall span %s ms\n\n",
              t["dispatches"].get<int>(), fixed(t["gpu_time_ms"], 3).c_str(),
              fixed(t["helper_gpu_time_ms"], 3).c_str(), fixed(t["wall_span_ms"], 3).c_str());
  // NVIDIA agents (sm_XY) store registers per thread where AMD stores VGPRs, and shared memory as LDS.
  bool nvidia = false;
  for (const auto& a : r["gpu"]["agents"]) {
    nvidia = nvidia || a["name"].get<std::string>().rfind("sm_", 0) == 0;
  }
  std::printf("%-40s %7s %11s %10s %10s %10s %7s %6s %5s %5s %5s %7s  %s\n", "kernel", "calls",
              "total ms", "mean us", "median us", "p95 us", "cv", "share", nvidia ? "REGS" : "VGPR",
              "AGPR", "SGPR", nvidia ? "SMEM" : "LDS", "occupancy");
  for (const auto& k : r["kernels"]) {
    std::string res = "    -     -     -       -";
    if (k["resources"].is_object()) {
      char text[64];
      std::snprintf(text, sizeof text, "%5lld %5lld %5lld %7lld", k["resources"]["vgpr"].get<long long>(),
                    k["resources"]["agpr"].get<long long>(), k["resources"]["sgpr"].get<long long>(),
                    k["resources"]["lds_bytes"].get<long long>());
      res = text;
    }
    std::string occ = "-";
    if (k["occupancy"].is_object()) {
      const auto& o = k["occupancy"];
      occ = std::to_string(o["active"].get<int>()) + "/" + std::to_string(o["max"].get<int>()) + " " +
            o["unit"].get<std::string>() + " (" + fixed(o["theoretical"].get<double>() * 100, 0) +
            "%, " + o["limiter"].get<std::string>() + ")";
    }
    std::printf("%-40s %7d %11s %10s %10s %10s %7s %5s%% %s  %s\n",
                shorten(k["name"], 40).c_str(), k["dispatches"].get<int>(),
                fixed(k["total_ms"], 3).c_str(), fixed(k["mean_ms"].get<double>() * 1e3, 2).c_str(),
                fixed(k["median_ms"].get<double>() * 1e3, 2).c_str(),
                fixed(k["p95_ms"].get<double>() * 1e3, 2).c_str(), fixed(k["cv"], 3).c_str(),
                fixed(k["share"].get<double>() * 100, 1).c_str(), res.c_str(), occ.c_str());
  }
  for (const auto& k : r["helper_kernels"]) {
    std::printf("runtime helper: %s, %d dispatches, %s ms\n", k["name"].get<std::string>().c_str(),
                k["dispatches"].get<int>(), fixed(k["total_ms"], 3).c_str());
  }
  if (r["dominant_kernel"].is_string()) {
    std::printf("\ndominant kernel: %s\n", r["dominant_kernel"].get<std::string>().c_str());
    if (r["occupancy"].is_object()) {
      for (const auto& s : r["occupancy"]["suggestions"]) {
        std::printf("  to raise occupancy: %s\n", s.get<std::string>().c_str());
      }
    }
  }
  auto print_groups = [](const char* title, const nlohmann::json& groups) {
    if (groups.size() < 2) {
      return;
    }
    std::printf("%s:", title);
    for (const auto& g : groups) {
      std::printf("  %s %s ms (%d)", g["name"].get<std::string>().c_str(),
                  fixed(g["total_ms"], 3).c_str(), g["dispatches"].get<int>());
    }
    std::printf("\n");
  };
  print_groups("per agent", r["per_agent"]);
  print_groups("per queue", r["per_queue"]);
  print_groups("per stream", r["per_stream"]);
  print_groups("per process", r["per_process"]);
}

int emit(const nlohmann::json& report, const report_options& options) {
  if (!options.out.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options.out, ec);
    std::ofstream out(options.out / "profile.json");
    out << report.dump(2) << '\n';
    if (!out) {
      std::fprintf(stderr, "rocm-perf: error: --out %s: cannot write profile.json; fix: choose a "
                           "writable folder\n",
                   options.out.c_str());
      return 2;
    }
  }
  if (options.json) {
    std::cout << report.dump(2) << std::endl;
  } else if (options.quiet) {
    std::printf("%.6f\n", report["runtime_ms"].get<double>());
  } else {
    print_text(report);
    if (!options.out.empty()) {
      std::printf("\nwrote %s\n", (options.out / "profile.json").c_str());
    }
  }
  return 0;
}

std::string join(const std::vector<std::string>& words) {
  std::string text;
  for (const auto& w : words) {
    text += (text.empty() ? "" : " ") + w;
  }
  return text;
}

/// One run of a command for profile, with its timeout; --debug echoes its output under `title`.
workers::child_outcome run_once(const profile_options& options, std::vector<std::string> argv,
                                const std::string& title) {
  workers::child_options child;
  child.argv = std::move(argv);
  child.max_output_bytes = 1 << 20;
  const auto limit = options.timeout_s > 0 ? static_cast<long>(options.timeout_s * 1000)
                                           : 24L * 3600 * 1000;
  auto outcome = workers::run_child(child, std::chrono::milliseconds(limit));
  if (options.debug) {
    std::fprintf(stderr, "--- %s ---\n%s", title.c_str(), outcome.output.c_str());
  }
  return outcome;
}

/// "exited with status 3", "was killed by SIGSEGV (...)", "timed out", or why it did not start.
std::string describe_failure(const workers::child_outcome& outcome) {
  if (!outcome.launched) {
    return outcome.launch_error;
  }
  if (outcome.timed_out) {
    return "timed out";
  }
  if (outcome.term_signal != 0) {
    return "was killed by " + workers::describe_signal(outcome.term_signal);
  }
  return "exited with status " + std::to_string(outcome.exit_code);
}

std::string output_tail(const workers::child_outcome& outcome) {
  return outcome.output.size() > 2000 ? outcome.output.substr(outcome.output.size() - 2000)
                                      : outcome.output;
}

/// The timing backend: whole-process wall time, no per-kernel data.
nlohmann::json timing_report(const profile_options& options) {
  std::vector<std::int64_t> samples;
  for (unsigned run = 0; run < options.runs; ++run) {
    const auto outcome = run_once(options, options.app, "application, run " + std::to_string(run + 1));
    if (!outcome.succeeded()) {
      throw run_error("run " + std::to_string(run + 1) + ": " + join(options.app) + " " +
                      describe_failure(outcome) +
                      "; fix: check that the application runs on its own (--debug shows its output)");
    }
    samples.push_back(outcome.wall.count());
  }
  const auto stats = stages::summarize(samples);
  nlohmann::json per_run = nlohmann::json::array();
  for (auto ns : samples) {
    per_run.push_back(ms(static_cast<double>(ns)));
  }
  nlohmann::json report;
  report["schema_version"] = "1.0";
  report["backend"] = "timing";
  report["command"] = options.app;
  report["databases"] = nlohmann::json::array();
  report["gpu"] = {{"agents", nlohmann::json::array()}};
  report["runtime_ms"] = ms(stats.median);
  report["stability"] = {{"runs", samples.size()},          {"per_run_ms", per_run},
                         {"mean_ms", ms(stats.mean)},        {"median_ms", ms(stats.median)},
                         {"stddev_ms", ms(stats.stddev)},    {"cv", stats.cv},
                         {"classification", stages::to_string(stats.stability)}};
  report["kernels"] = nlohmann::json::array();
  report["helper_kernels"] = nlohmann::json::array();
  report["kernel"] = nullptr;
  report["resources"] = nullptr;
  report["occupancy"] = nullptr;
  report["dominant_kernel"] = nullptr;
  report["roofline"] = nullptr;
  report["note"] = "timing backend: these are whole-process wall times (start-up included), not "
                   "kernel times; use the rocm backend for per-kernel figures";
  return report;
}

/// Runs the application under rocprofv3 `runs` times; returns each run's output folder.
std::vector<std::vector<std::filesystem::path>> trace_runs(const profile_options& options,
                                                           const std::filesystem::path& rocprofv3,
                                                           const std::filesystem::path& root) {
  std::vector<std::vector<std::filesystem::path>> runs;
  for (unsigned run = 0; run < options.runs; ++run) {
    const auto dir = root / ("run-" + std::to_string(run + 1));
    std::filesystem::create_directories(dir);
    std::vector<std::string> argv = {rocprofv3.string(), "--kernel-trace", "--output-format",
                                     "rocpd", "-d", dir.string(), "--"};
    argv.insert(argv.end(), options.app.begin(), options.app.end());
    const auto outcome = run_once(options, argv, "rocprofv3, run " + std::to_string(run + 1));
    if (!outcome.succeeded()) {
      throw run_error("run " + std::to_string(run + 1) + ": rocprofv3 " + describe_failure(outcome) +
                      "; fix: run with --debug to see rocprofv3's output\n" + output_tail(outcome));
    }
    runs.push_back({dir});
  }
  return runs;
}

/// The CUPTI tracer: --tracer, $RPL_CUPTI_TRACER, or lib/ beside this executable's bin/.
std::optional<std::filesystem::path> find_tracer(const profile_options& options) {
  if (!options.tracer.empty()) {
    return options.tracer;
  }
  if (const char* env = std::getenv("RPL_CUPTI_TRACER"); env != nullptr && *env != '\0') {
    return std::filesystem::path(env);
  }
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  for (const auto& candidate : {exe.parent_path().parent_path() / "lib" / "librpl_cupti_tracer.so",
                                exe.parent_path() / "librpl_cupti_tracer.so",
                                exe.parent_path() / "lib" / "librpl_cupti_tracer.so"}) {
    if (std::filesystem::exists(candidate, ec)) {
      return candidate;
    }
  }
  return std::nullopt;
}

bool nvidia_gpu_present() {
  std::error_code ec;
  return std::filesystem::exists("/dev/nvidia0", ec) || std::filesystem::exists("/proc/driver/nvidia/gpus", ec);
}

/// Runs the application with the CUPTI tracer injected, `runs` times; each run writes its
/// databases (one per process) under its own folder.
std::vector<std::vector<std::filesystem::path>> cuda_runs(const profile_options& options,
                                                          const std::filesystem::path& tracer,
                                                          const std::filesystem::path& root) {
  std::vector<std::vector<std::filesystem::path>> runs;
  for (unsigned run = 0; run < options.runs; ++run) {
    const auto dir = root / ("run-" + std::to_string(run + 1));
    std::filesystem::create_directories(dir);
    // The child inherits these; nothing else runs in this process meanwhile.
    ::setenv("CUDA_INJECTION64_PATH", tracer.c_str(), 1);
    ::setenv("RPL_TRACE_DIR", dir.c_str(), 1);
    const auto outcome = run_once(options, options.app, "application, run " + std::to_string(run + 1));
    ::unsetenv("CUDA_INJECTION64_PATH");
    ::unsetenv("RPL_TRACE_DIR");
    if (!outcome.succeeded()) {
      throw run_error("run " + std::to_string(run + 1) + ": " + join(options.app) + " " +
                      describe_failure(outcome) +
                      " under the CUPTI tracer; fix: run it alone, or with --debug to see its output\n" +
                      output_tail(outcome));
    }
    bool traced = false;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
      traced = traced || entry.path().extension() == ".db";
    }
    if (!traced) {
      throw report_error("run " + std::to_string(run + 1) + ": " + join(options.app) +
                         " left no trace: the tracer writes a database only for processes that "
                         "use CUDA; fix: check that the application launches CUDA kernels, and "
                         "run with --debug to see the tracer's messages");
    }
    runs.push_back({dir});
  }
  return runs;
}

}  // namespace

int profile_main(const profile_options& options) {
  try {
    if (options.app.empty()) {
      throw report_error("profile: no application given; fix: rocm-perf profile [options] -- APP [ARGS...]");
    }
    if (options.runs == 0) {
      throw report_error("--runs 0: at least one run is needed; fix: --runs 5");
    }
    std::string backend = options.no_rocprof ? "timing" : options.backend;
    std::optional<std::filesystem::path> rocprofv3;
    if (!options.rocprofv3.empty()) {
      rocprofv3 = options.rocprofv3;
    } else if (const char* env = std::getenv("ROCPROFV3"); env != nullptr && *env != '\0') {
      rocprofv3 = std::filesystem::path(env);
    } else {
      rocprofv3 = find_on_path("rocprofv3");
    }
    const auto tracer = find_tracer(options);
    if (backend == "auto") {
      std::string why;
      if (rocprofv3) {
        backend = "rocm";
        why = "rocprofv3 found";
      } else if (tracer && nvidia_gpu_present()) {
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
    }
    if (backend == "timing") {
      return emit(timing_report(options), options.report);
    }
    if (backend == "cuda" && !tracer) {
      throw report_error("the CUPTI tracer librpl_cupti_tracer.so was not found beside rocm-perf; "
                         "fix: build with the CUDA toolkit (RPL_BUILD_CUDA=ON), pass --tracer PATH, "
                         "or set RPL_CUPTI_TRACER");
    }
    if (backend != "rocm" && backend != "cuda") {
      throw report_error("--backend " + backend + ": unknown backend; fix: rocm, cuda, timing or auto");
    }
    if (backend == "rocm" && !rocprofv3) {
      throw report_error("rocprofv3 not found on PATH (it comes with ROCm 7.x, in rocprofiler-sdk); "
                         "fix: install ROCm and put /opt/rocm/bin on PATH, pass --rocprofv3 PATH, or "
                         "use --no-rocprof to time whole processes instead");
    }
    std::filesystem::path root;
    bool temporary = false;
    if (!options.report.out.empty()) {
      root = options.report.out / "traces";
      std::filesystem::remove_all(root);
    } else {
      char pattern[] = "/tmp/rocm-perf-profile-XXXXXX";
      if (mkdtemp(pattern) == nullptr) {
        throw report_error("cannot create a temporary folder under /tmp");
      }
      root = pattern;
      temporary = true;
    }
    int code = 0;
    try {
      const auto runs = backend == "cuda" ? cuda_runs(options, *tracer, root)
                                          : trace_runs(options, *rocprofv3, root);
      code = emit(build_report(runs, backend, options.app, options.report), options.report);
    } catch (...) {
      if (temporary && !options.debug) {
        std::filesystem::remove_all(root);
      }
      throw;
    }
    if (temporary && !options.debug) {
      std::filesystem::remove_all(root);
    }
    return code;
  } catch (const report_error& error) {
    std::fprintf(stderr, "rocm-perf profile: error: %s\n", error.what());
    return 2;
  } catch (const rocpd::rocpd_error& error) {
    std::fprintf(stderr, "rocm-perf profile: error: %s\n", error.what());
    return 2;
  } catch (const run_error& error) {
    std::fprintf(stderr, "rocm-perf profile: error: %s\n", error.what());
    return 1;
  }
}

int analyze_main(const analyze_options& options) {
  try {
    if (options.inputs.empty()) {
      throw report_error("analyze: no database given; fix: rocm-perf analyze DB... (files or folders "
                         "that rocprofv3 wrote)");
    }
    std::vector<std::vector<std::filesystem::path>> runs;
    if (options.per_run) {
      for (const auto& input : options.inputs) {
        runs.push_back({input});
      }
    } else {
      runs.push_back(options.inputs);
    }
    return emit(build_report(runs, "rocpd", nullptr, options.report), options.report);
  } catch (const report_error& error) {
    std::fprintf(stderr, "rocm-perf analyze: error: %s\n", error.what());
    return 2;
  } catch (const rocpd::rocpd_error& error) {
    std::fprintf(stderr, "rocm-perf analyze: error: %s\n", error.what());
    return 2;
  }
}

}  // namespace rpl::engine
