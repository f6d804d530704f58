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
using stages::optimize::decl_kind;
using stages::optimize::declaration;
using stages::optimize::source_model;

/// The build command's output kept in app-build.log: enough for any compiler's errors.
constexpr std::size_t build_log_bytes = 16u << 20;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

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

std::string source_names(const std::vector<fs::path>& sources) {
  std::vector<std::string> names;
  for (const auto& s : sources) {
    names.push_back(s.string());
  }
  return joined(names, ", ");
}

void check_app(const std::vector<std::string>& app) {
  if (app.empty() || app.front().empty()) {
    throw optimize_input_error("optimize --top: no application given; fix: rocm-perf optimize "
                               "--source FILE... --top K -- APP [ARGS...]");
  }
}

void check_sources(const std::vector<fs::path>& sources) {
  if (sources.empty()) {
    throw optimize_input_error("optimize --top: no --source given; fix: pass the files that "
                               "define the application's kernels, --source FILE (repeatable)");
  }
  for (const auto& s : sources) {
    std::error_code ec;
    if (!fs::is_regular_file(s, ec)) {
      throw optimize_input_error("--source " + s.string() +
                                 ": no such file; fix: name a CUDA/HIP source file that exists");
    }
  }
}

/// The qualified function name of a demangled kernel name: "void ns::gemm<128>(float*, int)" ->
/// "ns::gemm"; a name without a parameter list is returned as it is.
std::string base_name(std::string name) {
  // The parameter list: the last balanced (...) at the end.
  if (!name.empty() && name.back() == ')') {
    int depth = 0;
    for (std::size_t i = name.size(); i-- > 0;) {
      if (name[i] == ')') {
        ++depth;
      } else if (name[i] == '(' && --depth == 0) {
        name.erase(i);
        break;
      }
    }
  }
  // Template arguments at the end: "gemm<128, float>".
  if (!name.empty() && name.back() == '>') {
    int depth = 0;
    for (std::size_t i = name.size(); i-- > 0;) {
      if (name[i] == '>') {
        ++depth;
      } else if (name[i] == '<' && --depth == 0) {
        name.erase(i);
        break;
      }
    }
  }
  // A return type before the name (function templates): the last word outside <...>.
  int depth = 0;
  for (std::size_t i = name.size(); i-- > 0;) {
    if (name[i] == '>') {
      ++depth;
    } else if (name[i] == '<') {
      --depth;
    } else if (name[i] == ' ' && depth == 0) {
      return name.substr(i + 1);
    }
  }
  return name;
}

bool looks_mangled(const std::string& name) {
  return name.rfind("_Z", 0) == 0;
}

/// The device symbol of a kernel declaration: libclang mangles a __global__ function as its host
/// stub ("_Z24__device_stub__gemm_tilePKfS0_Pfi"); the code object's symbol lacks the prefix
/// ("_Z9gemm_tilePKfS0_Pfi"), and its length in the source-name's <length><name> is 15 less.
std::string device_symbol(const declaration& d) {
  static constexpr std::string_view stub = "__device_stub__";
  std::string symbol = d.mangled_name.empty() ? d.name : d.mangled_name;
  const auto at = symbol.find(stub);
  if (at == std::string::npos) {
    return symbol;
  }
  std::size_t digits = at;
  while (digits > 0 && symbol[digits - 1] >= '0' && symbol[digits - 1] <= '9') {
    --digits;
  }
  if (digits == at) { // extern "C": the plain name with the prefix
    return symbol.erase(at, stub.size());
  }
  const std::size_t length = std::stoul(symbol.substr(digits, at - digits));
  if (length <= stub.size()) {
    return symbol;
  }
  return symbol.replace(digits, at - digits + stub.size(), std::to_string(length - stub.size()));
}

/// One parsed --source.
struct parsed_source {
  fs::path path;
  source_model model;
};

std::vector<parsed_source> parse_sources(const std::vector<fs::path>& sources) {
  std::string why;
  if (!workers::libclang_available(why)) {
    throw optimize_input_error("optimize --top finds kernels in the sources with libclang: " + why);
  }
  std::vector<parsed_source> out;
  for (const auto& path : sources) {
    std::string error;
    const std::vector<std::string> flags = {"-I" + fs::absolute(path).parent_path().string()};
    auto model =
        workers::parse_source(read_file(path), path.string(),
                              stages::optimize::source_language(path.string(), {}), flags, error);
    if (!error.empty()) {
      throw optimize_input_error("--source " + path.string() + ": " + error);
    }
    out.push_back({path, std::move(model)});
  }
  return out;
}

/// Where a kernel is defined: the source and its declaration.
struct definition {
  const parsed_source* source = nullptr;
  const declaration* decl = nullptr;
};

