#include "engine/optimize/run_optimize.hpp"

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

#include "engine/broker/broker.hpp"
#include "engine/broker/local_workers.hpp"
#include "engine/broker/private_dir.hpp"
#include "engine/optimize/app_mode.hpp"
#include "engine/optimize/kernel_optimizer.hpp"
#include "engine/optimize/optimize_journal.hpp"
#include "engine/optimize/optimize_report.hpp"
#include "engine/store/run_lease.hpp"
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

std::string read_text(const fs::path& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw optimize_input_error(what + " " + path.string() +
                               ": cannot be read; fix: name an existing, readable file");
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string language_of(const fs::path& source, const std::vector<std::string>& argv) {
  if (source.extension() == ".hip" ||
      (!argv.empty() && fs::path(argv[0]).filename().string().find("hipcc") == 0)) {
    return "hip";
  }
  return "cuda";
}

std::vector<std::string> parse_flags(const std::vector<std::string>& argv) {
  std::vector<std::string> flags;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string& w = argv[i];
    if ((w == "-D" || w == "-I") && i + 1 < argv.size()) {
      flags.push_back(w + argv[++i]);
    } else if (w.rfind("-D", 0) == 0 || w.rfind("-I", 0) == 0 || w.rfind("-std=", 0) == 0) {
      flags.push_back(w);
    }
  }
  return flags;
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
    t.language = language_of(k.source, argv);
    t.build_argv = argv;
    t.compile_flags = parse_flags(argv);
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
  t.compile_flags = parse_flags(t.build_argv);
  std::string why;
  if (!workers::libclang_available(why)) {
    throw std::runtime_error("the source guard needs libclang: " + why);
  }
  std::string found_in;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    std::string error;
    const auto lang = language_of(options.sources[i], t.build_argv);
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
      it = texts.emplace(r.source_path, read_text(r.source_path, "--source")).first;
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

/// A blocking call on the broker: submit, then wait for the completion callback.
template <class Reply, class Submit> Reply call_broker(Submit submit) {
  auto promise = std::make_shared<std::promise<Reply>>();
  auto future = promise->get_future();
  submit([promise](const Reply& reply) { promise->set_value(reply); });
  return future.get();
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
  std::vector<std::string> kinds;
  if (options.proposer == "rule" || options.proposer == "both") {
    kinds.push_back("rule");
  }
  if (options.proposer == "llm" || options.proposer == "both") {
    kinds.push_back("llm");
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
  std::optional<broker_curve> curve;
  if (!options.listen.empty() || !options.curve_keys.empty() || !options.allow_keys.empty()) {
    if (options.listen.empty() || options.curve_keys.empty() || options.allow_keys.empty()) {
      throw optimize_input_error(
          "--listen, --curve-keys and --allow-keys go together: remote proposers and compile "
          "workers are admitted only with CURVE keys; fix: rocm-perf keys generate DIR (here and "
          "on each worker), then --listen tcp://0.0.0.0:5556 --curve-keys DIR --allow-keys FILE");
    }
    try {
      workers::require_curve("--curve-keys");
      curve = broker_curve{workers::read_keypair(options.curve_keys),
                           workers::read_allow_list(options.allow_keys), options.listen};
    } catch (const workers::curve_error& error) {
      throw optimize_input_error(error.what());
    }
  }
  if (kinds.empty()) {
    throw optimize_input_error("--proposer " + options.proposer + ": expected rule, llm or both");
  }
  std::vector<messages::source_file> sources;
  std::set<std::string> names;
  for (const auto& path : options.sources) {
    messages::source_file file;
    file.name = path.filename().string();
    file.content = read_text(path, "--source");
    if (!names.insert(file.name).second) {
      throw optimize_input_error("--source " + path.string() + ": another source is also named " +
                                 file.name + "; fix: rename one (sources are shipped by name)");
    }
    sources.push_back(std::move(file));
  }
  const auto devices = parse_devices(options.devices);
  // One run at a time in --out: a second one would measure the same attempts and overwrite the
  // journal and the report (store/run_lease.hpp). Before anything is written there.
  std::optional<run_lease> lease;
  {
    std::error_code ec;
    std::filesystem::create_directories(options.out, ec);
    try {
      lease.emplace(run_lease::acquire(options.out / "optimize.lease",
                                       options.resume ? "rocm-perf optimize --resume"
                                                      : "rocm-perf optimize"));
    } catch (const lease_held_error& error) {
      const auto& holder = error.holder();
      throw optimize_input_error(
          "--out " + options.out.string() + " is in use by another optimize run: it is " +
          error.what() + "; fix: wait until that run ends, or stop it" +
          (holder ? " (kill -INT " + std::to_string(holder->pid) + " on " + holder->host + ")"
                  : std::string()) +
          ", or choose another --out");
    } catch (const std::runtime_error& error) {
      throw optimize_input_error("--out " + options.out.string() + ": " + error.what());
    }
  }
  app_profile before;
  std::vector<std::string> skipped;
  auto targets = options.app.empty() ? make_targets(options, sources)
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
  private_dir ipc;
  broker_config bconfig;
  bconfig.bind_endpoints.push_back("ipc://" + (ipc.path() / "broker.ipc").string());
  bconfig.curve = curve;
  broker engine_broker(bconfig);
  try {
    engine_broker.start();
  } catch (const zmq::error_t& error) {
    throw optimize_input_error(std::string("--listen: cannot bind: ") + error.what() +
                               "; fix: a free port on an address of this host");
  }
  // As bound: a wildcard port (tcp://0.0.0.0:*) is named with the port the system chose.
  std::string remote_endpoints;
  for (std::size_t i = bconfig.bind_endpoints.size(); i < engine_broker.bound_endpoints().size();
       ++i) {
    remote_endpoints += (remote_endpoints.empty() ? "" : ", ") + engine_broker.bound_endpoints()[i];
  }
  if (curve) {
    spdlog::info("listening on {} (CURVE) for remote proposers and compile workers whose keys "
                 "{} lists",
                 remote_endpoints, options.allow_keys.string());
  }
  const fs::path self = options.worker_executable.empty() ? fs::read_symlink("/proc/self/exe")
                                                          : options.worker_executable;
  local_workers_config compile_config;
  compile_config.executable = self;
  // An absolute compiler path in the template is this user's own choice: local workers run it.
  std::vector<std::string> compiler_paths;
  for (const auto& target : targets)
    if (!target.build_argv.empty() && fs::path(target.build_argv.front()).is_absolute())
      compiler_paths.push_back(target.build_argv.front());
  compile_config.allowed_compilers = with_compiler_paths({}, compiler_paths);
  std::set<std::string> read_paths;
  for (const auto& target : targets)
    for (auto& path : workers::named_read_paths(target.build_argv))
      read_paths.insert(std::move(path));
  compile_config.allowed_paths.assign(read_paths.begin(), read_paths.end());
  compile_config.endpoint = bconfig.bind_endpoints.front();
  compile_config.count =
      options.compile_workers > 0
          ? options.compile_workers
          : std::min<std::size_t>(2, std::max(1u, std::thread::hardware_concurrency()));
  local_workers compilers(compile_config);
  compilers.start();
  std::vector<std::unique_ptr<local_workers>> proposer_pools;
  for (const auto& kind : kinds) {
    if (kind == "llm" && options.llm_endpoint.empty()) {
      spdlog::info("no --llm-endpoint: LLM proposals come from remote `worker propose --kind llm` "
                   "processes connecting to {}",
                   remote_endpoints);
      continue;
    }
    local_workers_config config = compile_config;
    config.count = 1;
    config.command = {"worker", "propose", "--kind", kind};
    if (kind == "llm") {
      config.command.insert(config.command.end(),
                            {"--llm-endpoint", options.llm_endpoint, "--llm-model",
                             options.llm_model, "--llm-timeout-s",
                             std::to_string(options.llm_timeout_s)});
    }
    proposer_pools.push_back(std::make_unique<local_workers>(config));
    proposer_pools.back()->start();
  }
  engine_broker.set_tick([&] {
    compilers.supervise();
    for (auto& pool : proposer_pools) {
      pool->supervise();
    }
  });

  const auto run_id = "optimize-" + std::to_string(::getpid());
  optimizer_services services;
  services.compile = [&](const std::vector<messages::source_file>& files,
                         const std::vector<std::string>& argv) {
    messages::compile_request request;
    request.sources = files;
    request.argv = argv;
    request.deadline_ms = 600000;
    return call_broker<messages::compile_reply>(
        [&](auto done) { engine_broker.submit(run_id, request, std::move(done)); });
  };
  services.propose = [&](const std::string& kind, const messages::propose_request& request) {
    return call_broker<messages::propose_reply>(
        [&](auto done) { engine_broker.submit_proposal(run_id, kind, request, std::move(done)); });
  };

  optimizer_settings settings;
  settings.proposers = kinds;
  settings.iterations = options.iterations;
  settings.rounds = options.rounds;
  settings.runs_per_round = options.runs_per_round;
  settings.tune_budget = options.tune_budget;
  settings.noise_target = options.noise_target;
  settings.seed = options.seed;
  settings.artifact_dir = options.out / "artifacts";
  settings.resume = options.resume;
  settings.device_arch = options.device_arch;
  // The engine waits a little longer than the proposer's own deadline, which answers first.
  settings.propose_timeout_ms = (options.llm_timeout_s + 15) * 1000;
  if (options.time_budget.count() > 0) {
    settings.deadline = std::chrono::steady_clock::now() + options.time_budget;
  }

  // One lane per device, one thread per lane; targets dealt out round-robin.
  std::vector<target_result> results(targets.size());
  std::vector<std::thread> threads;
  const auto run_device = [&](std::size_t d) {
    workers::kernel_lane_options lane_options;
    lane_options.name = "gpu" + std::to_string(devices[d]);
    lane_options.device = devices[d];
    lane_options.program = workers::default_kernel_lane_program();
    workers::kernel_lane kernel_lane(lane_options);
    for (std::size_t i = d; i < targets.size(); i += devices.size()) {
      std::unique_ptr<workers::replay_lane> replay;
      if (!targets[i].replay_dir.empty()) {
        workers::replay_lane_options r;
        r.name = lane_options.name;
        r.capture = targets[i].replay_dir;
        r.program = *workers::replay::find_cuda_replay_program();
        r.device = devices[d];
        replay = std::make_unique<workers::replay_lane>(std::move(r));
      }
      workers::lane_backend& lane =
          replay ? static_cast<workers::lane_backend&>(*replay) : kernel_lane;
      optimizer_services local = services;
      local.parse = [&, i](const std::string& text,
                           std::string& error) -> std::optional<stages::optimize::source_model> {
        auto model = workers::parse_source(text, targets[i].source_path.filename().string(),
                                           targets[i].language, targets[i].compile_flags, error);
        if (!error.empty()) {
          return std::nullopt;
        }
        return model;
      };
      results[i] = optimize_kernel(targets[i], settings, local, lane, journal, stop);
    }
  };
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
  // The broker first: its tick supervises the workers and would restart them as they stop.
  engine_broker.stop();
  for (auto& pool : proposer_pools) {
    pool->stop();
  }
  compilers.stop();

  nlohmann::json application;
  if (!options.app.empty()) {
    application = {{"command", options.app},
                   {"skipped", skipped},
                   {"before",
                    {{"gpu_time_ns", before.gpu_time_ns},
                     {"critical_path_ns", before.critical_path_ns},
                     {"summary", before.summary}}}};
    if (!options.app_build.empty() && !stop) {
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
    }
  }
  const auto report = write_optimize_report(options.out, results, application);
  int exit = 0;
  std::size_t measured = 0;
  for (const auto& r : results) {
    measured += r.status != "failed" ? 1 : 0;
  }
  if (options.apply) {
    std::vector<workers::file_change> changes;
    for (const auto& r : results) {
      if (r.status == "improved") {
        changes.push_back(
            {fs::absolute(r.source_path), read_text(r.source_path, "--source"), r.best_source});
      }
    }
    if (!changes.empty()) {
      const auto applied = workers::apply_with_backup(changes, options.out / "backup");
      if (!applied.ok) {
        std::fprintf(stderr, "rocm-perf optimize: --apply: %s\n", applied.error.c_str());
        exit = 1;
      } else {
        std::fprintf(stderr,
                     "rocm-perf optimize: applied %zu accepted change(s); the originals are in "
                     "%s; undo with: rocm-perf optimize --rollback %s\n",
                     changes.size(), (options.out / "backup").c_str(), options.out.c_str());
      }
    }
  }
  if (options.json) {
    std::cout << report.dump(2) << '\n';
  } else {
    std::cout << optimize_summary_text(results, options.out);
    if (!application.is_null()) {
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
  }
  if (stop) {
    return 130;
  }
  if (exit != 0) {
    return exit;
  }
  return measured == 0 ? 1 : 0;
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
