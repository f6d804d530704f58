#include "engine/autotune.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include <spdlog/spdlog.h>
#include <tbb/flow_graph.h>

#include "engine/broker/local_workers.hpp"
#include "messages/codec.hpp"
#include "stages/search/acceptance.hpp"
#include "stages/search/candidate_key.hpp"
#include "stages/search/command_template.hpp"
#include "stages/search/space.hpp"
#include "stages/search/strategy.hpp"
#include "workers/process/child_process.hpp"
#include "workers/compile/compile_worker.hpp"
#include "workers/compilers/nvcc/nvcc_resource_usage.hpp"
#include "workers/lanes/timing/timing_lane.hpp"

namespace rpl::engine {

namespace {

using clock_type = std::chrono::steady_clock;
namespace flow = tbb::flow;

std::string read_file(const std::filesystem::path& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw config_error(what + " " + path.string() + ": cannot read the file (" +
                       std::strerror(errno) + "); fix: check the path");
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t pos = text.find(from); pos != std::string::npos;
       pos = text.find(from, pos + to.size())) {
    text.replace(pos, from.size(), to);
  }
  return text;
}

/// Identifies the compiler by its `--version` banner, so a toolchain upgrade changes every key.
std::string toolchain_id(const std::string& compiler) {
  workers::child_options options;
  options.argv = {compiler, "--version"};
  options.max_output_bytes = 4096;
  const auto outcome = workers::run_child(options, std::chrono::milliseconds(10000));
  if (!outcome.launched || outcome.exit_code != 0) {
    // The compiler may exist only on remote workers; its name is then the best identity we have.
    return compiler;
  }
  const auto first_line = outcome.output.substr(0, outcome.output.find('\n'));
  return compiler + " " + first_line;
}

/// The compute capability of this host's first NVIDIA GPU as "sm_XY", or empty without one. Asks
/// nvidia-smi first, then the CUDA toolkit's own device query (what `nvcc -arch=native` uses), since
/// some drivers' nvidia-smi cannot report compute_cap.
std::string local_nvidia_arch() {
  auto first_number = [](const std::string& text) {
    std::string digits;
    for (char c : text) {
      if (std::isdigit(static_cast<unsigned char>(c)) != 0) {
        digits += c;
      } else if (c == '.') {
        continue;
      } else if (!digits.empty()) {
        break;
      }
    }
    return digits;
  };
  std::error_code ec;
  if (!std::filesystem::exists("/dev/nvidia0", ec) && !std::filesystem::exists("/proc/driver/nvidia", ec)) {
    return {};
  }
  std::vector<std::vector<std::string>> queries = {
      {"nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"}};
  for (const char* dir : {"/usr/local/cuda/bin", "/usr/bin"}) {
    const auto tool = std::filesystem::path(dir) / "__nvcc_device_query";
    if (std::filesystem::exists(tool, ec)) {
      queries.push_back({tool.string()});
    }
  }
  for (const auto& argv : queries) {
    workers::child_options options;
    options.argv = argv;
    options.max_output_bytes = 4096;
    // The first query on a freshly booted host can take seconds while the driver initialises.
    const auto outcome = workers::run_child(options, std::chrono::milliseconds(30000));
    if (!outcome.succeeded()) {
      continue;
    }
    const auto cap = first_number(outcome.output);
    if (cap.size() >= 2 && cap.size() <= 3) {
      return "sm_" + cap;
    }
  }
  return {};
}

std::string make_run_id() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  std::random_device device;
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "%06x", device() & 0xffffffu);
  return std::string("run-") + stamp + "-" + suffix;
}

/// One lane: a thread that measures one candidate at a time (exactly one measurement per device).
class lane {
public:
  using done_fn = std::function<void(const candidate_ptr&)>;
  /// `cpu` >= 0 pins the lane thread, and so every process it starts, to that CPU.
  lane(std::string name, int cpu) : name_(std::move(name)), cpu_(cpu), thread_([this] { loop(); }) {}
  ~lane() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    thread_.join();
  }
  void push(candidate_ptr c, messages::measure_request request, done_fn done) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back({std::move(c), std::move(request), std::move(done)});
      ++outstanding_;
    }
    ready_.notify_one();
  }
  std::size_t outstanding() const { return outstanding_.load(); }
  const std::string& name() const { return name_; }

