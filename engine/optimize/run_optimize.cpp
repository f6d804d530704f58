#include "engine/optimize/run_optimize.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <future>
#include <iostream>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <zmq.hpp>

#include "engine/graph/lane_worker.hpp"
#include "engine/optimize/app_mode.hpp"
#include "engine/optimize/app_sanitizer.hpp"
#include "engine/optimize/app_sources.hpp"
#include "engine/optimize/kernel_optimizer.hpp"
#include "engine/optimize/kernel_turns.hpp"
#include "engine/optimize/optimize_campaign.hpp"
#include "engine/optimize/optimize_journal.hpp"
#include "engine/optimize/optimize_report.hpp"
#include "engine/optimize/run_budget.hpp"
#include "engine/store/run_lease.hpp"
#include "stages/analysis/fixed_text.hpp"
#include "stages/capture/capture_manifest.hpp"
#include "stages/optimize/compile_flags.hpp"
#include "stages/optimize/proposer_kinds.hpp"
#include "stages/optimize/unified_diff.hpp"
#include "stages/search/command_template.hpp"
#include "stages/trace/cupti_mapping.hpp"
#include "workers/compile/compile_worker.hpp"
#include "workers/compilers/argv_check.hpp"
#include "workers/devices/nvidia_gpu.hpp"
#include "workers/lanes/kernel/kernel_lane.hpp"
#include "workers/lanes/replay/served_replay_lane.hpp"
#include "workers/protocol/curve_keys.hpp"
#include "workers/replay/replay_run.hpp"
#include "workers/source/clang_source.hpp"
#include "workers/source/source_patch.hpp"

namespace rpl::engine {

namespace {

namespace fs = std::filesystem;

/// The source parser's flags of a build command (its arguments after the compiler).
std::vector<std::string> flags_of_build(const std::vector<std::string>& argv) {
  return stages::optimize::parser_flags(
      argv.empty() ? argv : std::vector<std::string>(argv.begin() + 1, argv.end()));
}

std::string language_of_build(const fs::path& source, const std::vector<std::string>& argv) {
  return stages::optimize::source_language(source.string(), argv.empty() ? "" : argv.front());
}

std::vector<int> parse_devices(const std::string& text) {
  std::vector<int> devices;
  if (text == "all") {
    // The driver's indices, as CUDA_VISIBLE_DEVICES names them; without a GPU, device 0, whose
    // lane then says why it cannot start.
    for (const auto& gpu : workers::list_nvidia_gpus()) {
      devices.push_back(gpu.index);
    }
    if (devices.empty()) {
      devices.push_back(0);
    }
    return devices;
  }
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      std::size_t used = 0;
      const int d = std::stoi(item, &used);
      if (used != item.size() || d < 0) {
        throw std::invalid_argument(item);
      }
      devices.push_back(d);
    } catch (const std::exception&) {
      throw optimize_input_error("--devices " + text + ": '" + item +
                                 "' is not a device index; fix: --devices all, or 0,1");
    }
  }
  if (devices.empty()) {
    throw optimize_input_error("--devices is empty; fix: --devices all, or 0,1");
  }
  return devices;
}

/// --param VALUE as the space file would have written it: an integer, a number, else a string.
stages::param_value param_from_text(const std::string& text) {
  try {
    std::size_t used = 0;
    const long long integer = std::stoll(text, &used);
    if (used == text.size()) {
      return static_cast<std::int64_t>(integer);
    }
    const double number = std::stod(text, &used);
    if (used == text.size()) {
      return number;
    }
  } catch (const std::exception&) {
  }
  return text;
}

/// The build template expanded with --param values ({OUT} left for the worker).
std::vector<std::string> expand_build(const optimize_options& options,
                                      stages::configuration& config,
                                      std::map<std::string, std::string> values = {}) {
  for (const auto& [name, value] : options.params) {
    config.params.emplace_back(name, param_from_text(value));
    values[name] = value;
  }
  values["OUT"] = "{OUT}";
  std::vector<std::string> argv;
  try {
    const auto build = stages::command_template::parse(options.build_template, "--build-template");
    argv = build.expand(values);
  } catch (const std::exception& error) {
    throw optimize_input_error(std::string(error.what()) +
                               " (values come from --param NAME=VALUE)");
  }
  if (argv.empty()) {
    throw optimize_input_error("--build-template is empty; fix: a compile command with -o {OUT}");
  }
  if (!workers::compiler_allowed(argv[0], workers::compile_worker_options{}.allowed_compilers)) {
    throw optimize_input_error("--build-template: compiler '" + argv[0] +
                               "' is not allow-listed; fix: use nvcc, hipcc, clang++ or g++");
  }
  return argv;
}

