#include "engine/optimize/app_mode.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <utility>

#include <spdlog/spdlog.h>

#include "engine/commands/analysis_output.hpp"
#include "engine/optimize/app_sources.hpp"
#include "engine/optimize/run_optimize.hpp"
#include "stages/analysis/application_analysis.hpp"
#include "stages/analysis/fixed_text.hpp"
#include "stages/analysis/profile_report_builder.hpp"
#include "stages/optimize/compile_flags.hpp"
#include "stages/search/command_template.hpp"
#include "stages/trace/rocpd_reader.hpp"
#include "workers/capture/capture_run.hpp"
#include "workers/process/child_process.hpp"
#include "workers/source/clang_source.hpp"
#include "workers/tracers/cuda/cupti_recorder.hpp"

namespace rpl::engine {

namespace {

namespace analysis = stages::analysis;
namespace fs = std::filesystem;

/// The build command's output kept in app-build.log: enough for any compiler's errors.
constexpr std::size_t build_log_bytes = 16u << 20;

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) {
    throw app_run_error("cannot write " + path.string() + "; fix: check that " +
                        path.parent_path().string() + " is writable and the disk has room");
  }
}

std::string joined(const std::vector<std::string>& words, const char* separator = " ") {
  std::string out;
  for (const auto& w : words) {
    out += (out.empty() ? "" : separator) + w;
  }
  return out;
}

void check_app(const std::vector<std::string>& app) {
  if (app.empty() || app.front().empty()) {
    throw optimize_input_error("optimize --top: no application given; fix: rocm-perf optimize "
                               "--source FILE... --top K -- APP [ARGS...]");
  }
}

bool looks_mangled(const std::string& name) {
  return name.rfind("_Z", 0) == 0;
}

/// How far a kernel is from its roof, 0..1: 1 - the higher of its compute and memory % of peak;
/// 1 where no counters give either (unknown counts as far, so it is not ranked down).
double distance_to_roof(const analysis::kernel_analysis& k) {
  const auto& in = k.inputs;
  if (!in.compute_pct && !in.memory_pct) {
    return 1.0;
  }
  const double pct = std::max(in.compute_pct.value_or(0.0), in.memory_pct.value_or(0.0));
  return std::clamp(1.0 - pct / 100.0, 0.0, 1.0);
}

/// analyze's ranking (limiting_kernels: critical-path share, else GPU-time share), reordered by
/// share x distance to the roof; ties keep analyze's order.
std::vector<const analysis::kernel_analysis*>
ranked_kernels(const analysis::application_analysis& a) {
  auto ranked = analysis::limiting_kernels(a, a.kernels.size());
  const auto score = [](const analysis::kernel_analysis* k) {
    return k->critical_path_share.value_or(k->share) * distance_to_roof(*k);
  };
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&](const auto* x, const auto* y) { return score(x) > score(y); });
  return ranked;
}

std::string percent(double fraction) {
  return stages::fixed_text(100.0 * fraction, 1) + " %";
}

std::string bottleneck_of(const analysis::kernel_analysis& k) {
  if (k.bottleneck.label) {
    std::string out(analysis::to_string(*k.bottleneck.label));
    if (!k.bottleneck.because.empty()) {
      out += ": " + k.bottleneck.because;
    }
    return out;
  }
  return "unclassified: " + k.bottleneck.missing;
}

/// The kernel's analysis in a few lines, for the proposers' prompt.
std::string analysis_text_of(const analysis::kernel_analysis& k) {
  std::string out = "bottleneck: " + bottleneck_of(k) + "\n";
  if (!k.bottleneck.next_step.empty()) {
    out += "next step: " + k.bottleneck.next_step + "\n";
  }
  const auto& in = k.inputs;
  std::string counters;
  if (in.compute_pct) {
    counters += "compute " + stages::fixed_text(*in.compute_pct, 1) + " % of peak";
  }
  if (in.memory_pct) {
    counters += (counters.empty() ? "" : ", ") + std::string("memory ") +
                stages::fixed_text(*in.memory_pct, 1) + " % of peak";
  }
  if (!in.top_stall.empty()) {
    counters += (counters.empty() ? "" : ", ") + std::string("top stall ") + in.top_stall +
                (in.top_stall_share ? " (" + percent(*in.top_stall_share) + ")" : "");
  }
  out += "counters: " + (counters.empty() ? std::string("none recorded") : counters) + "\n";
  if (in.occupancy) {
    out += "occupancy: " + percent(*in.occupancy) +
           (in.occupancy_limiter.empty() ? "" : ", limited by " + in.occupancy_limiter) + "\n";
  }
  out += "share: " +
         (k.critical_path_share ? percent(*k.critical_path_share) + " of the critical path, "
                                : std::string()) +
         percent(k.share) + " of GPU time, " + std::to_string(k.dispatches) + " dispatches, " +
         stages::fixed_text(k.total_ns / 1e6, 3) + " ms in all\n";
  return out;
}