private:
  struct item {
    candidate_ptr candidate;
    messages::measure_request request;
    done_fn done;
  };
  void loop() {
    if (cpu_ >= 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu_, &set);
      pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    }
    while (true) {
      item next;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) {
          return;
        }
        next = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        next.candidate->measure = workers::run_timing_measurement(next.request, name_);
      } catch (const std::exception& error) {
        next.candidate->measure.status = messages::measure_status::launch_failed;
        next.candidate->measure.reason = std::string("lane error: ") + error.what();
      }
      --outstanding_;
      next.done(next.candidate);
    }
  }

  std::string name_;
  int cpu_ = -1;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<item> queue_;
  bool stopping_ = false;
  std::atomic<std::size_t> outstanding_{0};
  std::thread thread_;
};

class autotune_job {
public:
  autotune_job(const autotune_options& options,
               const std::function<void(const autotune_progress&)>& on_progress,
               const std::atomic<bool>& stop)
      : options_(options), on_progress_(on_progress), stop_(stop) {}

  autotune_result run();

private:
  void validate();
  void open_store();
  candidate_ptr next_candidate();
  void on_compiled(const candidate_ptr& c, const messages::compile_reply& reply);
  messages::compile_request make_request(const candidate_state& c) const;
  void report(const candidate_state& c);

  const autotune_options& options_;
  const std::function<void(const autotune_progress&)>& on_progress_;
  const std::atomic<bool>& stop_;

  stages::space space_;
  std::optional<stages::command_template> build_;
  std::optional<stages::command_template> cmd_;
  std::vector<messages::source_file> sources_;
  std::vector<std::pair<std::string, std::string>> source_pairs_;
  std::map<std::string, std::string> toolchains_;
  std::string nvidia_arch_;  ///< this host's GPU, for nvcc builds that name no architecture
  std::unique_ptr<stages::strategy> strategy_;
  std::size_t workers_ = 1;
  std::string fingerprint_;
  bool build_has_out_ = false;

  std::unique_ptr<results_store> store_;
  std::filesystem::path artifacts_dir_;
  std::string run_id_;
  std::unordered_map<std::string, stored_candidate> completed_;
  std::unordered_set<std::string> seen_keys_;
  std::optional<stages::incumbent> best_;
  std::optional<stored_candidate> best_row_;
  autotune_counts counts_;  // store node only
  // next_candidate() runs in the feedback node while the store node reads the counts.
  std::atomic<std::size_t> resumed_{0};
  std::atomic<std::size_t> duplicates_{0};
  std::int64_t sum_compile_ns_ = 0;
  std::int64_t sum_run_ns_ = 0;
  clock_type::time_point started_;
  std::atomic<bool> fatal_{false};
  std::string fatal_error_;
};