/// What application mode learns before the loop, for the report.
struct app_run {
  app_profile before;
  std::vector<app_left_out> left_out;
  std::vector<std::string> notes; ///< how the sources were searched, which file each kernel is in
  std::map<std::string, double> capture_seconds; ///< by kernel (target.kernel)
  /// Several GPUs (app_walk_hooks::defer_captures): targets[i]'s kernel, captured by the device
  /// that takes it; the first `wanted` are the top K, the rest spares. Empty: captured already.
  std::vector<app_kernel> deferred;
  std::size_t wanted = static_cast<std::size_t>(-1);
  std::map<std::string, std::string> symbols; ///< kernel (target.kernel) -> its mangled name
  int first_device = 0;                       ///< where the application pass of the sanitizer runs
};

/// Where the kernels are looked for: --source narrows; else --source-dir (default: here).
app_source_search search_of(const optimize_options& options) {
  app_source_search search;
  search.files = options.sources;
  search.dir = !options.source_dir.empty() ? options.source_dir
               : options.sources.empty()   ? fs::path(".")
                                           : fs::path();
  search.exclude = {options.out};
  return search;
}

/// What --app-build copies: --source-dir's tree (or the current directory's, when the kernels
/// were searched there); with --source alone, those files flat.
app_build_sources build_sources_of(const optimize_options& options) {
  const auto search = search_of(options);
  return {search.dir, options.sources, {options.out}};
}

/// One chosen kernel as a target on its capture. With discovery only its own file is shipped to
/// the compile workers, and the build reads the rest of its folder and --source-dir through -I.
kernel_target app_target(const optimize_options& options,
                         const std::vector<messages::source_file>& sources,
                         const app_kernel& k) {
  kernel_target t;
  t.kernel = k.function;
  t.symbol = k.symbol;
  t.replay_dir = k.capture_dir;
  t.source_path = k.source;
  t.sources = sources;
  if (options.sources.empty()) {
    t.sources = read_source_files({k.source});
  }
  for (const auto& s : t.sources) {
    if (s.name == k.source.filename().string()) {
      t.source_text = s.content;
    }
  }
  t.build_argv = expand_build(options, t.config, {{"SOURCE", k.source.filename().string()}});
  if (options.sources.empty()) {
    const auto root = fs::absolute(search_of(options).dir).lexically_normal();
    const auto folder = fs::absolute(k.source).parent_path().lexically_normal();
    t.build_argv.insert(t.build_argv.begin() + 1, "-I" + folder.string());
    if (root != folder) {
      t.build_argv.insert(t.build_argv.begin() + 2, "-I" + root.string());
    }
  }
  t.language = language_of_build(k.source, t.build_argv);
  t.compile_flags = flags_of_build(t.build_argv);
  t.analysis = k.analysis_text;
  return t;
}

/// Application mode: the top K kernels of the application's profile, each on its capture; the
/// budget reserves the after phase once the profile has run and refuses captures it cannot fit.
std::vector<kernel_target> make_app_targets(const optimize_options& options,
                                            const app_tools& tools,
                                            std::size_t devices,
                                            run_budget& budget,
                                            const std::atomic<bool>& stop,
                                            app_run& app) {
  if (!options.launch.empty()) {
    throw optimize_input_error("--launch and -- APP exclude each other: with an application the "
                               "kernels run on their captured dispatches; fix: drop one");
  }
  if (!workers::replay::find_cuda_replay_program()) {
    throw optimize_input_error("-- APP needs rpl-replay-cuda beside rocm-perf (or "
                               "$RPL_REPLAY_CUDA); fix: build with CUDA on");
  }
  stages::configuration config;
  expand_build(options, config, {{"SOURCE", "{SOURCE}"}}); // bad input before the app runs
  const auto sources = options.sources.empty() ? std::vector<messages::source_file>()
                                               : read_source_files(options.sources);
  app_walk_hooks hooks;
  // With several GPUs each device captures the kernels it takes, beside the others' loops.
  hooks.defer_captures = devices > 1;
  hooks.profiled = [&budget](std::chrono::steady_clock::duration took) {
    budget.before_profiled(took);
  };
  std::size_t granted = 0; // captures allowed so far (a failed one counted too)
  hooks.may_capture = [&budget, &stop, &granted] {
    auto refused =
        stop ? std::string("interrupted before its capture") : budget.capture_refusal(granted);
    granted += refused.empty() ? 1 : 0;
    return refused;
  };
  hooks.captured = [&budget](std::chrono::steady_clock::duration took) { budget.captured(took); };
  auto ranking =
      rank_app_kernels(options.app, search_of(options), options.top, options.out, tools, hooks);
  app.before = ranking.before;
  if (!hooks.defer_captures) { // else said once the walk's end is known (walk_left_out)
    for (const auto& out : ranking.left_out) {
      spdlog::warn("{}: {}: {}", out.name, out.status, out.reason);
    }
  }
  app.left_out = std::move(ranking.left_out);
  app.notes = std::move(ranking.notes);
  std::vector<kernel_target> targets;
  for (const auto& k : ranking.chosen) {
    app.capture_seconds[k.function] += k.capture_seconds;
    app.symbols.emplace(k.function, k.symbol);
    targets.push_back(app_target(options, sources, k));
  }
  if (hooks.defer_captures) {
    app.wanted = options.top;
    app.deferred = std::move(ranking.chosen);
  } else {
    for (const auto& k : ranking.chosen) {
      app.notes.push_back(k.name + ": taken from " + k.source.string());
    }
  }
  return targets;
}