/// A capture folder name from a symbol: mangled names are already safe; anything else becomes _.
std::string folder_name(const std::string& symbol) {
  std::string out = symbol;
  for (char& c : out) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '_' || c == '.' || c == '-';
    if (!safe) {
      c = '_';
    }
  }
  return out.empty() || out.front() == '.' ? "_" + out : out;
}

/// `text` as an ECMAScript regular expression that matches it exactly.
std::string exact_regex(const std::string& text) {
  std::string out = "^";
  for (const char c : text) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) {
      out += '\\';
    }
    out += c;
  }
  return out + "$";
}

/// A profile's outcome: its figures, and the analysis and trace it came from.
struct profiled {
  app_profile profile;
  analysis::application_analysis analysis;
  std::map<std::string, std::string> symbols; ///< trace name -> mangled symbol (first seen)
};

/// Records `argv` once into `root`/trace and analyzes it as `analyze` would.
profiled
profile_app(const std::vector<std::string>& argv, const fs::path& root, const app_tools& tools) {
  const fs::path folder = root / "trace";
  std::error_code ec;
  fs::remove_all(folder, ec);
  fs::create_directories(folder, ec);
  const auto recorded = tools.record(argv, folder);
  const std::string what = "profiling `" + joined(argv) + "`";
  if (recorded.status == workers::record_status::run_failed) {
    throw app_run_error(what + ": " + recorded.reason);
  }
  if (recorded.status == workers::record_status::no_trace) {
    throw app_run_error(what + ": " + recorded.reason +
                        "; fix: the application must launch kernels on the GPU");
  }
  profiled out;
  const stages::report_context context{.backend = tools.backend, .command = argv, .arch = {}};
  stages::profile_report report;
  commands::analysis_inputs inputs;
  inputs.timeline = {folder};
  inputs.want_dag = false; // only the analysis is used
  try {
    auto built =
        stages::build_profile_report_and_timeline({{folder}}, context, /*side_thread=*/true);
    report = std::move(built.report);
    inputs.timeline_read =
        std::make_shared<const stages::rocpd::timeline>(std::move(built.timeline));
    out.analysis = commands::analyze_application(report, inputs).analysis;
    for (const auto& s : stages::rocpd::reader::open({folder}).kernel_symbols()) {
      out.symbols.emplace(s.display_name, s.kernel_name);
    }
  } catch (const std::exception& error) { // report_error (no dispatch), rocpd_error
    throw app_run_error(what + ": its trace in " + folder.string() +
                        " cannot be analyzed: " + error.what());
  }
  const auto& totals = report.totals;
  const double gpu_ns = totals ? totals->gpu_time_ns + totals->helper_gpu_time_ns : 0.0;
  const std::size_t dispatches = totals ? totals->dispatches : 0;
  auto& p = out.profile;
  p.trace = folder;
  p.gpu_time_ns = gpu_ns;
  const auto& a = out.analysis;
  p.critical_path_ns = a.critical_path_ns.value_or(a.makespan_ns.value_or(0.0));
  if (a.critical_path_ns && *a.critical_path_ns > 0.0) {
    double on_path = 0.0;
    for (const auto& k : a.kernels) {
      on_path += k.critical_path_ns.value_or(0.0);
    }
    p.gpu_share = std::clamp(on_path / *a.critical_path_ns, 0.0, 1.0);
  }
  p.summary = "GPU time " + stages::fixed_text(gpu_ns / 1e6, 3) + " ms in " +
              std::to_string(dispatches) + " dispatches of " +
              std::to_string(report.kernels.size() + report.helper_kernels.size()) +
              " kernels (one run)\n";
  if (a.critical_path_ns) {
    p.summary +=
        "critical path " + stages::fixed_text(*a.critical_path_ns / 1e6, 3) + " ms" +
        (a.makespan_ns ? " of " + stages::fixed_text(*a.makespan_ns / 1e6, 3) +
                             " ms from first to last GPU operation"
                       : std::string()) +
        (p.gpu_share ? ", " + percent(*p.gpu_share) + " of it in kernels" : std::string()) + "\n";
  } else {
    p.summary += "no critical path (the trace gave no DAG): the figure is the makespan\n";
  }
  return out;
}

} // namespace