void autotune_job::validate() {
  if (options_.runs == 0) {
    throw config_error("--runs 0: at least one measured run is needed; fix: --runs 5");
  }
  if (options_.lanes == 0) {
    throw config_error("--lanes 0: at least one lane is needed; fix: --lanes 1");
  }
  if (!(options_.timeout_s > 0.0)) {
    throw config_error("--timeout must be positive seconds; fix: --timeout 60");
  }
  try {
    space_ = stages::load_space(options_.space_file);
  } catch (const stages::space_error& error) {
    throw config_error(error.what());
  }
  std::set<std::string> names(space_.names.begin(), space_.names.end());
  try {
    build_ = stages::command_template::parse(options_.build_template, "--build-template");
    cmd_ = stages::command_template::parse(options_.cmd_template, "--cmd-template");
    auto build_known = names;
    build_known.insert("OUT");
    build_->check(build_known);
    auto cmd_known = names;
    cmd_known.insert("BIN");
    cmd_->check(cmd_known);
  } catch (const stages::template_error& error) {
    throw config_error(error.what());
  }
  build_has_out_ = build_->placeholders().count("OUT") != 0;
  if (cmd_->placeholders().count("BIN") != 0 && !build_has_out_) {
    throw config_error("--cmd-template uses {BIN} but --build-template never writes {OUT}; fix: "
                       "add -o {OUT} (or the compiler's output flag) to the build template");
  }
  std::set<std::string> source_names;
  for (const auto& path : options_.sources) {
    messages::source_file file;
    file.name = path.filename().string();
    file.content = read_file(path, "--source");
    if (!source_names.insert(file.name).second) {
      throw config_error("--source " + path.string() + ": another source is also named " +
                         file.name + "; fix: rename one of them (sources are shipped by file name)");
    }
    source_pairs_.emplace_back(file.name, file.content);
    sources_.push_back(std::move(file));
  }
  nvidia_arch_ = local_nvidia_arch();
  const auto allowed = options_.allowed_compilers.empty()
                           ? workers::compile_worker_options{}.allowed_compilers
                           : options_.allowed_compilers;
  // The first word may itself be a placeholder ({CXX}); check every configuration's compiler.
  for (const auto& config : space_.configurations) {
    auto values = config.as_strings();
    values["OUT"] = "{OUT}";
    const auto argv = build_->expand(values);
    if (argv.empty()) {
      throw config_error("--build-template expands to no command; fix: start it with a compiler");
    }
    if (!workers::compiler_allowed(argv[0], allowed)) {
      std::string list;
      for (const auto& name : allowed) {
        list += (list.empty() ? "" : " ") + name;
      }
      throw config_error("--build-template: compiler '" + argv[0] + "' is not allow-listed (" + list +
                         "); fix: use one of those, or pass --allow-compiler " +
                         std::filesystem::path(argv[0]).filename().string());
    }
    if (toolchains_.count(argv[0]) == 0) {
      toolchains_[argv[0]] = toolchain_id(argv[0]);
    }
  }
  try {
    strategy_ = stages::make_strategy(options_.strategy, space_.configurations.size(),
                                      options_.budget, options_.seed);
  } catch (const std::invalid_argument& error) {
    throw config_error(std::string("--strategy ") + options_.strategy + ": " + error.what());
  }
  if (options_.compile_workers) {
    workers_ = *options_.compile_workers;
  } else {
    const auto cores = std::max(1u, std::thread::hardware_concurrency());
    workers_ = cores > options_.lanes ? cores - options_.lanes : 1;
  }
  if (workers_ == 0 && options_.listen.empty()) {
    throw config_error("--compile-workers 0 without --listen: nothing would compile; fix: "
                       "--compile-workers 1, or --listen tcp://0.0.0.0:5555 for remote workers");
  }
  std::ostringstream fp;
  fp << stages::content_hash(read_file(options_.space_file, "--space")) << '\n'
     << options_.build_template << '\n'
     << options_.cmd_template << '\n'
     << options_.strategy << '\n'
     << options_.seed << '\n'
     << (options_.budget ? std::to_string(*options_.budget) : "all") << '\n'
     << options_.runs << '\n'
     << options_.warmup << '\n';
  for (const auto& [name, content] : source_pairs_) {
    fp << name << ' ' << stages::content_hash(content) << '\n';
  }
  fingerprint_ = stages::content_hash(fp.str());
}