/// Deferred captures: the kernels left out before the last kernel a device took, with the notes
/// of the kernels taken; those further down the ranking were never reached by the walk.
void walk_left_out(app_run& app, const std::vector<target_result>& results) {
  if (app.deferred.empty()) {
    return;
  }
  std::size_t last = 0;
  for (const auto& r : results) {
    for (const auto& k : app.deferred) {
      if (k.function == r.kernel && r.status != "skipped") {
        app.notes.push_back(k.name + ": taken from " + k.source.string());
      }
      if (k.function == r.kernel) {
        last = std::max(last, k.rank);
      }
    }
  }
  std::erase_if(app.left_out, [last](const app_left_out& out) { return out.rank > last; });
  for (const auto& out : app.left_out) {
    spdlog::warn("{}: {}: {}", out.name, out.status, out.reason);
  }
}

/// The kernel's source: the one --source that defines `t.kernel` (libclang); sets its path, text,
/// language and the sources shipped with it.
void locate_kernel(const optimize_options& options,
                   const std::vector<messages::source_file>& sources,
                   kernel_target& t) {
  std::string why;
  if (!workers::libclang_available(why)) {
    throw std::runtime_error("the source guard needs libclang: " + why);
  }
  std::string found_in;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    std::string error;
    const auto lang = language_of_build(options.sources[i], t.build_argv);
    const auto model =
        workers::parse_source(sources[i].content, sources[i].name, lang, t.compile_flags, error);
    for (const auto& d : model.declarations) {
      if (d.kind == stages::optimize::decl_kind::kernel && d.is_definition && d.name == t.kernel) {
        if (!found_in.empty() && found_in != sources[i].name) {
          throw optimize_input_error("--kernel " + t.kernel + " is defined in both " + found_in +
                                     " and " + sources[i].name + "; fix: pass only one of them");
        }
        found_in = sources[i].name;
        t.source_path = options.sources[i];
        t.source_text = sources[i].content;
        t.language = lang;
      }
    }
  }
  if (found_in.empty()) {
    std::string names;
    for (const auto& s : sources) {
      names += (names.empty() ? "" : ", ") + s.name;
    }
    throw optimize_input_error("--kernel " + t.kernel +
                               ": no __global__ function of that name is "
                               "defined in " +
                               names +
                               "; fix: name the kernel as the source spells it (extern \"C\" "
                               "kernels keep their name), or add the file that defines it");
  }
  t.sources = sources;
}

/// The targets the options name, each checked against its source.
std::vector<kernel_target> make_targets(const optimize_options& options,
                                        const std::vector<messages::source_file>& sources) {
  if (options.launch.empty()) {
    throw optimize_input_error("optimize needs --launch FILE (the kernel lane's launch file, "
                               "docs/launch-file.md); fix: pass one, or use --top K -- APP");
  }
  if (options.kernels.size() != 1) {
    throw optimize_input_error("--launch optimizes one kernel: pass exactly one --kernel NAME");
  }
  kernel_target t;
  t.kernel = options.kernels.front();
  try {
    t.launch = stages::load_launch_spec(options.launch);
  } catch (const std::exception& error) {
    throw optimize_input_error(error.what());
  }
  if (t.launch.kernel != t.kernel) {
    throw optimize_input_error("--launch " + options.launch.string() + " launches kernel '" +
                               t.launch.kernel + "', not --kernel '" + t.kernel +
                               "'; fix: pass the launch file of that kernel");
  }
  t.build_argv = expand_build(options, t.config);
  const auto resolved = stages::resolve_launch(t.launch, t.config);
  if (!resolved.ok()) {
    throw optimize_input_error(resolved.error + " (values come from --param NAME=VALUE)");
  }
  t.block_threads = resolved.launch->block.x * resolved.launch->block.y * resolved.launch->block.z;
  t.compile_flags = flags_of_build(t.build_argv);
  locate_kernel(options, sources, t);
  return {t};
}

/// Whether the capture's kernel symbol is the kernel `name` (as the source names it): the symbol
/// itself (extern "C"), or its demangled function name, qualified or not.
bool capture_is_of(const std::string& symbol, const std::string& name) {
  if (symbol == name) {
    return true;
  }
  const std::string base = kernel_base_name(stages::cupti::demangle(symbol));
  const auto colons = base.rfind("::");
  return base == name || (colons != std::string::npos && base.substr(colons + 2) == name);
}