app_tools default_app_tools() {
  app_tools tools;
  tools.record = [](const std::vector<std::string>& argv, const fs::path& folder) {
    const auto library = workers::find_cupti_tracer({});
    if (!library) {
      throw optimize_input_error(
          "optimize --top profiles the application with the CUPTI tracer, and "
          "librpl_cupti_tracer.so was not found beside rocm-perf; fix: build with the CUDA "
          "toolkit (RPL_BUILD_CUDA=ON) or set RPL_CUPTI_TRACER");
    }
    workers::cupti_recorder_options options;
    options.library = *library;
    options.timeout = app_run_timeout;
    workers::cupti_recorder recorder(options);
    spdlog::info("profiling the application under the CUPTI tracer (at most {} s)",
                 app_run_timeout.count() / 1000);
    return recorder.record(argv, folder, 1);
  };
  tools.capture = [](const std::vector<std::string>& argv, const std::string& symbol,
                     const fs::path& out, const capture_place& where) {
    const auto library = workers::capture::find_cuda_capture_library();
    if (!library) {
      throw optimize_input_error(
          "optimize --top captures each kernel's dispatch with librpl_cuda_capture.so, which is "
          "not in lib/ beside rocm-perf's bin/ and RPL_CUDA_CAPTURE is unset; fix: build with "
          "the CUDA backend (nvcc and CUPTI present, RPL_BUILD_CUDA=ON)");
    }
    workers::capture::capture_run_options options;
    options.command = argv;
    options.kernel_regex = exact_regex(symbol);
    options.dispatch = 0;
    options.out = out;
    options.library = *library;
    options.timeout = std::max(where.timeout, std::chrono::milliseconds(1));
    options.device = where.device;
    std::error_code ec;
    fs::create_directories(out, ec);
    spdlog::info("capturing the first dispatch of {}{} (at most {:.0f} s)", symbol,
                 where.device ? " on device " + std::to_string(*where.device) : std::string(),
                 std::chrono::duration<double>(options.timeout).count());
    const auto result = workers::capture::run_capture(options);
    if (result.status == "captured") {
      return std::string();
    }
    return result.status + ": " + result.reason + " (the program " + result.program_end + ")";
  };
  tools.sanitizer_missing = [] {
    return workers::find_compute_sanitizer()
               ? std::string()
               : std::string("no compute-sanitizer ($RPL_COMPUTE_SANITIZER, PATH, "
                             "/usr/local/cuda/bin)");
  };
  tools.sanitize = [](const app_sanitize_request& request) {
    workers::sanitizer_options options;
    options.sanitizer = workers::find_compute_sanitizer().value_or("compute-sanitizer");
    options.device = request.device;
    options.timeout = request.timeout;
    options.log_dir = request.log_dir;
    options.log_stem = request.log_stem;
    return workers::run_app_sanitizer(options, request.tool, request.argv, request.kernel);
  };
  return tools;
}

namespace {

/// A ranked kernel's definition, or why it has none (then `out` is set).
std::optional<source_definition> definition_of(kernel_source_index& index,
                                               const std::string& name,
                                               const std::string& trace_symbol,
                                               app_left_out& out) {
  const auto found = index.find(trace_symbol, name);
  out = {name, "skipped", {}, {}, 0.0};
  if (found.empty()) {
    out.reason = "not defined in " + index.searched() + " (looked for " +
                 (trace_symbol.empty() ? "a __global__ function named " + kernel_base_name(name)
                                       : "the symbol " + trace_symbol) +
                 "); fix: point --source-dir at the application's sources, or add the file that "
                 "defines it with --source";
    return std::nullopt;
  }
  if (found.size() > 1) {
    out.reason = "defined in both " + found[0].file.string() + " (line " +
                 std::to_string(found[0].line) + ") and " + found[1].file.string() + " (line " +
                 std::to_string(found[1].line) +
                 "); fix: pass the file the application is built from with --source";
    return std::nullopt;
  }
  return found.front();
}

} // namespace