void autotune_job::open_store() {
  if (options_.resume && !std::filesystem::exists(options_.db)) {
    throw config_error("--resume: " + options_.db.string() +
                       " does not exist, so there is no run to continue; fix: drop --resume to "
                       "start a new run, or point --db at the database of the earlier run");
  }
  store_ = std::make_unique<results_store>(options_.db);
  artifacts_dir_ = options_.db;
  artifacts_dir_ += ".artifacts";
  std::error_code ec;
  std::filesystem::create_directories(artifacts_dir_, ec);
  if (ec) {
    throw config_error("--db " + options_.db.string() + ": cannot create the artifact folder " +
                       artifacts_dir_.string() + ": " + ec.message() + "; fix: choose a writable --db");
  }
  if (options_.resume) {
    auto run = store_->find_run(fingerprint_);
    if (!run) {
      throw config_error("--resume: " + options_.db.string() +
                         " holds no run with this space, templates, sources, strategy, seed, "
                         "budget, runs and warm-up; fix: run again with the same arguments, or "
                         "drop --resume to start a new run");
    }
    run_id_ = run->run_id;
    // The incumbent is the best key named by the last stored verdict.
    std::string best_key;
    for (auto& row : store_->candidates(run_id_)) {
      if (!row.best_key.empty()) {
        best_key = row.best_key;
      }
      completed_.emplace(row.key, std::move(row));
    }
    if (auto it = completed_.find(best_key); it != completed_.end()) {
      best_ = stages::incumbent{best_key, it->second.stats};
      best_row_ = it->second;
    }
    store_->set_run_status(run_id_, "running");
    spdlog::info("resuming {} in {}: {} candidates already complete", run_id_,
                 options_.db.string(), completed_.size());
  } else {
    run_record run;
    run.run_id = make_run_id();
    run.fingerprint = fingerprint_;
    run.status = "running";
    run.space_file = options_.space_file.string();
    run.strategy = options_.strategy;
    run.seed = options_.seed;
    run.budget = options_.budget ? static_cast<std::int64_t>(*options_.budget) : -1;
    run.planned = strategy_->planned();
    run.settings = {{"build_template", options_.build_template},
                    {"cmd_template", options_.cmd_template},
                    {"runs", options_.runs},
                    {"warmup", options_.warmup},
                    {"timeout_s", options_.timeout_s},
                    {"lanes", options_.lanes},
                    {"compile_workers", workers_}};
    store_->create_run(run);
    run_id_ = run.run_id;
  }
}

candidate_ptr autotune_job::next_candidate() {
  while (!stop_ && !fatal_) {
    const auto index = strategy_->next();
    if (!index) {
      return nullptr;
    }
    auto c = std::make_shared<candidate_state>();
    c->space_index = *index;
    c->config = space_.configurations[*index];
    auto values = c->config.as_strings();
    values["OUT"] = "{OUT}";
    values["BIN"] = "{BIN}";
    try {
      c->build_argv = build_->expand(values);
      if (!nvidia_arch_.empty() && workers::nvcc_names_no_architecture(c->build_argv)) {
        c->build_argv.push_back("-arch=" + nvidia_arch_);
      }
      c->run_argv = cmd_->expand(values);
    } catch (const std::exception& error) {
      spdlog::error("candidate {}: {}", *index, error.what());
      continue;
    }
    stages::key_inputs inputs;
    inputs.sources = source_pairs_;
    inputs.build_argv = c->build_argv;
    inputs.toolchain_id = toolchains_.at(c->build_argv[0]);
    inputs.run_argv = c->run_argv;
    for (const auto& [name, value] : c->config.params) {
      inputs.params.emplace_back(name, stages::to_string(value));
    }
    c->key = stages::candidate_key(inputs);
    if (auto it = completed_.find(c->key); it != completed_.end()) {
      ++resumed_;
      messages::verdict v;
      v.candidate_key = c->key;
      v.decision = it->second.status == "ok" ? messages::verdict_kind::same
                                             : messages::verdict_kind::invalid;
      v.reason = "completed in an earlier session";
      strategy_->feedback(*index, v);
      continue;
    }
    if (!seen_keys_.insert(c->key).second) {
      ++duplicates_;
      continue;
    }
    c->submitted_at = clock_type::now();
    return c;
  }
  return nullptr;
}

messages::compile_request autotune_job::make_request(const candidate_state& c) const {
  messages::compile_request request;
  request.sources = sources_;
  request.argv = c.build_argv;
  request.toolchain_id = toolchains_.at(c.build_argv[0]);
  request.deadline_ms = static_cast<std::uint32_t>(options_.compile_timeout_s * 1000.0);
  return request;
}