/// --replay DIR: the one --kernel on a dispatch `rocm-perf isolate` captured, checked against the
/// capture's manifest.
std::vector<kernel_target> make_replay_targets(const optimize_options& options,
                                               const std::vector<messages::source_file>& sources) {
  if (!options.launch.empty() || !options.app.empty()) {
    throw optimize_input_error("--replay excludes --launch and -- APP: the capture is how the "
                               "kernel runs; fix: drop one");
  }
  if (options.kernels.size() != 1) {
    throw optimize_input_error("--replay " + options.replay_dir.string() +
                               " optimizes one kernel: pass exactly one --kernel NAME");
  }
  const fs::path dispatch = options.replay_dir / "dispatch.json";
  std::error_code ec;
  if (!fs::is_regular_file(dispatch, ec)) {
    throw optimize_input_error(
        "--replay " + options.replay_dir.string() + ": not a capture (no dispatch.json there); " +
        "fix: capture the dispatch with rocm-perf isolate --kernel REGEX --out DIR -- APP");
  }
  stages::capture::dispatch_manifest manifest;
  try {
    manifest = stages::capture::dispatch_from_json(
        nlohmann::json::parse(read_input_file(dispatch, "--replay")), dispatch.string());
  } catch (const std::exception& error) {
    throw optimize_input_error("--replay " + options.replay_dir.string() + ": " + error.what() +
                               "; fix: capture it again with rocm-perf isolate");
  }
  kernel_target t;
  t.kernel = options.kernels.front();
  if (!capture_is_of(manifest.kernel, t.kernel)) {
    throw optimize_input_error("--replay " + options.replay_dir.string() +
                               " is a capture of kernel " + manifest.kernel + " (" +
                               stages::cupti::demangle(manifest.kernel) + "), not --kernel " +
                               t.kernel + "; fix: name the kernel the capture holds, or capture " +
                               t.kernel + " with rocm-perf isolate");
  }
  if (manifest.backend != "cuda") {
    throw optimize_input_error("--replay " + options.replay_dir.string() + ": a capture of the " +
                               manifest.backend +
                               " backend; optimize replays CUDA captures only; fix: capture on "
                               "an NVIDIA GPU (rocm-perf isolate --backend cuda)");
  }
  if (!workers::replay::find_cuda_replay_program()) {
    throw optimize_input_error("--replay needs rpl-replay-cuda beside rocm-perf (or "
                               "$RPL_REPLAY_CUDA); fix: build with CUDA on");
  }
  t.symbol = manifest.kernel;
  t.replay_dir = options.replay_dir;
  t.build_argv = expand_build(options, t.config);
  t.compile_flags = flags_of_build(t.build_argv);
  locate_kernel(options, sources, t);
  return {t};
}

/// The accepted changes of every kernel, combined per source file: several kernels of one file
/// each changed their own function, each diff against the original, so their hunks go in
/// together (stages/optimize/unified_diff.hpp, apply_unified_diffs). A diff that does not apply,
/// or that overlaps an earlier kernel's, is left out and named in `conflicts`.
std::map<fs::path, std::string> combined_changes(const std::vector<target_result>& results,
                                                 std::vector<std::string>& conflicts) {
  std::map<fs::path, std::vector<const target_result*>> by_file;
  for (const auto& r : results) {
    if (r.status == "improved") {
      by_file[r.source_path].push_back(&r);
    }
  }
  std::map<fs::path, std::string> texts;
  for (const auto& [path, improved] : by_file) {
    std::vector<std::string> diffs;
    for (const target_result* r : improved) {
      diffs.push_back(r->accepted_diff);
    }
    auto combined = stages::optimize::apply_unified_diffs(read_input_file(path, "--source"), diffs);
    for (const auto& [index, why] : combined.left_out) {
      conflicts.push_back(improved[index]->kernel + "'s change does not go in with the others in " +
                          path.string() + ": " + why);
    }
    if (!combined.applied.empty()) {
      texts.emplace(path, std::move(combined.text));
    }
  }
  return texts;
}

/// --proposer as the kinds to ask (stages/optimize/proposer_kinds.hpp), checked against the LLM
/// options.
std::vector<std::string> proposer_kinds_of(const optimize_options& options) {
  const auto kinds = stages::optimize::kinds_of_choice(options.proposer);
  if (kinds.empty()) {
    throw optimize_input_error("--proposer " + options.proposer + ": expected rule, llm or both");
  }
  for (const auto& kind : kinds) {
    if (!stages::optimize::find_proposer_kind(kind)->needs_endpoint) {
      continue;
    }
    // A local LLM proposer needs both; a remote one (--listen) brings its own, and then the
    // engine starts none. One of the two alone is a mistake either way.
    const bool local_llm = !options.llm_endpoint.empty() || !options.llm_model.empty();
    if (local_llm ? options.llm_endpoint.empty() || options.llm_model.empty()
                  : options.listen.empty()) {
      throw optimize_input_error("--proposer " + options.proposer +
                                 " needs --llm-endpoint URL and --llm-model NAME (the key, if any, "
                                 "in RPL_LLM_API_KEY), or --listen for a remote LLM proposer; "
                                 "fix: pass both, or --proposer rule");
    }
  }
  return kinds;
}