/// The kernel definitions matching the trace's `mangled` symbol (may be empty) or, failing that,
/// its demangled `name`.
std::vector<definition> find_definitions(const std::vector<parsed_source>& sources,
                                         const std::string& mangled,
                                         const std::string& name) {
  std::vector<definition> by_symbol;
  std::vector<definition> by_name;
  const std::string wanted = base_name(name);
  for (const auto& s : sources) {
    for (const auto& d : s.model.declarations) {
      if (d.kind != decl_kind::kernel || !d.is_definition) {
        continue;
      }
      if (!mangled.empty() && (device_symbol(d) == mangled || d.name == mangled)) {
        by_symbol.push_back({&s, &d});
      } else if (d.qualified_name == wanted || d.name == wanted || device_symbol(d) == name) {
        by_name.push_back({&s, &d});
      }
    }
  }
  return by_symbol.empty() ? by_name : by_symbol;
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
  p.summary = "GPU time " + stages::fixed_text(gpu_ns / 1e6, 3) + " ms in " +
              std::to_string(dispatches) + " dispatches of " +
              std::to_string(report.kernels.size() + report.helper_kernels.size()) +
              " kernels (one run)\n";
  if (a.critical_path_ns) {
    p.summary += "critical path " + stages::fixed_text(*a.critical_path_ns / 1e6, 3) + " ms" +
                 (a.makespan_ns ? " of " + stages::fixed_text(*a.makespan_ns / 1e6, 3) +
                                      " ms from first to last GPU operation"
                                : std::string()) +
                 "\n";
  } else {
    p.summary += "no critical path (the trace gave no DAG): the figure is the makespan\n";
  }
  return out;
}

} // namespace

/// One run of the application under the tracer or the capture library: an application that
/// waits on itself across streams (a host function holding a stream while another dispatch is
/// captured) never ends under capture; the kernel is then skipped with the reason.
constexpr std::chrono::milliseconds app_run_timeout{std::chrono::seconds(180)};

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
                     const fs::path& out) {
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
    options.timeout = app_run_timeout;
    std::error_code ec;
    fs::create_directories(out, ec);
    spdlog::info("capturing the first dispatch of {} (at most {} s)", symbol,
                 app_run_timeout.count() / 1000);
    const auto result = workers::capture::run_capture(options);
    if (result.status == "captured") {
      return std::string();
    }
    return result.status + ": " + result.reason + " (the program " + result.program_end + ")";
  };
  return tools;
}

std::vector<app_kernel> rank_app_kernels(const std::vector<std::string>& app,
                                         const std::vector<fs::path>& sources,
                                         std::size_t k,
                                         const fs::path& out_dir,
                                         std::vector<std::string>& skipped,
                                         app_profile& before) {
  return rank_app_kernels(app, sources, k, out_dir, skipped, before, default_app_tools());
}

std::vector<app_kernel> rank_app_kernels(const std::vector<std::string>& app,
                                         const std::vector<fs::path>& sources,
                                         std::size_t k,
                                         const fs::path& out_dir,
                                         std::vector<std::string>& skipped,
                                         app_profile& before,
                                         const app_tools& tools) {
  check_app(app);
  if (k == 0) {
    throw optimize_input_error("--top 0: at least one kernel is needed; fix: --top 3");
  }
  check_sources(sources);
  // Parsed before the application runs: a source that cannot be read fails in a second.
  const auto parsed = parse_sources(sources);
  auto run = profile_app(app, out_dir / "app-profile", tools);
  before = run.profile;

  std::vector<app_kernel> chosen;
  for (const auto* k_analysis : ranked_kernels(run.analysis)) {
    if (chosen.size() == k) {
      break;
    }
    const std::string& name = k_analysis->name;
    const auto recorded = run.symbols.find(name);
    const std::string trace_symbol =
        recorded != run.symbols.end() && looks_mangled(recorded->second) ? recorded->second
                                                                         : std::string();
    const auto found = find_definitions(parsed, trace_symbol, name);
    if (found.empty()) {
      skipped.push_back(name + ": not defined in " + source_names(sources) + " (looked for " +
                        (trace_symbol.empty() ? "a __global__ function named " + base_name(name)
                                              : "the symbol " + trace_symbol) +
                        "); fix: add the file that defines it with --source");
      continue;
    }
    if (found.size() > 1) {
      skipped.push_back(name + ": defined in both " + found[0].source->path.string() + " (line " +
                        std::to_string(found[0].decl->line) + ") and " +
                        found[1].source->path.string() + " (line " +
                        std::to_string(found[1].decl->line) +
                        "); fix: pass only the file the application is built from");
      continue;
    }
    app_kernel kernel;
    kernel.name = name;
    kernel.symbol = !trace_symbol.empty() ? trace_symbol : device_symbol(*found[0].decl);
    kernel.function = found[0].decl->name;
    kernel.source = found[0].source->path;
    kernel.critical_path_share = k_analysis->critical_path_share.value_or(k_analysis->share);
    kernel.bottleneck = bottleneck_of(*k_analysis);
    kernel.analysis_text = analysis_text_of(*k_analysis);
    kernel.capture_dir = out_dir / "captures" / folder_name(kernel.symbol);
    std::error_code ec;
    fs::remove_all(kernel.capture_dir, ec);
    fs::create_directories(kernel.capture_dir.parent_path(), ec);
    const std::string failed = tools.capture(app, kernel.symbol, kernel.capture_dir);
    if (!failed.empty()) {
      skipped.push_back(name + ": defined in " + kernel.source.string() +
                        ", but its first dispatch could not be captured (" + failed +
                        "); fix: see rocm-perf isolate --kernel '" + exact_regex(kernel.symbol) +
                        "' -- " + joined(app));
      continue;
    }
    chosen.push_back(std::move(kernel));
  }
  return chosen;
}