void autotune_job::on_compiled(const candidate_ptr& c, const messages::compile_reply& reply) {
  c->compile = reply;
  c->compile.artifact.clear();
  c->compile.artifact.shrink_to_fit();
  if (reply.status != messages::compile_status::ok) {
    return;
  }
  if (!reply.has_artifact) {
    return;
  }
  const std::string_view bytes(reply.artifact.data(), reply.artifact.size());
  c->artifact_hash = stages::content_hash(bytes);
  c->artifact_path = artifacts_dir_ / c->artifact_hash;
  std::error_code ec;
  if (std::filesystem::exists(c->artifact_path, ec)) {
    return;
  }
  // Write-then-rename: a reader (or a crash) never sees half an artifact.
  auto temporary = c->artifact_path;
  temporary += ".tmp" + std::to_string(getpid()) + "-" + c->key.substr(0, 8);
  {
    std::ofstream out(temporary, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      c->compile.status = messages::compile_status::internal_error;
      c->compile.error = "cannot write the artifact to " + temporary.string();
      return;
    }
  }
  ::chmod(temporary.c_str(), 0755);
  std::filesystem::rename(temporary, c->artifact_path, ec);
  if (ec) {
    c->compile.status = messages::compile_status::internal_error;
    c->compile.error = "cannot store the artifact: " + ec.message();
  }
}

void autotune_job::report(const candidate_state& c) {
  if (!on_progress_) {
    return;
  }
  autotune_progress progress;
  progress.candidate = &c;
  progress.counts = counts_;
  progress.counts.resumed = resumed_;
  progress.counts.duplicates = duplicates_;
  progress.best = best_row_;
  progress.elapsed = clock_type::now() - started_;
  on_progress_(progress);
}

/// The first line that reads like a compiler diagnostic, else the first line.
std::string compiler_summary(const std::string& output) {
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("error") != std::string::npos) {
      return workers::first_output_line(line);
    }
  }
  return workers::first_output_line(output);
}