std::optional<broker_curve> curve_of(const optimize_options& options) {
  if (options.listen.empty() && options.curve_keys.empty() && options.allow_keys.empty()) {
    return std::nullopt;
  }
  if (options.listen.empty() || options.curve_keys.empty() || options.allow_keys.empty()) {
    throw optimize_input_error(
        "--listen, --curve-keys and --allow-keys go together: remote proposers and compile "
        "workers are admitted only with CURVE keys; fix: rocm-perf keys generate DIR (here and "
        "on each worker), then --listen tcp://0.0.0.0:5556 --curve-keys DIR --allow-keys FILE");
  }
  try {
    workers::require_curve("--curve-keys");
    return broker_curve{workers::read_keypair(options.curve_keys),
                        workers::read_allow_list(options.allow_keys), options.listen};
  } catch (const workers::curve_error& error) {
    throw optimize_input_error(error.what());
  }
}

/// One run at a time in --out: a second one would measure the same attempts and overwrite the
/// journal and the report (store/run_lease.hpp). Before anything is written there.
run_lease take_out_lease(const optimize_options& options) {
  std::error_code ec;
  std::filesystem::create_directories(options.out, ec);
  return take_campaign_lease(options.out / "optimize.lease",
                             options.resume ? "rocm-perf optimize --resume" : "rocm-perf optimize",
                             "--out " + options.out.string(), "optimize run",
                             ", or choose another --out");
}

campaign_setup setup_of(const std::vector<std::string>& kinds,
                        const std::vector<kernel_target>& targets) {
  campaign_setup setup;
  setup.kinds = kinds;
  std::set<std::string> read_paths;
  for (const auto& target : targets) {
    if (!target.build_argv.empty() && fs::path(target.build_argv.front()).is_absolute()) {
      setup.compilers.push_back(target.build_argv.front());
    }
    for (auto& path : workers::named_read_paths(target.build_argv)) {
      read_paths.insert(std::move(path));
    }
  }
  setup.read_paths.assign(read_paths.begin(), read_paths.end());
  return setup;
}

optimizer_settings settings_of(const optimize_options& options,
                               const std::vector<std::string>& kinds) {
  optimizer_settings settings;
  settings.proposers = kinds;
  settings.iterations = options.iterations;
  settings.rounds = options.rounds;
  settings.runs_per_round = options.runs_per_round;
  settings.tune_budget = options.tune_budget;
  settings.noise_target = options.noise_target;
  settings.seed = options.seed;
  settings.resume = options.resume;
  settings.device_arch = options.device_arch;
  // The engine waits a little longer than the proposer's own deadline, which answers first.
  settings.propose_timeout_ms = (options.llm_timeout_s + 15) * 1000;
  return settings;
}

/// The lane of `target` on `device`: the kernel lane with a launch file, the replay lane on a
/// captured dispatch. Its thread starts (and owns) the lane's process.
std::vector<std::unique_ptr<lane_worker>>
lane_for(const kernel_target& target, int device, const std::filesystem::path& out) {
  workers::lane_backend_ptr backend;
  const std::string name = "gpu" + std::to_string(device);
  if (!target.replay_dir.empty()) {
    // The long-lived replay lane: the capture placed once, candidates served like the kernel
    // lane's (workers/lanes/replay/served_replay_lane.hpp).
    workers::served_replay_lane_options r;
    r.name = name;
    r.capture = target.replay_dir;
    r.program = *workers::replay::find_cuda_replay_program();
    r.device = device;
    backend = std::make_unique<workers::served_replay_lane>(std::move(r));
  } else {
    workers::kernel_lane_options lane_options;
    lane_options.name = name;
    lane_options.device = device;
    lane_options.program = workers::default_kernel_lane_program();
    lane_options.sanitizer_log_dir = out / "sanitizer";
    backend = std::make_unique<workers::kernel_lane>(lane_options);
  }
  std::vector<std::unique_ptr<lane_worker>> lanes;
  lanes.push_back(std::make_unique<lane_worker>(std::move(backend), -1));
  return lanes;
}

/// The rule proposer's notes on one kernel (messages::propose_reply::notes: why each rule did not
/// apply), each line once in the order first seen; proposers may be asked from several threads.
class rule_notes {
public:
  void add(const std::vector<std::string>& notes) {
    const std::lock_guard lock(mutex_);
    for (const auto& n : notes) {
      if (seen_.insert(n).second) {
        lines_.push_back(n);
      }
    }
  }
  std::vector<std::string> lines() const {
    const std::lock_guard lock(mutex_);
    return lines_;
  }

private:
  mutable std::mutex mutex_;
  std::set<std::string> seen_;
  std::vector<std::string> lines_;
};

using deferred_capture = std::function<std::string(
    std::size_t target, int device, std::optional<run_budget::clock::time_point> deadline)>;

