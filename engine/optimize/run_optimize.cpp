#include "engine/optimize/run_optimize.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <future>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <thread>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <zmq.hpp>

#include "engine/graph/lane_worker.hpp"
#include "engine/optimize/app_mode.hpp"
#include "engine/optimize/kernel_optimizer.hpp"
#include "engine/optimize/optimize_campaign.hpp"
#include "engine/optimize/optimize_journal.hpp"
#include "engine/optimize/optimize_report.hpp"
#include "engine/store/run_lease.hpp"
#include "stages/optimize/compile_flags.hpp"
#include "stages/optimize/proposer_kinds.hpp"
#include "stages/optimize/unified_diff.hpp"
#include "stages/search/command_template.hpp"
#include "workers/compile/compile_worker.hpp"
#include "workers/compilers/argv_check.hpp"
#include "workers/devices/nvidia_gpu.hpp"
#include "workers/lanes/kernel/kernel_lane.hpp"
#include "workers/lanes/replay/replay_lane.hpp"
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
                                      stages::configuration& config) {
  std::map<std::string, std::string> values;
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

/// Application mode: the top K kernels of the application's profile, each on its capture.
std::vector<kernel_target> make_app_targets(const optimize_options& options,
                                            const std::vector<messages::source_file>& sources,
                                            app_profile& before,
                                            std::vector<std::string>& skipped) {
  if (!options.launch.empty()) {
    throw optimize_input_error("--launch and -- APP exclude each other: with an application the "
                               "kernels run on their captured dispatches; fix: drop one");
  }
  if (!workers::replay::find_cuda_replay_program()) {
    throw optimize_input_error("-- APP needs rpl-replay-cuda beside rocm-perf (or "
                               "$RPL_REPLAY_CUDA); fix: build with CUDA on");
  }
  stages::configuration config;
  const auto argv = expand_build(options, config);
  const auto kernels =
      rank_app_kernels(options.app, options.sources, options.top, options.out, skipped, before);
  std::vector<kernel_target> targets;
  for (const auto& k : kernels) {
    kernel_target t;
    t.kernel = k.function;
    t.symbol = k.symbol;
    t.replay_dir = k.capture_dir;
    t.source_path = k.source;
    for (const auto& s : sources) {
      if (s.name == k.source.filename().string()) {
        t.source_text = s.content;
      }
    }
    t.language = language_of_build(k.source, argv);
    t.build_argv = argv;
    t.compile_flags = flags_of_build(argv);
    t.sources = sources;
    t.config = config;
    t.analysis = k.analysis_text;
    targets.push_back(std::move(t));
  }
  return targets;
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
  // The kernel's source: the one --source that defines it.
  t.compile_flags = flags_of_build(t.build_argv);
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
  return {t};
}

/// The accepted changes of every kernel, combined per source file: several kernels of one file
/// each changed their own function, so their diffs against the original apply one after the
/// other. A diff that does not apply on top of the others is left out and named in `conflicts`.
std::map<fs::path, std::string> combined_changes(const std::vector<target_result>& results,
                                                 std::vector<std::string>& conflicts) {
  std::map<fs::path, std::string> texts;
  for (const auto& r : results) {
    if (r.status != "improved") {
      continue;
    }
    auto it = texts.find(r.source_path);
    if (it == texts.end()) {
      it = texts.emplace(r.source_path, read_input_file(r.source_path, "--source")).first;
    }
    const auto patched = stages::optimize::apply_unified_diff(it->second, r.accepted_diff);
    if (patched.ok) {
      it->second = patched.text;
    } else {
      conflicts.push_back(r.kernel + "'s change does not apply on top of the others in " +
                          r.source_path.string() + ": " + patched.error);
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
  if (options.time_budget.count() > 0) {
    settings.deadline = std::chrono::steady_clock::now() + options.time_budget;
  }
  return settings;
}

/// The lane of `target` on `device`: the kernel lane with a launch file, the replay lane on a
/// captured dispatch. Its thread starts (and owns) the lane's process.
std::vector<std::unique_ptr<lane_worker>>
lane_for(const kernel_target& target, int device, const std::filesystem::path& out) {
  workers::lane_backend_ptr backend;
  const std::string name = "gpu" + std::to_string(device);
  if (!target.replay_dir.empty()) {
    workers::replay_lane_options r;
    r.name = name;
    r.capture = target.replay_dir;
    r.program = *workers::replay::find_cuda_replay_program();
    r.device = device;
    backend = std::make_unique<workers::replay_lane>(std::move(r));
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

/// Every target, one thread per device, targets dealt out round-robin.
std::vector<target_result> optimize_targets(const std::vector<kernel_target>& targets,
                                            const std::vector<int>& devices,
                                            const optimizer_settings& settings,
                                            optimize_campaign& campaign,
                                            optimize_journal& journal,
                                            const std::filesystem::path& out,
                                            const std::atomic<bool>& stop) {
  std::vector<target_result> results(targets.size());
  const auto run_device = [&](std::size_t d) {
    for (std::size_t i = d; i < targets.size(); i += devices.size()) {
      const auto& target = targets[i];
      optimizer_services services;
      services.compiler = &campaign.compiler();
      services.propose = [&campaign](const std::string& kind,
                                     const messages::propose_request& request) {
        return campaign.propose(kind, request);
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
      const auto lanes = lane_for(target, devices[d], out);
      results[i] =
          optimize_kernel(target, settings, services, lanes, journal, campaign.artifacts(), stop);
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t d = 0; d < devices.size() && d < targets.size(); ++d) {
    threads.emplace_back([&, d] {
      try {
        run_device(d);
      } catch (const std::exception& error) {
        for (std::size_t i = d; i < targets.size(); i += devices.size()) {
          if (results[i].kernel.empty()) {
            results[i].kernel = targets[i].kernel;
            results[i].source_path = targets[i].source_path;
            results[i].error = std::string("the lane of device ") + std::to_string(devices[d]) +
                               " failed: " + error.what();
          }
        }
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  return results;
}

/// -- APP: the before profile, and with --app-build the accepted changes rebuilt and profiled.
nlohmann::json application_report(const optimize_options& options,
                                  const app_profile& before,
                                  const std::vector<std::string>& skipped,
                                  const std::vector<target_result>& results,
                                  const std::atomic<bool>& stop) {
  nlohmann::json application = {{"command", options.app},
                                {"skipped", skipped},
                                {"before",
                                 {{"gpu_time_ns", before.gpu_time_ns},
                                  {"critical_path_ns", before.critical_path_ns},
                                  {"summary", before.summary}}}};
  if (options.app_build.empty() || stop) {
    return application;
  }
  std::vector<std::string> conflicts;
  std::map<std::string, std::string> patched;
  for (const auto& [path, text] : combined_changes(results, conflicts)) {
    patched[path.filename().string()] = text;
  }
  application["not_combined"] = conflicts;
  try {
    const auto after =
        reprofile_app(options.app_build, options.sources, patched, options.app, options.out);
    application["after"] = {{"gpu_time_ns", after.gpu_time_ns},
                            {"critical_path_ns", after.critical_path_ns},
                            {"summary", after.summary},
                            {"patched_files", patched.size()}};
    if (after.gpu_time_ns > 0) {
      application["gpu_time_speedup"] = before.gpu_time_ns / after.gpu_time_ns;
    }
    if (after.critical_path_ns > 0) {
      application["critical_path_speedup"] = before.critical_path_ns / after.critical_path_ns;
    }
  } catch (const std::exception& error) {
    application["after_error"] = error.what();
  }
  return application;
}

/// --apply: the improved sources written over the user's, with a backup; 1 when it failed.
int apply_changes(const optimize_options& options, const std::vector<target_result>& results) {
  std::vector<workers::file_change> changes;
  for (const auto& r : results) {
    if (r.status == "improved") {
      changes.push_back(
          {fs::absolute(r.source_path), read_input_file(r.source_path, "--source"), r.best_source});
    }
  }
  if (changes.empty()) {
    return 0;
  }
  const auto applied = workers::apply_with_backup(changes, options.out / "backup");
  if (!applied.ok) {
    std::fprintf(stderr, "rocm-perf optimize: --apply: %s\n", applied.error.c_str());
    return 1;
  }
  std::fprintf(stderr,
               "rocm-perf optimize: applied %zu accepted change(s); the originals are in %s; "
               "undo with: rocm-perf optimize --rollback %s\n",
               changes.size(), (options.out / "backup").c_str(), options.out.c_str());
  return 0;
}

void print_summary(const std::vector<target_result>& results,
                   const nlohmann::json& application,
                   const std::filesystem::path& out) {
  std::cout << optimize_summary_text(results, out);
  if (application.is_null()) {
    return;
  }
  std::cout << "application before: " << application["before"].value("summary", "") << '\n';
  if (application.contains("after")) {
    std::cout << "application after:  " << application["after"].value("summary", "")
              << "\n  GPU time " << application.value("gpu_time_speedup", 0.0)
              << "x, critical path " << application.value("critical_path_speedup", 0.0)
              << "x (before / after, one profiled run each)\n";
  } else if (application.contains("after_error")) {
    std::cout << "application after: " << application["after_error"].get<std::string>() << '\n';
  }
  for (const auto& line : application["skipped"]) {
    std::cout << "skipped: " << line.get<std::string>() << '\n';
  }
}

} // namespace

int run_optimize(const optimize_options& options, std::atomic<bool>& stop) {
  if (options.sources.empty()) {
    throw optimize_input_error("optimize needs --source FILE; fix: name the kernel's source");
  }
  if (options.build_template.empty()) {
    throw optimize_input_error("optimize needs --build-template STR, e.g. \"nvcc -cubin "
                               "-arch=sm_90 gemm.cu -o {OUT}\"");
  }
  const auto kinds = proposer_kinds_of(options);
  auto curve = curve_of(options);
  const auto sources = read_source_files(options.sources);
  const auto devices = parse_devices(options.devices);
  const run_lease lease = take_out_lease(options);
  app_profile before;
  std::vector<std::string> skipped;
  const auto targets = options.app.empty() ? make_targets(options, sources)
                                           : make_app_targets(options, sources, before, skipped);
  for (const auto& line : skipped) {
    spdlog::warn("skipped: {}", line);
  }
  if (targets.empty()) {
    std::fprintf(stderr,
                 "rocm-perf optimize: none of the top %zu kernels is defined in the "
                 "sources given\n",
                 options.top);
    return 3;
  }
  optimize_journal journal(options.out);
  optimize_campaign campaign(options, std::move(curve), setup_of(kinds, targets));
  auto settings = settings_of(options, kinds);
  // As many candidates in the graph as there are compile workers: a batch builds at once.
  settings.max_in_flight = std::max<std::size_t>(4, default_compile_workers(options));
  const auto results =
      optimize_targets(targets, devices, settings, campaign, journal, options.out, stop);
  spdlog::info("builds: {} from the artifact cache, {} compiled", campaign.cache_hits(),
               campaign.cache_misses());
  campaign.stop();
  const nlohmann::json application =
      options.app.empty() ? nlohmann::json()
                          : application_report(options, before, skipped, results, stop);
  const auto report = write_optimize_report(options.out, results, application);
  const int exit = options.apply ? apply_changes(options, results) : 0;
  if (options.json) {
    std::cout << report.dump(2) << '\n';
  } else {
    print_summary(results, application, options.out);
  }
  if (stop) {
    return 130;
  }
  if (exit != 0) {
    return exit;
  }
  const bool measured = std::any_of(results.begin(), results.end(),
                                    [](const target_result& r) { return r.status != "failed"; });
  return measured ? 0 : 1;
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