std::string capture_app_kernel(const std::vector<std::string>& app,
                               const app_tools& tools,
                               const capture_place& where,
                               app_kernel& kernel) {
  std::error_code ec;
  fs::remove_all(kernel.capture_dir, ec);
  fs::create_directories(kernel.capture_dir.parent_path(), ec);
  const auto started = std::chrono::steady_clock::now();
  const std::string failed = tools.capture(app, kernel.symbol, kernel.capture_dir, where);
  kernel.capture_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (failed.empty()) {
    return {};
  }
  return "defined in " + kernel.source.string() +
         ", but its first dispatch could not be captured (" + failed +
         "); fix: see rocm-perf isolate --kernel '" + exact_regex(kernel.symbol) + "' -- " +
         joined(app);
}

app_ranking rank_app_kernels(const std::vector<std::string>& app,
                             const app_source_search& search,
                             std::size_t k,
                             const fs::path& out_dir,
                             const app_tools& tools,
                             const app_walk_hooks& hooks) {
  check_app(app);
  if (k == 0) {
    throw optimize_input_error("--top 0: at least one kernel is needed; fix: --top 3");
  }
  kernel_source_index index(search); // --source files parsed before the application runs
  app_ranking ranking;
  const auto started = std::chrono::steady_clock::now();
  auto run = profile_app(app, out_dir / "app-profile", tools);
  if (hooks.profiled) {
    hooks.profiled(std::chrono::steady_clock::now() - started);
  }
  ranking.before = run.profile;
  std::size_t not_reached = 0; // ranked kernels of the top K whose turn never came
  // Deferred captures keep k spares after the first k (for captures that fail on a device).
  const std::size_t keep = hooks.defer_captures ? 2 * k : k;
  std::size_t rank = 0;
  for (const auto* k_analysis : ranked_kernels(run.analysis)) {
    if (ranking.chosen.size() + not_reached == keep) {
      break;
    }
    const std::size_t place = rank++;
    const std::string& name = k_analysis->name;
    const auto recorded = run.symbols.find(name);
    const std::string trace_symbol =
        recorded != run.symbols.end() && looks_mangled(recorded->second) ? recorded->second
                                                                         : std::string();
    app_left_out out;
    const auto found = definition_of(index, name, trace_symbol, out);
    out.rank = place;
    if (!found) {
      ranking.left_out.push_back(std::move(out));
      continue;
    }
    app_kernel kernel;
    kernel.name = name;
    kernel.symbol = !trace_symbol.empty() ? trace_symbol : found->symbol;
    kernel.function = found->function;
    kernel.source = found->file;
    kernel.critical_path_share = k_analysis->critical_path_share.value_or(k_analysis->share);
    kernel.bottleneck = bottleneck_of(*k_analysis);
    kernel.analysis_text = analysis_text_of(*k_analysis);
    kernel.capture_dir = out_dir / "captures" / folder_name(kernel.symbol);
    kernel.rank = place;
    if (hooks.defer_captures) {
      spdlog::info("{}: defined in {} (line {}); captured by the device that takes it", name,
                   kernel.source.string(), found->line);
      ranking.chosen.push_back(std::move(kernel));
      continue;
    }
    out.source = kernel.source;
    out.name = kernel.function; // as the report names the kernels it tried
    if (const std::string refused = hooks.may_capture ? hooks.may_capture() : std::string();
        !refused.empty()) {
      out.status = "not_reached";
      out.reason = refused;
      ++not_reached;
      ranking.left_out.push_back(std::move(out));
      continue;
    }
    const std::string failed = capture_app_kernel(app, tools, {}, kernel);
    if (hooks.captured) {
      hooks.captured(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(kernel.capture_seconds)));
    }
    if (!failed.empty()) {
      out.reason = failed;
      out.seconds = kernel.capture_seconds;
      ranking.left_out.push_back(std::move(out));
      continue;
    }
    spdlog::info("{}: defined in {} (line {}); captured in {:.1f} s", name, kernel.source.string(),
                 found->line, kernel.capture_seconds);
    ranking.chosen.push_back(std::move(kernel));
  }
  ranking.notes = index.notes();
  return ranking;
}