autotune_result autotune_job::run() {
  validate();
  open_store();
  started_ = clock_type::now();
  counts_.planned = strategy_->planned();

  // The broker's ipc endpoint lives in a private folder that is removed at the end.
  char dir_template[] = "/tmp/rocm-perf-XXXXXX";
  if (mkdtemp(dir_template) == nullptr) {
    throw config_error("cannot create a temporary folder under /tmp for the broker socket");
  }
  const std::filesystem::path ipc_dir = dir_template;
  broker_config bconfig;
  bconfig.bind_endpoints.push_back("ipc://" + (ipc_dir / "broker.ipc").string());
  for (const auto& endpoint : options_.listen) {
    bconfig.bind_endpoints.push_back(endpoint);
  }
  bconfig.heartbeat = options_.heartbeat;
  bconfig.liveness = options_.liveness;
  broker compile_broker(bconfig);
  try {
    compile_broker.start();
  } catch (const zmq::error_t& error) {
    std::filesystem::remove_all(ipc_dir);
    store_->set_run_status(run_id_, "failed");
    throw config_error(std::string("--listen: cannot bind: ") + error.what() +
                       "; fix: use a free port and an address of this host, e.g. "
                       "tcp://0.0.0.0:5555");
  }

  local_workers_config wconfig;
  wconfig.executable = options_.worker_executable.empty()
                           ? std::filesystem::read_symlink("/proc/self/exe")
                           : options_.worker_executable;
  wconfig.endpoint = bconfig.bind_endpoints.front();
  wconfig.count = workers_;
  wconfig.heartbeat = options_.heartbeat;
  wconfig.liveness = options_.liveness;
  wconfig.allowed_compilers = options_.allowed_compilers;
  // Measurement keeps CPUs to itself when there are enough: lane k runs on the k-th CPU from the
  // end, the compile workers (and their compilers) on the rest. Otherwise nothing is pinned.
  std::vector<int> cpus;
  {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
      for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (CPU_ISSET(cpu, &allowed)) {
          cpus.push_back(cpu);
        }
      }
    }
  }
  std::vector<int> lane_cpus(options_.lanes, -1);
  if (cpus.size() >= workers_ + options_.lanes && options_.lanes < cpus.size()) {
    for (std::size_t i = 0; i < options_.lanes; ++i) {
      lane_cpus[i] = cpus[cpus.size() - 1 - i];
    }
    wconfig.cpus.assign(cpus.begin(), cpus.end() - static_cast<std::ptrdiff_t>(options_.lanes));
    spdlog::info("lanes pinned to CPU {}{}, local compile workers to the other {} CPUs",
                 lane_cpus.front(), options_.lanes > 1 ? " and below" : "", wconfig.cpus.size());
  }
  local_workers pool(wconfig);
  pool.start();
  const bool remote_workers_possible = !options_.listen.empty();
  compile_broker.set_tick([&pool, &compile_broker, remote_workers_possible] {
    pool.supervise();
    // Without --listen, no worker can ever come once the local ones are gone: fail the queue
    // rather than wait forever.
    if (!remote_workers_possible && pool.exhausted() && compile_broker.live_workers() == 0) {
      compile_broker.fail_queued(
          "every local compile worker exited and the restart budget is spent (see the log "
          "above); fix: check that the worker command runs: rocm-perf worker compile --help");
    }
  });

  std::vector<std::unique_ptr<lane>> lanes;
  for (std::size_t i = 0; i < options_.lanes; ++i) {
    lanes.push_back(std::make_unique<lane>("cpu" + std::to_string(i), lane_cpus[i]));
  }

  flow::graph g;
  using gateway_node = flow::async_node<candidate_ptr, candidate_ptr>;

  gateway_node compile_gateway(
      g, flow::unlimited, [&](const candidate_ptr& c, gateway_node::gateway_type& gw) {
        gw.reserve_wait();
        try {
          compile_broker.submit(run_id_, make_request(*c),
                                [this, c, &gw](const messages::compile_reply& reply) {
                                  on_compiled(c, reply);
                                  gw.try_put(c);
                                  gw.release_wait();
                                });
        } catch (const std::exception& error) {
          c->compile.status = messages::compile_status::internal_error;
          c->compile.error = std::string("cannot submit the compile job: ") + error.what();
          gw.try_put(c);
          gw.release_wait();
        }
      });

  std::vector<std::unique_ptr<gateway_node>> lane_nodes;
  for (auto& l : lanes) {
    lane* target = l.get();
    lane_nodes.push_back(std::make_unique<gateway_node>(
        g, flow::unlimited, [this, target](const candidate_ptr& c, gateway_node::gateway_type& gw) {
          messages::measure_request request;
          request.candidate_key = c->key;
          for (const auto& word : c->run_argv) {
            request.argv.push_back(replace_all(word, "{BIN}", c->artifact_path.string()));
          }
          request.runs = options_.runs;
          request.warmup = options_.warmup;
          request.timeout_ms = static_cast<std::uint32_t>(options_.timeout_s * 1000.0);
          gw.reserve_wait();
          target->push(c, std::move(request), [&gw](const candidate_ptr& done) {
            gw.try_put(done);
            gw.release_wait();
          });
        }));
  }

  flow::function_node<candidate_ptr, candidate_ptr> model(
      g, flow::unlimited, [](const candidate_ptr& c) {
        c->stats = stages::summarize(c->measure.samples_ns);
        return c;
      });

  // Sends each compiled candidate to the least-loaded lane; a failed compile skips the lanes.
  flow::function_node<candidate_ptr, flow::continue_msg> lane_router(
      g, flow::serial, [&](const candidate_ptr& c) {
        if (c->compile.status != messages::compile_status::ok) {
          c->measure.status = messages::measure_status::not_run;
          std::string reason = messages::to_string(c->compile.status);
          const auto detail = c->compile.status == messages::compile_status::failed
                                  ? compiler_summary(c->compile.output)
                                  : std::string();
          if (!c->compile.error.empty()) {
            reason += ": " + c->compile.error;
          }
          if (!detail.empty()) {
            reason += ": " + detail;
          }
          c->measure.reason = reason;
          model.try_put(c);
          return flow::continue_msg();
        }
        std::size_t chosen = 0;
        for (std::size_t i = 1; i < lanes.size(); ++i) {
          if (lanes[i]->outstanding() < lanes[chosen]->outstanding()) {
            chosen = i;
          }
        }
        lane_nodes[chosen]->try_put(c);
        return flow::continue_msg();
      });

  const stages::acceptance_config acceptance_config;
  flow::function_node<candidate_ptr, candidate_ptr> acceptance(
      g, flow::serial, [&](const candidate_ptr& c) {
        try {
          c->verdict = stages::judge(c->key, c->measure, c->stats, best_, acceptance_config);
          if (c->verdict.decision == messages::verdict_kind::faster) {
            best_ = stages::incumbent{c->key, c->stats};
          }
          if (best_) {
            c->verdict.best_key = best_->key;
          }
        } catch (const std::exception& error) {
          c->verdict.decision = messages::verdict_kind::invalid;
          c->verdict.reason = std::string("acceptance error: ") + error.what();
        }
        return c;
      });

  flow::function_node<candidate_ptr, candidate_ptr> store_node(
      g, flow::serial, [&](const candidate_ptr& c) {
        if (c->compile.status == messages::compile_status::ok) {
          ++counts_.compiled;
          sum_compile_ns_ += c->compile.compile_ns;
        }
        for (auto ns : c->measure.samples_ns) {
          sum_run_ns_ += ns;
        }
        if (c->verdict.decision == messages::verdict_kind::invalid) {
          ++counts_.failed;
        } else {
          ++counts_.measured;
        }
        if (!fatal_) {
          try {
            store_->record(run_id_, *c);
            ++counts_.completed;
          } catch (const std::exception& error) {
            fatal_error_ = std::string("cannot store candidate ") + c->key + ": " + error.what();
            spdlog::error("{}", fatal_error_);
            fatal_ = true;
          }
        }
        if (c->verdict.decision == messages::verdict_kind::faster) {
          stored_candidate row;
          row.key = c->key;
          row.space_index = c->space_index;
          row.params = c->config.to_json();
          row.status = "ok";
          row.stats = c->stats;
          best_row_ = row;
        }
        try {
          report(*c);
        } catch (const std::exception& error) {
          spdlog::warn("progress observer: {}", error.what());
        }
        return c;
      });

  // Feedback closes the loop: the strategy sees every verdict and one new candidate starts for each
  // one that finished, which bounds the number in flight.
  flow::function_node<candidate_ptr, flow::continue_msg> feedback(
      g, flow::serial, [&](const candidate_ptr& c) {
        try {
          strategy_->feedback(c->space_index, c->verdict);
          if (auto next = next_candidate()) {
            compile_gateway.try_put(next);
          }
        } catch (const std::exception& error) {
          spdlog::error("strategy: {}", error.what());
        }
        return flow::continue_msg();
      });

  flow::make_edge(compile_gateway, lane_router);
  for (auto& node : lane_nodes) {
    flow::make_edge(*node, model);
  }
  flow::make_edge(model, acceptance);
  flow::make_edge(acceptance, store_node);
  flow::make_edge(store_node, feedback);

  const std::size_t in_flight =
      options_.max_in_flight.value_or(2 * (std::max<std::size_t>(workers_, 1) + options_.lanes));
  // Take the seed candidates from the strategy before any enters the graph: from the first
  // try_put on, only the feedback node may call the strategy.
  std::vector<candidate_ptr> seeds;
  while (seeds.size() < in_flight) {
    auto c = next_candidate();
    if (!c) {
      break;
    }
    seeds.push_back(std::move(c));
  }
  for (auto& c : seeds) {
    compile_gateway.try_put(c);
  }
  g.wait_for_all();

  autotune_result result;
  result.broker = compile_broker.stats();
  compile_broker.stop();
  pool.stop();
  lanes.clear();
  std::filesystem::remove_all(ipc_dir);

  result.run_status = fatal_ ? "failed" : (stop_ ? "interrupted" : "finished");
  result.error = fatal_error_;
  try {
    store_->set_run_status(run_id_, result.run_status);
  } catch (const std::exception& error) {
    spdlog::error("{}", error.what());
  }
  result.run_id = run_id_;
  result.db = options_.db;
  result.space_size = space_.configurations.size();
  result.space_total = space_.total;
  result.cut_by_constraints = space_.cut_by_constraints;
  result.strategy = options_.strategy;
  result.counts = counts_;
  result.counts.resumed = resumed_;
  result.counts.duplicates = duplicates_;
  result.compile_workers = workers_;
  result.lanes = options_.lanes;
  result.wall_s = std::chrono::duration<double>(clock_type::now() - started_).count();
  result.winner_key = best_ ? best_->key : std::string();
  result.candidates = store_->candidates(run_id_);
  result.sum_compile_ns = sum_compile_ns_;
  result.sum_run_ns = sum_run_ns_;
  return result;
}