/// Every target in turns (kernel_turns.hpp): one thread per device, each kernel's deadline from
/// the budget, the lane of its device started for it.
std::vector<target_result> optimize_targets(const std::vector<kernel_target>& targets,
                                            const std::vector<int>& devices,
                                            const optimizer_settings& settings,
                                            const run_budget& budget,
                                            optimize_campaign& campaign,
                                            optimize_journal& journal,
                                            const std::filesystem::path& out,
                                            const std::atomic<bool>& stop,
                                            const deferred_capture& capture,
                                            std::size_t wanted) {
  const auto optimize_one = [&](std::size_t i, std::size_t d,
                                std::optional<run_budget::clock::time_point> deadline) {
    const auto& target = targets[i];
    if (capture) {
      if (std::string failed = capture(i, devices[d], deadline); !failed.empty()) {
        target_result skipped;
        skipped.kernel = target.kernel;
        skipped.source_path = target.source_path;
        skipped.status = "skipped";
        skipped.reason = std::move(failed);
        spdlog::warn("{}: skipped: {}", target.kernel, skipped.reason);
        return skipped;
      }
    }
    optimizer_services services;
    services.compiler = &campaign.compiler();
    rule_notes notes;
    services.propose = [&campaign, &notes](const std::string& kind,
                                           const messages::propose_request& request) {
      auto reply = campaign.propose(kind, request);
      if (kind == "rule") {
        notes.add(reply.notes);
      }
      return reply;
    };
    services.parse =
        [&target](const std::string& text,
                  std::string& error) -> std::optional<stages::optimize::source_model> {
      auto model = workers::parse_source(text, target.source_path.filename().string(),
                                         target.language, target.compile_flags, error);
      if (!error.empty()) {
        return std::nullopt;
      }
      return model;
    };
    auto kernel_settings = settings;
    kernel_settings.deadline = deadline;
    const auto lanes = lane_for(target, devices[d], out);
    auto result = optimize_kernel(target, kernel_settings, services, lanes, journal,
                                  campaign.artifacts(), stop);
    if (result.status == "unchanged") {
      result.rules_not_applied = notes.lines();
    }
    return result;
  };
  return run_kernel_turns(targets, devices, budget, stop, optimize_one, wanted);
}

/// Deferred captures (several GPUs): captures targets[i]'s kernel on `device` within the turn's
/// deadline (180 s at most); empty when captured, else why it is skipped.
deferred_capture
capture_in_turn(const optimize_options& options, const app_tools& tools, app_run& app) {
  if (app.deferred.empty()) {
    return {};
  }
  return [&options, &tools, &app](std::size_t i, int device,
                                  std::optional<run_budget::clock::time_point> deadline) {
    capture_place where;
    where.device = device;
    if (deadline) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          *deadline - run_budget::clock::now());
      where.timeout = std::clamp(left, std::chrono::milliseconds(1), where.timeout);
    }
    auto& kernel = app.deferred[i];
    std::string failed = capture_app_kernel(options.app, tools, where, kernel);
    if (failed.empty()) {
      spdlog::info("{}: captured on device {} in {:.1f} s", kernel.name, device,
                   kernel.capture_seconds);
    }
    return failed;
  };
}

/// The improved kernels' changes combined per file, keyed as --app-build's copy names them;
/// what does not combine is named in `conflicts`.
std::map<std::string, std::string> patched_sources(const std::vector<target_result>& results,
                                                   const app_build_sources& sources,
                                                   std::vector<std::string>& conflicts) {
  std::map<std::string, std::string> patched;
  for (const auto& [path, text] : combined_changes(results, conflicts)) {
    patched[sources.root.empty() ? path.filename().string() : path.string()] = text;
  }
  return patched;
}