namespace {

/// --app-build's argv with {SRC_DIR} = `scratch`.
std::vector<std::string> app_build_argv(const std::string& build_command, const fs::path& scratch) {
  std::vector<std::string> argv;
  try {
    const auto command = stages::command_template::parse(build_command, "--app-build");
    command.check({"SRC_DIR"});
    argv = command.expand({{"SRC_DIR", scratch.string()}});
  } catch (const stages::template_error& error) {
    throw optimize_input_error(std::string(error.what()) +
                               " ({SRC_DIR} is the only placeholder: the scratch copy)");
  }
  if (argv.empty() || argv.front().empty()) {
    throw optimize_input_error("--app-build is empty; fix: the command that builds the "
                               "application in {SRC_DIR}, e.g. --app-build 'make -C {SRC_DIR}'");
  }
  return argv;
}

/// What goes into the scratch copy: source files by their place there, and the patched texts.
struct scratch_plan {
  std::map<fs::path, fs::path> flat;     ///< file name -> the --source (flat copy)
  std::map<fs::path, std::string> texts; ///< place in the copy -> patched text
};

/// Where a patched source goes in the copy: under the root at its relative path, or flat by name.
scratch_plan plan_scratch(const app_build_sources& sources,
                          const std::map<std::string, std::string>& patched) {
  scratch_plan plan;
  std::string names;
  for (const auto& s : sources.files) {
    names += (names.empty() ? "" : ", ") + s.string();
    if (!sources.root.empty()) {
      continue;
    }
    // The flat copy is one folder, by file name: two sources of one name would collide.
    const auto [it, added] = plan.flat.emplace(s.filename(), s);
    if (!added) {
      throw optimize_input_error("--source " + it->second.string() + " and " + s.string() +
                                 " have the same file name, and the --app-build copy is one "
                                 "folder; fix: rename one of them, or pass --source-dir");
    }
  }
  for (const auto& [name, text] : patched) {
    if (!sources.root.empty()) {
      std::error_code ec;
      const fs::path relative = fs::relative(fs::path(name), sources.root, ec);
      if (ec || relative.empty() || *relative.begin() == "..") {
        throw optimize_input_error(
            "a patched file '" + name + "' is outside --source-dir " + sources.root.string() +
            "; fix: pass the folder that holds every source as --source-dir");
      }
      plan.texts[relative] = text;
      continue;
    }
    fs::path target;
    for (const auto& s : sources.files) {
      if (name == s.filename().string() || name == s.string()) {
        target = s.filename();
      }
    }
    if (target.empty()) {
      throw optimize_input_error("a patched file '" + name + "' is none of the --source files (" +
                                 names + "); fix: key patched sources by a --source's file name");
    }
    plan.texts[target] = text;
  }
  return plan;
}

/// Fills `scratch` (emptied first) as planned; returns the files copied, with their times then.
std::map<fs::path, fs::file_time_type>
fill_scratch(const app_build_sources& sources, const scratch_plan& plan, const fs::path& scratch) {
  std::error_code ec;
  fs::remove_all(scratch, ec);
  fs::create_directories(scratch, ec);
  if (ec) {
    throw app_run_error("cannot create " + scratch.string() + " (" + ec.message() +
                        "); fix: check that --out is writable");
  }
  std::vector<fs::path> copied;
  if (!sources.root.empty()) {
    auto exclude = sources.exclude;
    exclude.push_back(scratch.parent_path());
    copied = copy_source_tree(sources.root, scratch, exclude);
  }
  for (const auto& [name, path] : plan.flat) {
    fs::copy_file(path, scratch / name, fs::copy_options::overwrite_existing, ec);
    if (ec) {
      throw app_run_error("cannot copy " + path.string() + " to " + scratch.string() + " (" +
                          ec.message() + ")");
    }
    copied.push_back(scratch / name);
  }
  for (const auto& [place, text] : plan.texts) {
    fs::create_directories((scratch / place).parent_path(), ec);
    write_file(scratch / place, text);
  }
  std::map<fs::path, fs::file_time_type> times;
  for (const auto& c : copied) {
    times[c.lexically_normal()] = fs::last_write_time(c, ec);
  }
  return times;
}

/// APP's argv with argv[0] from the scratch folder when the build made (or rewrote) a file of
/// that name there; a source copied and left as it was is not the program.
std::vector<std::string> built_app(const std::vector<std::string>& app,
                                   const fs::path& scratch,
                                   const std::map<fs::path, fs::file_time_type>& copied) {
  std::vector<std::string> run_argv = app;
  const fs::path program(app.front());
  std::error_code ec;
  for (const fs::path& candidate :
       {program.is_relative() ? (scratch / program).lexically_normal() : fs::path(),
        scratch / program.filename()}) {
    if (candidate.empty() || !fs::is_regular_file(candidate, ec)) {
      continue;
    }
    const auto was = copied.find(candidate.lexically_normal());
    if (was == copied.end() || fs::last_write_time(candidate, ec) != was->second) {
      run_argv.front() = candidate.string();
      break;
    }
  }
  return run_argv;
}

} // namespace

