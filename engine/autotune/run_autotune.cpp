#include <sched.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include "engine/autotune/autotune.hpp"
#include "engine/autotune/autotune_inputs.hpp"
#include "engine/autotune/autotune_session.hpp"
#include "engine/autotune/final_round.hpp"
#include "engine/autotune/lane_plan.hpp"
#include "engine/broker/broker.hpp"
#include "engine/broker/local_workers.hpp"
#include "engine/graph/tuning_graph.hpp"

namespace rpl::engine {

namespace {

using clock_type = std::chrono::steady_clock;

/// The broker as the graph's compile service, for one run.
class broker_compile_service final : public compile_service {
public:
  broker_compile_service(broker& b, std::string run_id) : broker_(b), run_id_(std::move(run_id)) {}
  void submit(messages::compile_request request, reply_fn on_reply) override {
    broker_.submit(run_id_, std::move(request), std::move(on_reply));
  }

private:
  broker& broker_;
  std::string run_id_;
};

/// A private folder for the broker's ipc endpoint, removed at the end.
class private_dir {
public:
  private_dir() {
    char pattern[] = "/tmp/rocm-perf-XXXXXX";
    if (mkdtemp(pattern) == nullptr) {
      throw config_error(std::string("cannot create a temporary folder under /tmp for the broker "
                                     "socket: ") +
                         std::strerror(errno) + "; fix: make /tmp writable, or set TMPDIR");
    }
    path_ = pattern;
  }
  ~private_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  private_dir(const private_dir&) = delete;
  private_dir& operator=(const private_dir&) = delete;
  const std::filesystem::path& path() const { return path_; }

private:
  std::filesystem::path path_;
};

/// Measurement keeps CPUs to itself when there are enough: lane k runs on the k-th CPU from the
/// end, the compile workers (and their compilers) on the rest. Otherwise nothing is pinned (-1).
struct cpu_plan {
  std::vector<int> lanes;
  std::vector<int> workers;
};

cpu_plan plan_cpus(std::size_t lanes, std::size_t workers) {
  std::vector<int> cpus;
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &allowed)) {
        cpus.push_back(cpu);
      }
    }
  }
  cpu_plan plan;
  plan.lanes.assign(lanes, -1);
  if (cpus.size() >= workers + lanes && lanes < cpus.size()) {
    for (std::size_t i = 0; i < lanes; ++i) {
      plan.lanes[i] = cpus[cpus.size() - 1 - i];
    }
    plan.workers.assign(cpus.begin(), cpus.end() - static_cast<std::ptrdiff_t>(lanes));
    spdlog::info("lanes pinned to CPU {}{}, local compile workers to the other {} CPUs",
                 plan.lanes.front(), lanes > 1 ? " and below" : "", plan.workers.size());
  }
  return plan;
}

broker_config make_broker_config(const autotune_options& options, const private_dir& dir) {
  broker_config config;
  config.bind_endpoints.push_back("ipc://" + (dir.path() / "broker.ipc").string());
  for (const auto& endpoint : options.listen) {
    config.bind_endpoints.push_back(endpoint);
  }
  config.heartbeat = options.heartbeat;
  config.liveness = options.liveness;
  return config;
}

local_workers_config make_workers_config(const autotune_options& options,
                                         const broker_config& bconfig,
                                         std::size_t count,
                                         std::vector<int> cpus) {
  local_workers_config config;
  config.executable = options.worker_executable.empty()
                          ? std::filesystem::read_symlink("/proc/self/exe")
                          : options.worker_executable;
  config.endpoint = bconfig.bind_endpoints.front();
  config.count = count;
  config.heartbeat = options.heartbeat;
  config.liveness = options.liveness;
  config.allowed_compilers = options.allowed_compilers;
  config.cpus = std::move(cpus);
  return config;
}

autotune_result make_result(const autotune_options& options,
                            const autotune_inputs& inputs,
                            autotune_session& session,
                            const std::atomic<bool>& stop) {
  autotune_result result;
  result.run_status = session.failed() ? "failed" : (stop ? "interrupted" : "finished");
  result.error = session.failure();
  try {
    session.store().set_run_status(session.run_id(), result.run_status);
  } catch (const std::exception& error) {
    spdlog::error("{}", error.what());
  }
  result.run_id = session.run_id();
  result.db = options.db;
  result.space_size = inputs.space.configurations.size();
  result.space_total = inputs.space.total;
  result.cut_by_constraints = inputs.space.cut_by_constraints;
  result.strategy = options.strategy;
  result.counts = session.counts();
  result.compile_workers = inputs.workers;
  result.lanes = lane_count(options, inputs);
  result.winner_key = session.winner_key();
  result.candidates = session.store().candidates(session.run_id());
  result.sum_compile_ns = session.sum_compile_ns();
  result.sum_run_ns = session.sum_run_ns();
  return result;
}