/// -- APP: the before profile, and with --app-build the accepted changes rebuilt and profiled
/// within what is left of the budget (its reserve at least).
nlohmann::json application_report(const optimize_options& options,
                                  const app_run& app,
                                  std::vector<target_result>& results,
                                  const run_budget& budget,
                                  const app_tools& tools,
                                  const std::atomic<bool>& stop) {
  const auto profile_json = [](const app_profile& p) {
    nlohmann::json j = {{"gpu_time_ns", p.gpu_time_ns},
                        {"critical_path_ns", p.critical_path_ns},
                        {"summary", p.summary}};
    if (p.gpu_share) {
      j["gpu_share_of_critical_path"] = *p.gpu_share;
    }
    return j;
  };
  nlohmann::json application = {
      {"command", options.app}, {"sources", app.notes}, {"before", profile_json(app.before)}};
  if (app.before.gpu_share) {
    application["gpu_share_before"] = *app.before.gpu_share;
  }
  const bool accepted = std::any_of(results.begin(), results.end(),
                                    [](const target_result& r) { return r.status == "improved"; });
  const std::string how = "for the application's GPU time and critical path after the changes, "
                          "run again with --app-build 'CMD' (CMD builds it in {SRC_DIR}, a copy "
                          "of the sources), or --apply them and run rocm-perf profile -- APP";
  if (!accepted || options.app_build.empty() || stop) {
    application["not_rebuilt"] = !accepted ? "nothing was accepted: the application was not rebuilt"
                                 : stop
                                     ? "interrupted: the application was not rebuilt; " + how
                                     : "the application was not rebuilt (no --app-build); " + how;
    if (accepted && !stop) {
      application["sanitizer"] = {
          {"ran", false},
          {"not_run", "no --app-build: the accepted changes were not run under compute-sanitizer "
                      "in the application (a replay cannot be); fix: --app-build 'CMD'"}};
    }
    application_figures(application, app.before, nullptr);
    return application;
  }
  const auto sources = build_sources_of(options);
  std::vector<std::string> conflicts;
  auto patched = patched_sources(results, sources, conflicts);
  try {
    std::chrono::milliseconds build_timeout{0};
    if (budget.bounded()) {
      const auto left = budget.left_for_after() - budget.before_profile();
      build_timeout = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(left),
                               std::chrono::milliseconds(10000));
    }
    auto argv = build_app(options.app_build, sources, patched, options.app, options.out, tools,
                          build_timeout);
    // The accepted changes under compute-sanitizer in the application (app_sanitizer.hpp); one
    // it refuses is left out of the build that is profiled (and of --apply).
    app_sanitizer_pass pass{
        argv,           options.app, app.symbols, options.out / "sanitizer", app.first_device,
        app_run_timeout};
    if (budget.bounded()) { // what is left after the second profile, shared by every run
      const auto improved = std::count_if(results.begin(), results.end(),
                                          [](const auto& r) { return r.status == "improved"; });
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          budget.left_for_after() - budget.before_profile());
      pass.tool_timeout = std::clamp(left / std::max<long>(1, 4 * improved),
                                     std::chrono::milliseconds(10000), app_run_timeout);
    }
    application["sanitizer"] = sanitize_accepted(results, pass, tools, stop);
    if (!application["sanitizer"].value("refused", nlohmann::json::object()).empty()) {
      conflicts.clear();
      patched = patched_sources(results, sources, conflicts);
      if (patched.empty() || stop) {
        application["not_combined"] = conflicts;
        application["not_rebuilt"] = stop ? "interrupted: the application was not rebuilt"
                                          : "every accepted change was refused by the sanitizer "
                                            "pass: the application was not rebuilt";
        application_figures(application, app.before, nullptr);
        return application;
      }
      argv = build_app(options.app_build, sources, patched, options.app, options.out, tools,
                       build_timeout);
    }
    application["not_combined"] = conflicts;
    const auto after = profile_built_app(argv, options.out, tools);
    application["after"] = profile_json(after);
    if (after.gpu_share) {
      application["gpu_share_after"] = *after.gpu_share;
    }
    application["after"]["patched_files"] = patched.size();
    if (after.gpu_time_ns > 0) {
      application["gpu_time_speedup"] = app.before.gpu_time_ns / after.gpu_time_ns;
    }
    if (after.critical_path_ns > 0) {
      application["critical_path_speedup"] = app.before.critical_path_ns / after.critical_path_ns;
    }
    application_figures(application, app.before, &after);
  } catch (const std::exception& error) {
    application["not_combined"] = conflicts;
    application["after_error"] = error.what();
    application_figures(application, app.before, nullptr);
  }
  return application;
}

/// --apply: the improved sources written over the user's, with a backup; 1 when it failed.
int apply_changes(const optimize_options& options, const std::vector<target_result>& results) {
  // One change per file: every improved kernel of a file, combined.
  std::vector<std::string> conflicts;
  std::vector<workers::file_change> changes;
  for (auto& [path, text] : combined_changes(results, conflicts)) {
    changes.push_back({fs::absolute(path), read_input_file(path, "--source"), std::move(text)});
  }
  for (const auto& conflict : conflicts) {
    std::fprintf(stderr, "rocm-perf optimize: --apply: not applied: %s (its diff is in %s)\n",
                 conflict.c_str(), options.out.c_str());
  }
  if (changes.empty()) {
    return conflicts.empty() ? 0 : 1;
  }
  const auto applied = workers::apply_with_backup(changes, options.out / "backup");
  if (!applied.ok) {
    std::fprintf(stderr, "rocm-perf optimize: --apply: %s\n", applied.error.c_str());
    return 1;
  }
  std::fprintf(stderr,
               "rocm-perf optimize: applied the accepted changes to %zu file(s); the originals are "
               "in %s; undo with: rocm-perf optimize --rollback %s\n",
               changes.size(), (options.out / "backup").c_str(), options.out.c_str());
  return conflicts.empty() ? 0 : 1;
}

void print_summary(const std::vector<target_result>& results,
                   const nlohmann::json& application,
                   const std::filesystem::path& out) {
  if (!application.is_null()) {
    std::cout << "application:\n" << application_text(application, "  ");
  }
  std::cout << optimize_summary_text(results, out);
}

/// The kernels application mode left out before their loops, as results (after the others).
void append_left_out(const app_run& app, std::vector<target_result>& results) {
  for (const auto& out : app.left_out) {
    target_result r;
    r.kernel = out.name;
    r.source_path = out.source;
    r.status = out.status;
    r.reason = out.reason;
    r.seconds = out.seconds;
    results.push_back(std::move(r));
  }
}