app_profile reprofile_app(const std::string& build_command,
                          const std::vector<fs::path>& sources,
                          const std::map<std::string, std::string>& patched,
                          const std::vector<std::string>& app,
                          const fs::path& out_dir) {
  return reprofile_app(build_command, sources, patched, app, out_dir, default_app_tools());
}

app_profile reprofile_app(const std::string& build_command,
                          const std::vector<fs::path>& sources,
                          const std::map<std::string, std::string>& patched,
                          const std::vector<std::string>& app,
                          const fs::path& out_dir,
                          const app_tools& tools) {
  check_app(app);
  check_sources(sources);
  std::vector<std::string> argv;
  const fs::path scratch = fs::absolute(out_dir / "app-build");
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
  // The scratch copy is flat, by file name: two sources of one name would overwrite each other.
  std::map<std::string, fs::path> by_name;
  for (const auto& s : sources) {
    const auto [it, added] = by_name.emplace(s.filename().string(), s);
    if (!added) {
      throw optimize_input_error("--source " + it->second.string() + " and " + s.string() +
                                 " have the same file name, and the --app-build copy is one "
                                 "folder; fix: rename one of them");
    }
  }
  std::map<std::string, std::string> texts; // file name -> text to write
  for (const auto& [name, text] : patched) {
    std::string target;
    for (const auto& s : sources) {
      if (name == s.filename().string() || name == s.string()) {
        target = s.filename().string();
      }
    }
    if (target.empty()) {
      throw optimize_input_error("a patched file '" + name + "' is none of the --source files (" +
                                 source_names(sources) +
                                 "); fix: key patched sources by a --source's file name");
    }
    texts[target] = text;
  }

  std::error_code ec;
  fs::remove_all(scratch, ec);
  fs::create_directories(scratch, ec);
  if (ec) {
    throw app_run_error("cannot create " + scratch.string() + " (" + ec.message() +
                        "); fix: check that --out is writable");
  }
  std::set<fs::path> copied;
  for (const auto& [name, path] : by_name) {
    fs::copy_file(path, scratch / name, fs::copy_options::overwrite_existing, ec);
    if (ec) {
      throw app_run_error("cannot copy " + path.string() + " to " + scratch.string() + " (" +
                          ec.message() + ")");
    }
    copied.insert(scratch / name);
  }
  for (const auto& [name, text] : texts) {
    write_file(scratch / name, text);
  }

  workers::child_options child;
  child.argv = argv;
  child.cwd = scratch;
  child.max_output_bytes = build_log_bytes;
  const auto built = workers::run_child(child, tools.build_timeout);
  const fs::path log = out_dir / "app-build.log";
  write_file(log, "$ " + joined(argv) + "\n(in " + scratch.string() + ")\n" + built.output +
                      (built.output_truncated ? "\n[output truncated]\n" : ""));
  if (!built.succeeded()) {
    const std::string how = !built.launched   ? "could not start (" + built.launch_error + ")"
                            : built.timed_out ? "timed out"
                            : built.exit_code >= 0
                                ? "exited with status " + std::to_string(built.exit_code)
                                : "was killed by signal " + std::to_string(built.term_signal);
    throw app_run_error("--app-build: `" + joined(argv) + "` " + how + " in " + scratch.string() +
                        "; its output is in " + log.string() +
                        "; fix: make the command build the application from the sources in "
                        "{SRC_DIR}");
  }

  // argv[0] from the scratch folder when the build made a file of that name there.
  std::vector<std::string> run_argv = app;
  const fs::path program(app.front());
  for (const fs::path& candidate :
       {program.is_relative() ? (scratch / program).lexically_normal() : fs::path(),
        scratch / program.filename()}) {
    if (!candidate.empty() && fs::is_regular_file(candidate, ec) && !copied.count(candidate)) {
      run_argv.front() = candidate.string();
      break;
    }
  }
  return profile_app(run_argv, out_dir / "app-reprofile", tools).profile;
}

} // namespace rpl::engine