pipeline_report make_pipeline_report(const autotune_result& result,
                                     std::vector<lane_activity> activity) {
  pipeline_report p;
  p.compile_bound_s = result.compile_workers > 0
                          ? static_cast<double>(result.sum_compile_ns) / 1e9 /
                                static_cast<double>(result.compile_workers)
                          : 0.0;
  double busy_s = 0.0;
  for (const auto& lane : activity) {
    busy_s += std::chrono::duration<double>(lane.busy).count();
  }
  p.lane_bound_s = activity.empty() ? 0.0 : busy_s / static_cast<double>(activity.size());
  const double bound = std::max(p.compile_bound_s, p.lane_bound_s);
  p.bound_ratio = bound > 0.0 ? result.wall_s / bound : 0.0;
  p.lanes = std::move(activity);
  return p;
}

} // namespace

autotune_result run_autotune(const autotune_options& options,
                             const std::function<void(const autotune_progress&)>& on_progress,
                             const std::atomic<bool>& stop) {
  auto inputs = validate_inputs(options);
  autotune_session session(options, inputs, on_progress, stop);
  session.open();
  const auto started = clock_type::now();

  std::optional<private_dir> ipc_dir;
  try {
    ipc_dir.emplace();
  } catch (const config_error&) {
    session.store().set_run_status(session.run_id(), "failed");
    throw;
  }
  const auto bconfig = make_broker_config(options, *ipc_dir);
  broker compile_broker(bconfig);
  try {
    compile_broker.start();
  } catch (const zmq::error_t& error) {
    session.store().set_run_status(session.run_id(), "failed");
    throw config_error(std::string("--listen: cannot bind: ") + error.what() +
                       "; fix: use a free port and an address of this host, e.g. "
                       "tcp://0.0.0.0:5555");
  }

  const bool cpu_lanes = inputs.lane_kind == "timing";
  auto cpus = cpu_lanes ? plan_cpus(options.lanes, inputs.workers) : cpu_plan{};
  local_workers pool(make_workers_config(options, bconfig, inputs.workers, cpus.workers));
  pool.start();
  const bool remote_workers_possible = !options.listen.empty();
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

  auto plan = make_lanes(options, inputs, cpus.lanes);
  auto& lanes = plan.lanes;
  broker_compile_service compiler(compile_broker, session.run_id());
  {
    tuning_graph graph(session, compiler, lanes);
    graph.run(options.max_in_flight.value_or(
        2 * (std::max<std::size_t>(inputs.workers, 1) + lanes.size())));
  }
  std::string winner_note;
  std::optional<final_round_result> final_round;
  if (!session.failed()) {
    final_round_settings settings;
    settings.max_finalists = options.finalists;
    settings.rounds = options.final_rounds;
    // A kernel lane's round is a few launches; an application's or a process's round is one run.
    settings.runs_per_round = inputs.lane_kind == "kernel" ? std::max(options.runs, 5u) : 1;
    settings.noise_target = inputs.sampling ? inputs.sampling->max_noise : 0.01;
    const auto stored = options.resume && session.counts().completed == 0
                            ? session.store().final_round(session.run_id())
                            : std::nullopt;
    if (stored) {
      // Nothing new was measured: the earlier session's final round still decides.
      final_round = final_round_from_json(*stored);
    } else {
      final_round =
          run_final_round(*lanes.front(), session.measured(), settings, stop, winner_note);
    }
    if (final_round && !stored) {
      try {
        session.store().record_final_round(session.run_id(), to_json(*final_round));
      } catch (const std::exception& error) {
        spdlog::error("cannot store the final round: {}", error.what());
      }
    }
  }

  const auto broker_stats = compile_broker.stats();
  std::vector<lane_activity> activity;
  for (const auto& lane : lanes) {
    activity.push_back(lane->activity());
  }
  compile_broker.stop();
  pool.stop();
  lanes.clear();
  auto result = make_result(options, inputs, session, stop);
  result.broker = broker_stats;
  result.lane_kind = inputs.lane_kind;
  result.devices = plan.devices;
  if (inputs.sampling) {
    result.noise_target = inputs.sampling->max_noise;
  }
  if (final_round && !final_round->winner.empty()) {
    result.winner_key = final_round->winner;
  }
  result.final_round = std::move(final_round);
  result.winner_note = winner_note;
  result.wall_s = std::chrono::duration<double>(clock_type::now() - started).count();
  result.pipeline = make_pipeline_report(result, std::move(activity));
  return result;
}

} // namespace rpl::engine
