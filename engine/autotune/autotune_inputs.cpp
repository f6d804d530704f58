#include "engine/autotune/autotune_inputs.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <spdlog/spdlog.h>

#include "stages/search/candidate_key.hpp"
#include "stages/search/model_strategy.hpp"
#include "workers/capture/capture_directory.hpp"
#include "workers/compile/compile_worker.hpp"
#include "workers/compilers/argv_check.hpp"
#include "workers/compilers/compiler_rules.hpp"
#include "workers/compilers/toolchain_identity.hpp"
#include "workers/devices/nvidia_gpu.hpp"
#include "workers/lanes/recorded/landscape_file.hpp"
#include "workers/process/child_process.hpp"
#include "workers/protocol/endpoint_policy.hpp"
#include "workers/replay/replay_run.hpp"
#include "workers/tracers/cuda/cupti_recorder.hpp"
#include "workers/tracers/rocprofv3/rocprofv3_recorder.hpp"

namespace rpl::engine {

namespace {

/// Identifies the compiler (toolchain_identity.hpp: version banner and binary hash), so a
/// toolchain upgrade changes every key and remote workers with another one get none of its jobs.
/// A pinned identity wins; a compiler this host lacks and nobody pinned goes unchecked, to any
/// worker that has one of that name, and its name is the best key we have.
void identify(const std::string& compiler, const autotune_options& options, autotune_inputs& in) {
  const std::string name = std::filesystem::path(compiler).filename().string();
  if (const auto pinned = options.pinned_toolchains.find(name);
      pinned != options.pinned_toolchains.end()) {
    in.toolchains[compiler] = pinned->second;
    in.checked_toolchains.insert(compiler);
  } else if (const auto found = workers::identify_toolchain(compiler)) {
    in.toolchains[compiler] = found->id;
    in.checked_toolchains.insert(compiler);
  } else {
    in.toolchains[compiler] = compiler;
  }
}

void check_run_settings(const autotune_options& options) {
  if (options.runs == 0) {
    throw config_error("--runs 0: at least one measured run is needed; fix: --runs 5");
  }
  if (options.lanes == 0) {
    throw config_error("--lanes 0: at least one lane is needed; fix: --lanes 1");
  }
  if (!(options.timeout_s > 0.0)) {
    throw config_error("--timeout must be positive seconds; fix: --timeout 60");
  }
  if (options.worker_wait_s && !(*options.worker_wait_s > 0.0)) {
    std::ostringstream value;
    value << *options.worker_wait_s;
    throw config_error("--worker-wait " + value.str() +
                       ": expected a positive number of seconds to wait for a compile worker; "
                       "fix: --worker-wait 60, or leave it out to wait for ever");
  }
  if (!(options.stop_grace_s >= 0.0)) {
    throw config_error("stop grace must be zero or positive seconds; fix: 10");
  }
}

void parse_templates(const autotune_options& options, autotune_inputs& in) {
  std::set<std::string> names(in.space.names.begin(), in.space.names.end());
  try {
    in.build = stages::command_template::parse(options.build_template, "--build-template");
    in.cmd = stages::command_template::parse(in.cmd_template, "--cmd-template");
    auto build_known = names;
    build_known.insert("OUT");
    in.build->check(build_known);
    auto cmd_known = names;
    cmd_known.insert("BIN");
    in.cmd->check(cmd_known);
  } catch (const stages::template_error& error) {
    throw config_error(error.what());
  }
  const bool build_has_out = in.build->placeholders().count("OUT") != 0;
  if (in.cmd->placeholders().count("BIN") != 0 && !build_has_out) {
    throw config_error("--cmd-template uses {BIN} but --build-template never writes {OUT}; fix: "
                       "add -o {OUT} (or the compiler's output flag) to the build template");
  }
}

void read_sources(const autotune_options& options, autotune_inputs& in) {
  in.sources = read_source_files(options.sources);
  for (const auto& file : in.sources) {
    in.source_pairs.emplace_back(file.name, file.content);
  }
}

/// Every configuration's compiler must be allow-listed (the first word may itself be a
/// placeholder, {CXX}; config_error otherwise); each distinct one goes into in.toolchains, not yet
/// identified (identify_toolchains), with the files its arguments name. Returns whether any is
/// nvcc.
bool check_compilers(const autotune_options& options, autotune_inputs& in) {
  const auto allowed = options.allowed_compilers.empty()
                           ? workers::compile_worker_options{}.allowed_compilers
                           : options.allowed_compilers;
  bool uses_nvcc = false;
  for (const auto& config : in.space.configurations) {
    auto values = config.as_strings();
    values["OUT"] = "{OUT}";
    const auto argv = in.build->expand(values);
    if (argv.empty()) {
      throw config_error("--build-template expands to no command; fix: start it with a compiler");
    }
    if (!workers::compiler_allowed(argv[0], allowed)) {
      std::string list;
      for (const auto& name : allowed) {
        list += (list.empty() ? "" : " ") + name;
      }
      throw config_error("--build-template: compiler '" + argv[0] + "' is not allow-listed (" +
                         list + "); fix: use one of those, or pass --allow-compiler " +
                         std::filesystem::path(argv[0]).filename().string());
    }
    uses_nvcc = uses_nvcc || workers::compiler_rules_for(argv).name() == "nvcc";
    for (auto& path : workers::named_read_paths(argv))
      in.template_read_paths.insert(std::move(path));
    in.toolchains.emplace(argv[0], std::string());
  }
  return uses_nvcc;
}

/// --listen's authentication: CURVE keys, or --insecure for TCP beyond loopback.
void check_listen_security(const autotune_options& options, autotune_inputs& in) {
  if (options.curve_keys.empty() != options.allow_keys.empty())
    throw config_error(std::string(options.curve_keys.empty() ? "--allow-keys" : "--curve-keys") +
                       " without " +
                       (options.curve_keys.empty() ? "--curve-keys" : "--allow-keys") +
                       ": CURVE needs the engine's key pair and the workers' allow-list; fix: "
                       "pass both (rocm-perf keys generate DIR makes a pair)");
  if (!options.curve_keys.empty()) {
    if (options.listen.empty())
      throw config_error("--curve-keys without --listen: local workers use a private ipc:// "
                         "endpoint; fix: add --listen tcp://HOST:PORT for remote workers");
    if (options.insecure)
      throw config_error("--insecure with --curve-keys: choose one; fix: drop --insecure");
    try {
      workers::require_curve("--curve-keys");
      in.curve_server = workers::read_keypair(options.curve_keys);
      in.curve_allowed = workers::read_allow_list(options.allow_keys);
    } catch (const workers::curve_error& error) {
      throw config_error(error.what());
    }
    return;
  }
  // Without keys: an allow-list of transports (workers/protocol/endpoint_policy.hpp), so that
  // tcp (loopback included: other local users reach it), ws, abstract ipc and whatever else
  // ZeroMQ accepts need keys or --insecure.
  for (const auto& endpoint : options.listen) {
    if (options.insecure) {
      spdlog::warn("--listen {} with --insecure: any peer that reaches it can take jobs and send "
                   "results",
                   endpoint);
      continue;
    }
    const std::string why = workers::keyless_endpoint_refusal(
        endpoint, "--curve-keys DIR --allow-keys FILE (on each worker: --server-key)", true);
    if (!why.empty())
      throw config_error("--listen " + why);
  }
}

std::size_t worker_count(const autotune_options& options) {
  std::size_t workers = 1;
  if (options.compile_workers) {
    workers = *options.compile_workers;
  } else {
    workers = default_compile_workers(options.lanes);
  }
  if (workers == 0 && options.listen.empty()) {
    throw config_error("--compile-workers 0 without --listen: nothing would compile; fix: "
                       "--compile-workers 1, or --listen tcp://0.0.0.0:5555 for remote workers");
  }
  return workers;
}

/// Everything that defines the candidates and their measurement, hashed: --resume continues only
/// a run with the same fingerprint.
/// The search's own part of a fingerprint: strategy, seed, budget and runs, a line each.
std::string search_settings(const autotune_options& options) {
  std::ostringstream fp;
  fp << options.strategy << '\n'
     << options.seed << '\n'
     << (options.budget ? std::to_string(*options.budget) : "all") << '\n'
     << options.runs << '\n';
  // The model's settings, only where given: runs without them keep their fingerprints.
  if (options.seed_fraction)
    fp << "seed-fraction " << *options.seed_fraction << '\n';
  if (options.confirm_fraction)
    fp << "confirm-fraction " << *options.confirm_fraction << '\n';
  return fp.str();
}

std::string fingerprint(const autotune_options& options, const autotune_inputs& in) {
  std::ostringstream fp;
  fp << stages::content_hash(read_input_file(options.space_file, "--space")) << '\n'
     << options.build_template << '\n'
     << in.cmd_template << '\n'
     << search_settings(options) << options.warmup << '\n';
  // Runs of the timing backend with fixed sampling keep the fingerprint they always had, so their
  // databases still resume.
  if (in.lane_kind != "timing" || in.sampling) {
    fp << in.lane_kind << ' ' << options.kernel_regex << ' ' << options.warmup_dispatches << ' '
       << (in.sampling ? std::to_string(in.sampling->max_noise) : "fixed") << '\n';
  }
  if (!options.replay.empty()) {
    fp << "replay "
       << stages::content_hash(read_input_file(options.replay / "dispatch.json", "--replay"))
       << '\n';
  }
  if (!options.launch.empty()) {
    fp << stages::content_hash(read_input_file(options.launch, "--launch")) << '\n';
    // Only when off, so runs made before the screen existed keep their fingerprint.
    if (!options.static_screen) {
      fp << "no-static-screen\n";
    }
  }
  for (const auto& [name, content] : in.source_pairs) {
    fp << name << ' ' << stages::content_hash(content) << '\n';
  }
  return stages::content_hash(fp.str());
}

/// "all", "0,2" or "" (the first GPU) against the GPUs nvidia-smi lists.
std::vector<workers::nvidia_device> select_devices(const std::string& spec,
                                                   const std::string& why) {
  const auto gpus = workers::list_nvidia_gpus();
  if (gpus.empty()) {
    throw config_error(why + ": no NVIDIA GPU found (no /dev/nvidia0, or nvidia-smi lists none); "
                             "fix: run on a GPU host, or measure whole processes with --backend "
                             "timing");
  }
  if (spec.empty()) {
    return {gpus.front()};
  }
  if (spec == "all") {
    return gpus;
  }
  std::vector<workers::nvidia_device> chosen;
  std::stringstream list(spec);
  for (std::string item; std::getline(list, item, ',');) {
    const auto it = std::find_if(gpus.begin(), gpus.end(),
                                 [&](const auto& g) { return std::to_string(g.index) == item; });
    if (it == gpus.end()) {
      throw config_error("--devices " + spec + ": no GPU with index '" + item +
                         "' (this host has " + std::to_string(gpus.size()) +
                         "); fix: --devices all, or indices from "
                         "nvidia-smi -L");
    }
    chosen.push_back(*it);
  }
  return chosen;
}

/// One lane per device; candidates are compared within one device model only, so the devices must
/// be one model.
void check_one_model(const std::vector<workers::nvidia_device>& devices, const std::string& spec) {
  for (const auto& d : devices) {
    if (d.name != devices.front().name) {
      throw config_error("--devices " + spec + ": GPU " + std::to_string(devices.front().index) +
                         " is " + devices.front().name + " but GPU " + std::to_string(d.index) +
                         " is " + d.name +
                         "; candidates are only compared within one device "
                         "model; fix: list GPUs of one model");
    }
  }
}

void choose_lanes(const autotune_options& options, autotune_inputs& in) {
  const auto& b = options.backend;
  if (b != "timing" && b != "cuda" && b != "rocm" && b != "auto") {
    throw config_error("--backend " + b + ": unknown; fix: timing, cuda, rocm or auto");
  }
  if (!options.launch.empty() && b != "timing") {
    throw config_error("--launch and --backend " + b +
                       ": --launch measures the kernel in a kernel "
                       "lane, --backend times an application's kernels from its trace; fix: drop "
                       "one of them");
  }
  if (!options.replay.empty()) {
    if (!options.launch.empty() || (b != "timing" && b != "auto")) {
      throw config_error("--replay with " +
                         std::string(!options.launch.empty() ? "--launch" : "--backend " + b) +
                         ": --replay times each candidate on a captured dispatch; fix: drop one "
                         "of them");
    }
    try {
      const auto capture = workers::capture::load_capture(options.replay);
      if (capture.dispatch.backend != "cuda") {
        throw config_error("--replay " + options.replay.string() + ": a " +
                           capture.dispatch.backend +
                           " capture; only CUDA captures are replayed (fix: capture on CUDA)");
      }
    } catch (const stages::capture::capture_error& error) {
      throw config_error(std::string("--replay: ") + error.what());
    }
    if (!workers::replay::find_cuda_replay_program()) {
      throw config_error("--replay: rpl-replay-cuda was not found beside rocm-perf (or "
                         "RPL_REPLAY_CUDA); fix: build with CUDA (RPL_BUILD_CUDA=ON)");
    }
    in.lane_kind = "replay";
  } else if (!options.launch.empty()) {
    in.lane_kind = "kernel";
    try {
      in.launch = stages::load_launch_spec(options.launch);
      stages::check_launch_names(*in.launch, in.space.names);
    } catch (const stages::launch_spec_error& error) {
      throw config_error(error.what());
    }
  } else if (b == "auto") {
    in.lane_kind = workers::nvidia_gpu_present() ? "cuda" : "timing";
  } else {
    in.lane_kind = b;
  }
  if (in.lane_kind == "rocm") {
    if (!workers::find_rocprofv3({})) {
      throw config_error("--backend rocm: rocprofv3 was not found (PATH, $ROCPROFV3); fix: "
                         "install ROCm 7 (rocprofiler-sdk), or set ROCPROFV3");
    }
    if (options.devices == "all") {
      throw config_error("--devices all: AMD GPUs are not enumerated yet; fix: --devices 0,1");
    }
    std::stringstream list(options.devices.empty() ? std::string("0") : options.devices);
    for (std::string item; std::getline(list, item, ',');) {
      workers::nvidia_device d; // index only: the lane selects it by HIP_VISIBLE_DEVICES
      try {
        d.index = std::stoi(item);
      } catch (const std::exception&) {
        throw config_error("--devices " + options.devices + ": '" + item +
                           "' is not an index; "
                           "fix: --devices 0,1");
      }
      d.name = "AMD GPU " + item;
      in.devices.push_back(d);
    }
  }
  if (in.lane_kind == "kernel" || in.lane_kind == "cuda" || in.lane_kind == "replay") {
    const auto why = in.lane_kind == "kernel"   ? "--launch"
                     : in.lane_kind == "replay" ? "--replay"
                                                : "--backend cuda";
    in.devices = select_devices(options.devices, why);
    check_one_model(in.devices, options.devices);
    if (in.lane_kind == "cuda" && !workers::find_cupti_tracer({})) {
      throw config_error("--backend cuda: the CUPTI tracer library (librpl_cupti_tracer.so) was "
                         "not found; fix: build with CUDA (make build on a host with nvcc), or "
                         "set RPL_CUPTI_TRACER");
    }
  } else if (!options.devices.empty() && in.lane_kind == "timing") {
    throw config_error("--devices " + options.devices +
                       ": the timing backend measures whole "
                       "processes on CPU lanes; fix: --lanes N, or a GPU lane (--launch or "
                       "--backend cuda)");
  }
  if (in.lane_kind != "timing" || options.noise) {
    stages::sampling_target target;
    target.max_noise = options.noise.value_or(0.005);
    target.min_samples = std::max<std::size_t>(options.runs, 2);
    target.min_time_s = options.min_time_s;
    target.max_time_s = options.max_candidate_time_s;
    if (const auto problem = stages::check_sampling_target(target); !problem.empty()) {
      throw config_error("--noise/--min-time/--max-candidate-time: " + problem);
    }
    in.sampling = target;
  }
}

/// The --strategy over `space`; an unknown name is a config_error.
std::unique_ptr<stages::strategy> make_search_strategy(const autotune_options& options,
                                                       const stages::space& space) {
  const std::pair<const std::optional<double>*, const char*> model_flags[] = {
      {&options.seed_fraction, "--seed-fraction"},
      {&options.confirm_fraction, "--confirm-fraction"}};
  stages::model_options model;
  for (const auto& [value, flag] : model_flags) {
    if (!value->has_value())
      continue;
    if (options.strategy != "model")
      throw config_error(std::string(flag) + " applies to --strategy model only (the strategy is " +
                         options.strategy + "); fix: add --strategy model or drop " + flag);
    if (!(**value > 0 && **value < 1))
      throw config_error(std::string(flag) + " " + std::to_string(**value) +
                         ": must be a fraction between 0 and 1, e.g. 0.05");
  }
  if (options.seed_fraction)
    model.seed_fraction = *options.seed_fraction;
  if (options.confirm_fraction)
    model.confirm_fraction = *options.confirm_fraction;
  try {
    return stages::make_strategy(options.strategy, space.configurations, options.budget,
                                 options.seed, &model);
  } catch (const std::invalid_argument& error) {
    throw config_error(std::string("--strategy ") + options.strategy + ": " + error.what());
  }
}

/// --recorded: the landscape is the space, its measurements the lane's answers; the other inputs
/// of a real run make no sense beside it.
autotune_inputs validate_recorded(const autotune_options& options) {
  const std::pair<bool, const char*> conflicts[] = {
      {!options.space_file.empty(), "--space"},
      {!options.build_template.empty(), "--build-template"},
      {!options.cmd_template.empty(), "--cmd-template"},
      {!options.sources.empty(), "--source"},
      {!options.launch.empty(), "--launch"},
      {options.backend != "timing", "--backend"},
      {!options.devices.empty(), "--devices"},
      {options.noise.has_value(), "--noise"}};
  for (const auto& [given, flag] : conflicts)
    if (given)
      throw config_error(std::string("--recorded ") + options.recorded.string() + " with " + flag +
                         ": the recorded landscape is the space and answers every measurement; "
                         "fix: drop " +
                         flag);
  autotune_inputs in;
  std::shared_ptr<stages::landscape> landscape;
  try {
    landscape = std::make_shared<stages::landscape>(workers::load_landscape(options.recorded));
  } catch (const stages::landscape_error& error) {
    throw config_error(std::string("--recorded: ") + error.what());
  }
  in.space = landscape->as_space();
  std::string cmd = "recorded";
  for (const auto& name : landscape->parameters)
    cmd += " {" + name + "}";
  try {
    in.build = stages::command_template::parse("recorded", "--recorded");
    in.cmd = stages::command_template::parse(cmd, "--recorded");
  } catch (const stages::template_error& error) {
    throw config_error(std::string("--recorded ") + options.recorded.string() +
                       ": a parameter name cannot be a placeholder (" + error.what() +
                       "); fix: rename the parameter in the cache file");
  }
  const std::string content = stages::content_hash(read_input_file(options.recorded, "--recorded"));
  in.toolchains["recorded"] = "recorded landscape " + content;
  in.strategy = make_search_strategy(options, in.space);
  in.lane_kind = "recorded";
  in.workers = 0;
  in.fingerprint = stages::content_hash("recorded " + content + '\n' + search_settings(options));
  in.landscape = std::move(landscape);
  return in;
}

} // namespace

autotune_inputs validate_inputs(const autotune_options& options, bool identify) {
  if (!options.recorded.empty())
    return validate_recorded(options);
  for (const auto& [value, flag] : {std::pair{options.space_file.string(), "--space"},
                                    std::pair{options.build_template, "--build-template"}})
    if (value.empty())
      throw config_error(std::string(flag) +
                         " is required; fix: pass --space FILE and --build-template STR (with "
                         "--cmd-template STR, --launch FILE or --replay DIR), or --recorded FILE "
                         "to search a recorded landscape");
  autotune_inputs in;
  in.cmd_template = options.cmd_template;
  if (in.cmd_template.empty()) {
    // The kernel and replay lanes run no command: they read the code object the template names.
    if (options.launch.empty() && options.replay.empty())
      throw config_error(
          "--cmd-template is required: the " +
          std::string(options.backend == "timing" ? "timing backend"
                                                  : "--backend " + options.backend) +
          " runs each built candidate as a command; fix: pass --cmd-template '{BIN} ARGS' ({BIN} "
          "is the built binary), or --launch FILE to launch a kernel from its code object "
          "(docs/launch-file.md)");
    in.cmd_template = "{BIN}";
  }
  check_run_settings(options);
  try {
    in.space = stages::load_space(options.space_file);
  } catch (const stages::space_error& error) {
    throw config_error(error.what());
  }
  parse_templates(options, in);
  read_sources(options, in);
  spdlog::debug("autotune: space, templates and sources read");
  in.uses_nvcc = check_compilers(options, in);
  if (identify)
    identify_toolchains(options, in);
  in.strategy = make_search_strategy(options, in.space);
  choose_lanes(options, in);
  spdlog::debug("autotune: lanes chosen");
  in.workers = worker_count(options);
  check_listen_security(options, in);
  in.fingerprint = fingerprint(options, in);
  return in;
}

void identify_toolchains(const autotune_options& options, autotune_inputs& in) {
  for (auto& [compiler, id] : in.toolchains)
    if (id.empty())
      identify(compiler, options, in);
  // Only a GPU toolchain needs the local GPU's architecture (and so a GPU query at all).
  if (in.uses_nvcc)
    in.nvidia_arch = workers::local_nvidia_arch();
  spdlog::debug("autotune: compilers identified");
}

std::size_t default_compile_workers(std::size_t lanes) {
  const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
  return cores > lanes ? cores - lanes : 1;
}

} // namespace rpl::engine