/// The exit code of a finished run (see run_optimize.hpp).
int exit_code_of(const std::vector<target_result>& results, bool stopped, int apply_exit) {
  if (stopped) {
    return 130;
  }
  if (apply_exit != 0) {
    return apply_exit;
  }
  bool tried = false;
  bool failed = false;
  for (const auto& r : results) {
    tried = tried || r.status == "improved" || r.status == "unchanged";
    failed = failed || r.status == "failed";
  }
  return tried ? 0 : failed ? 1 : 3;
}

/// The targets the options name: --replay's, the application's, or --launch's.
std::vector<kernel_target> targets_of(const optimize_options& options,
                                      const app_tools& tools,
                                      std::size_t devices,
                                      run_budget& budget,
                                      const std::atomic<bool>& stop,
                                      app_run& app) {
  if (!options.replay_dir.empty()) {
    return make_replay_targets(options, read_source_files(options.sources));
  }
  if (!options.app.empty()) {
    return make_app_targets(options, tools, devices, budget, stop, app);
  }
  return make_targets(options, read_source_files(options.sources));
}

run_budget::limits limits_of(const optimize_options& options) {
  run_budget::limits limits;
  limits.total = options.time_budget;
  limits.after_phase = !options.app.empty() && !options.app_build.empty();
  limits.min_kernel = options.min_kernel_time;
  return limits;
}

} // namespace

int run_optimize(const optimize_options& options, std::atomic<bool>& stop) {
  return run_optimize(options, stop, default_app_tools());
}

int run_optimize(const optimize_options& options, std::atomic<bool>& stop, const app_tools& tools) {
  if (options.sources.empty() && options.app.empty()) {
    throw optimize_input_error("optimize needs --source FILE; fix: name the kernel's source");
  }
  if (options.build_template.empty()) {
    throw optimize_input_error("optimize needs --build-template STR, e.g. \"nvcc -cubin "
                               "-arch=sm_90 gemm.cu -o {OUT}\"");
  }
  const auto kinds = proposer_kinds_of(options);
  auto curve = curve_of(options);
  const auto devices = parse_devices(options.devices);
  const run_lease lease = take_out_lease(options);
  run_budget budget(limits_of(options));
  app_run app;
  app.first_device = devices.empty() ? 0 : devices.front();
  const auto targets = targets_of(options, tools, devices.size(), budget, stop, app);
  std::vector<target_result> results;
  if (!targets.empty()) {
    optimize_journal journal(options.out);
    optimize_campaign campaign(options, std::move(curve), setup_of(kinds, targets));
    auto settings = settings_of(options, kinds);
    // As many candidates in the graph as there are compile workers: a batch builds at once.
    settings.max_in_flight = std::max<std::size_t>(4, default_compile_workers(options));
    results = optimize_targets(targets, devices, settings, budget, campaign, journal, options.out,
                               stop, capture_in_turn(options, tools, app), app.wanted);
    walk_left_out(app, results);
    spdlog::info("builds: {} from the artifact cache, {} compiled", campaign.cache_hits(),
                 campaign.cache_misses());
    campaign.stop();
  } else {
    std::fprintf(stderr,
                 "rocm-perf optimize: none of the top %zu kernels could be tried (see "
                 "the report for each one's reason)\n",
                 options.top);
  }
  for (auto& r : results) {
    if (const auto it = app.capture_seconds.find(r.kernel); it != app.capture_seconds.end()) {
      r.seconds += it->second;
    }
  }
  append_left_out(app, results);
  const nlohmann::json application =
      options.app.empty() ? nlohmann::json()
                          : application_report(options, app, results, budget, tools, stop);
  const auto report = write_optimize_report(options.out, results, application);
  const int apply_exit = options.apply ? apply_changes(options, results) : 0;
  // Logged before the report: --json's document must be the last thing on the terminal, as
  // scripts (and the GPU tests) read it from the first "{" to the end.
  spdlog::info("the run took {:.1f} s{}", budget.elapsed_s(),
               budget.bounded()
                   ? " of --time-budget " + std::to_string(options.time_budget.count()) + " s"
                   : std::string());
  if (options.json) {
    std::cout << report.dump(2) << '\n';
  } else {
    print_summary(results, application, options.out);
  }
  return exit_code_of(results, stop, apply_exit);
}

int rollback_optimize(const fs::path& out, bool force) {
  workers::rollback_options rollback_options;
  rollback_options.force = force;
  const auto result = workers::rollback(out / "backup", rollback_options);
  if (!result.ok) {
    std::fprintf(stderr, "rocm-perf optimize --rollback: %s\n", result.error.c_str());
    return 1;
  }
  std::fprintf(stderr, "rocm-perf optimize --rollback: %s\n", result.message.c_str());
  return 0;
}

} // namespace rpl::engine