nlohmann::json stats_json(const stages::sample_stats& s) {
  return {{"n", s.n},          {"median_ns", s.median}, {"mean_ns", s.mean},
          {"stddev_ns", s.stddev}, {"cv", s.cv},        {"min_ns", s.min},
          {"max_ns", s.max},   {"stability", stages::to_string(s.stability)}};
}

nlohmann::json candidate_json(const stored_candidate& c) {
  nlohmann::json j = {{"key", c.key},
                      {"space_index", c.space_index},
                      {"params", c.params},
                      {"status", c.status},
                      {"verdict", c.verdict},
                      {"verdict_reason", c.verdict_reason},
                      {"compile_status", c.compile_status},
                      {"compile_ms", static_cast<double>(c.compile_ns) / 1e6}};
  j["reason"] = c.reason.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.reason);
  j["stats"] = c.status == "ok" ? stats_json(c.stats) : nlohmann::json(nullptr);
  return j;
}

}  // namespace

autotune_result run_autotune(const autotune_options& options,
                             const std::function<void(const autotune_progress&)>& on_progress,
                             const std::atomic<bool>& stop) {
  autotune_job job(options, on_progress, stop);
  return job.run();
}

nlohmann::json to_json(const autotune_result& result) {
  nlohmann::json doc;
  doc["schema_version"] = "1.0";
  doc["run_id"] = result.run_id;
  doc["status"] = result.run_status;
  doc["db"] = result.db.string();
  doc["backend"] = "timing";
  doc["space"] = {{"size", result.space_size},
                  {"total", result.space_total},
                  {"cut_by_constraints", result.cut_by_constraints}};
  doc["strategy"] = result.strategy;
  doc["counts"] = {{"planned", result.counts.planned},     {"completed", result.counts.completed},
                   {"compiled", result.counts.compiled},   {"measured", result.counts.measured},
                   {"failed", result.counts.failed},       {"resumed", result.counts.resumed},
                   {"duplicates", result.counts.duplicates}};
  doc["compile_workers"] = result.compile_workers;
  doc["lanes"] = result.lanes;
  doc["wall_s"] = result.wall_s;
  std::vector<const stored_candidate*> valid;
  nlohmann::json all = nlohmann::json::array();
  doc["winner"] = nullptr;
  for (const auto& c : result.candidates) {
    all.push_back(candidate_json(c));
    if (c.status == "ok") {
      valid.push_back(&c);
    }
    if (c.key == result.winner_key) {
      doc["winner"] = candidate_json(c);
    }
  }
  std::sort(valid.begin(), valid.end(), [](const auto* a, const auto* b) {
    return a->stats.median < b->stats.median;
  });
  nlohmann::json best = nlohmann::json::array();
  for (std::size_t i = 0; i < valid.size() && i < 10; ++i) {
    best.push_back(candidate_json(*valid[i]));
  }
  doc["best"] = best;
  doc["candidates"] = all;
  doc["error"] = result.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(result.error);
  return doc;
}

}  // namespace rpl::engine