std::vector<std::string> build_app(const std::string& build_command,
                                   const app_build_sources& sources,
                                   const std::map<std::string, std::string>& patched,
                                   const std::vector<std::string>& app,
                                   const fs::path& out_dir,
                                   const app_tools& tools,
                                   std::chrono::milliseconds build_timeout) {
  check_app(app);
  if (sources.root.empty() && sources.files.empty()) {
    throw optimize_input_error("--app-build copies the sources, and none were given; fix: "
                               "--source-dir DIR or --source FILE");
  }
  for (const auto& s : sources.files) {
    std::error_code ec;
    if (!fs::is_regular_file(s, ec)) {
      throw optimize_input_error("--source " + s.string() +
                                 ": no such file; fix: name a CUDA/HIP source file that exists");
    }
  }
  const fs::path scratch = fs::absolute(out_dir / "app-build");
  const auto argv = app_build_argv(build_command, scratch);
  const auto copied = fill_scratch(sources, plan_scratch(sources, patched), scratch);

  workers::child_options child;
  child.argv = argv;
  child.cwd = scratch;
  child.max_output_bytes = build_log_bytes;
  const auto timeout = build_timeout.count() > 0 ? std::min(build_timeout, tools.build_timeout)
                                                 : tools.build_timeout;
  const auto built = workers::run_child(child, timeout);
  const fs::path log = out_dir / "app-build.log";
  write_file(log, "$ " + joined(argv) + "\n(in " + scratch.string() + ")\n" + built.output +
                      (built.output_truncated ? "\n[output truncated]\n" : ""));
  if (!built.succeeded()) {
    const std::string how =
        !built.launched        ? "could not start (" + built.launch_error + ")"
        : built.timed_out      ? "timed out after " + std::to_string(timeout.count() / 1000) + " s"
        : built.exit_code >= 0 ? "exited with status " + std::to_string(built.exit_code)
                               : "was killed by signal " + std::to_string(built.term_signal);
    throw app_run_error("--app-build: `" + joined(argv) + "` " + how + " in " + scratch.string() +
                        "; its output is in " + log.string() +
                        "; fix: make the command build the application from the sources in "
                        "{SRC_DIR}");
  }
  return built_app(app, scratch, copied);
}

app_profile profile_built_app(const std::vector<std::string>& argv,
                              const fs::path& out_dir,
                              const app_tools& tools) {
  return profile_app(argv, out_dir / "app-reprofile", tools).profile;
}

app_profile reprofile_app(const std::string& build_command,
                          const app_build_sources& sources,
                          const std::map<std::string, std::string>& patched,
                          const std::vector<std::string>& app,
                          const fs::path& out_dir,
                          const app_tools& tools,
                          std::chrono::milliseconds build_timeout) {
  return profile_built_app(
      build_app(build_command, sources, patched, app, out_dir, tools, build_timeout), out_dir,
      tools);
}

} // namespace rpl::engine
