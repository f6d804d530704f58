#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include <sched.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include "engine/autotune/autotune.hpp"
#include "engine/autotune/autotune_inputs.hpp"
#include "engine/autotune/autotune_session.hpp"
#include "engine/autotune/cached_compile_service.hpp"
#include "engine/autotune/determinism_check_service.hpp"
#include "engine/autotune/final_round.hpp"
#include "engine/autotune/lane_plan.hpp"
#include "engine/broker/broker.hpp"
#include "engine/broker/local_workers.hpp"
#include "engine/broker/private_dir.hpp"
#include "engine/campaign/compile_processes.hpp"
#include "engine/graph/tuning_graph.hpp"
#include "stages/search/model_strategy.hpp"

namespace rpl::engine {

namespace {

using clock_type = std::chrono::steady_clock;

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

broker_config make_broker_config(const autotune_options& options,
                                 const autotune_inputs& inputs,
                                 const private_dir& dir) {
  std::optional<broker_curve> curve;
  if (inputs.curve_server) {
    curve = broker_curve{*inputs.curve_server, inputs.curve_allowed, options.listen};
  }
  broker_config config = campaign_broker_config(dir, std::move(curve), options.listen);
  config.heartbeat = options.heartbeat;
  config.liveness = options.liveness;
  return config;
}

local_workers_config make_workers_config(const autotune_options& options,
                                         const autotune_inputs& inputs,
                                         const broker_config& bconfig,
                                         std::size_t count,
                                         std::vector<int> cpus) {
  std::vector<std::string> compilers;
  for (const auto& entry : inputs.toolchains)
    compilers.push_back(entry.first);
  local_workers_config config = compile_workers_config(
      options.worker_executable, bconfig, count, options.allowed_compilers, compilers,
      {inputs.template_read_paths.begin(), inputs.template_read_paths.end()});
  config.cpus = std::move(cpus);
  return config;
}

/// What a user needs to hear about compile workers that do not come: where the engine listens and
/// the command that starts one. Remote workers connect to a --listen endpoint; a wildcard address
/// (0.0.0.0, *) is this host's name to them.
struct worker_endpoints {
  std::string listening; ///< the endpoints, comma-separated
  std::string connect;   ///< the endpoint a worker passes to --connect
};

worker_endpoints describe_endpoints(const autotune_options& options, const broker_config& config) {
  worker_endpoints e;
  const auto& endpoints = options.listen.empty() ? config.bind_endpoints : options.listen;
  for (const auto& endpoint : endpoints) {
    e.listening += (e.listening.empty() ? "" : ", ") + endpoint;
  }
  e.connect = endpoints.front();
  if (config.curve) {
    e.connect += " --curve-keys WORKER_KEY_DIR --server-key " +
                 (options.curve_keys / "public.key").string() + " (its public.key listed in " +
                 options.allow_keys.string() + ")";
  }
  for (const std::string wildcard : {"0.0.0.0", "*"}) {
    if (const auto at = e.connect.find("://" + wildcard); at != std::string::npos) {
      e.connect.replace(at + 3, wildcard.size(), "<this host>");
    }
  }
  return e;
}

/// Compiles waiting with no compile worker connected: a notice after 5 s and every 30 s after
/// that, and, with --worker-wait, the run's failure once the wait is that long. Tick thread only.
class worker_wait_watch {
public:
  using duration = std::chrono::steady_clock::duration;
  static constexpr std::chrono::seconds first_notice{5};
  static constexpr std::chrono::seconds notice_every{30};

  worker_wait_watch(const autotune_options& options, worker_endpoints endpoints, bool local)
      : endpoints_(std::move(endpoints)), local_(local) {
    if (options.worker_wait_s) {
      limit_ = std::chrono::duration_cast<duration>(
          std::chrono::duration<double>(*options.worker_wait_s));
      char text[32];
      std::snprintf(text, sizeof text, "%g", *options.worker_wait_s);
      limit_text_ = text;
    }
  }

  /// The failure once --worker-wait is exceeded, else nullopt (logging a notice when one is due).
  std::optional<std::string> check(duration waited, std::size_t queued, const std::string& why) {
    if (waited <= duration::zero()) {
      next_notice_ = first_notice;
      return std::nullopt;
    }
    const auto waited_text =
        std::to_string(std::chrono::duration_cast<std::chrono::seconds>(waited).count());
    if (limit_ && waited >= *limit_) {
      return "no compile worker that fits the compiles connected to " + endpoints_.listening +
             " within --worker-wait " + limit_text_ + " s (" + why + "; " + std::to_string(queued) +
             " compiles queued); fix: start one with: rocm-perf worker compile --connect " +
             endpoints_.connect +
             ", check the --listen endpoint and the workers' toolchains, or raise --worker-wait";
    }
    if (waited >= next_notice_) {
      next_notice_ = std::chrono::duration_cast<duration>(waited + notice_every);
      if (local_) {
        spdlog::warn("waiting for a compile worker on {} for {} s (queued: {}); the local "
                     "workers have not connected: see the log above",
                     endpoints_.listening, waited_text, queued);
      } else {
        spdlog::warn("waiting for a compile worker on {} for {} s ({}; queued: {}); start one "
                     "with: rocm-perf worker compile --connect {}{}",
                     endpoints_.listening, waited_text, why, queued, endpoints_.connect,
                     limit_ ? "" : " (--worker-wait SECONDS gives up instead)");
      }
    }
    return std::nullopt;
  }

private:
  worker_endpoints endpoints_;
  bool local_ = false;
  std::optional<duration> limit_;
  std::string limit_text_;
  duration next_notice_ = first_notice;
};

/// The broker's tick (broker thread only): starts the local workers with the first compile that is
/// not in the artifact cache (a warm re-tune starts none: 14 processes probing 8 toolchains each at
/// the moment the lanes start) and supervises them; with --local-fallback, starts local workers
/// once compiles have waited that long for a fitting one; fails the queued compiles when no worker
/// can come or the run stops.
class compile_workers_tick {
public:
  compile_workers_tick(const autotune_options& options,
                       const autotune_inputs& inputs,
                       const broker_config& bconfig,
                       broker& compile_broker,
                       autotune_session& session,
                       local_workers& pool,
                       const worker_endpoints& endpoints)
      : options_(options), inputs_(inputs), bconfig_(bconfig), broker_(compile_broker),
        session_(session), pool_(pool), remote_workers_possible_(!options.listen.empty()),
        waiting_(options, endpoints, !remote_workers_possible_) {}

  void operator()() {
    if (!pool_started_ && broker_.queued_jobs() > 0) {
      pool_started_ = true;
      pool_.start();
    }
    pool_.supervise();
    if (fallback_) {
      fallback_->supervise();
    } else if (options_.local_fallback_s &&
               broker_.waiting_for_workers() >=
                   std::chrono::duration<double>(*options_.local_fallback_s)) {
      const std::size_t count = default_compile_workers(options_.lanes);
      spdlog::warn("compiles waited {} s with no fitting worker ({}): --local-fallback starts {} "
                   "local compile worker(s)",
                   *options_.local_fallback_s, broker_.unplaced_reason(), count);
      fallback_.emplace(make_workers_config(options_, inputs_, bconfig_, count, {}));
      fallback_->start();
      fallback_count_ = count;
    }
    // A stopping run drops its queued compiles (the graph stores none of them: --resume makes
    // them again), so that no worker that connects now starts one.
    if (session_.stopping()) {
      broker_.fail_queued("the run is stopping");
      return;
    }
    // Without --listen, no worker can ever come once the local ones are gone: fail the queue
    // rather than wait forever.
    if (!remote_workers_possible_ && pool_.exhausted() && broker_.live_workers() == 0) {
      broker_.fail_queued(
          "every local compile worker exited and the restart budget is spent (see the log "
          "above); fix: check that the worker command runs: rocm-perf worker compile --help");
    }
    if (auto failure = waiting_.check(broker_.waiting_for_workers(), broker_.queued_jobs(),
                                      broker_.unplaced_reason())) {
      session_.fail(*failure);
      broker_.fail_queued("the run is stopping");
    }
  }

  /// How many --local-fallback workers were started (any thread).
  std::size_t fallback_workers() const { return fallback_count_.load(); }

private:
  const autotune_options& options_;
  const autotune_inputs& inputs_;
  const broker_config& bconfig_;
  broker& broker_;
  autotune_session& session_;
  local_workers& pool_;
  const bool remote_workers_possible_;
  worker_wait_watch waiting_;
  bool pool_started_ = false;
  std::optional<local_workers> fallback_;
  std::atomic<std::size_t> fallback_count_{0};
};

/// Gives what a stop interrupts (the final round) `grace` to end, then calls `on_expiry` once.
class stop_watchdog {
public:
  stop_watchdog(const std::atomic<bool>& stop,
                std::chrono::milliseconds grace,
                std::function<void()> on_expiry)
      : thread_([this, &stop, grace, on_expiry = std::move(on_expiry)] {
          constexpr std::chrono::milliseconds poll{50};
          std::unique_lock lock(mutex_);
          while (!done_ && !stop) {
            changed_.wait_for(lock, poll);
          }
          const auto deadline = std::chrono::steady_clock::now() + grace;
          while (!done_ && std::chrono::steady_clock::now() < deadline) {
            changed_.wait_until(lock, deadline);
          }
          if (!done_) {
            on_expiry();
          }
        }) {}
  ~stop_watchdog() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }
  stop_watchdog(const stop_watchdog&) = delete;
  stop_watchdog& operator=(const stop_watchdog&) = delete;

private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool done_ = false;
  std::thread thread_;
};

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
  result.model = inputs.strategy->summary();
  result.prior_run = session.prior_run();
  result.prior_known = session.prior_known();
  // The model names unmeasured configurations by their index in the space; the report adds their
  // parameters.
  if (result.model.is_object() && result.model.contains("unmeasured"))
    for (auto& row : result.model["unmeasured"]["candidates"]) {
      nlohmann::json params = nlohmann::json::object();
      for (const auto& [name, value] :
           inputs.space.configurations.at(row.at("space_index").get<std::size_t>()).params)
        params[name] = stages::to_json_value(value);
      row["params"] = std::move(params);
    }
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

/// --recorded: nothing to compile; each candidate goes straight to a recorded lane.
class recorded_compile_service final : public compile_service {
public:
  void submit(messages::compile_request, reply_fn on_reply) override {
    messages::compile_reply reply;
    reply.status = messages::compile_status::ok;
    reply.exit_code = 0;
    reply.worker_id = "recorded";
    on_reply(reply);
  }
};

/// The run of a recorded landscape: the same session, strategy, graph and store as a real run,
/// with recorded lanes and no compile workers. No final round: the recorded samples would repeat.
autotune_result run_recorded(const autotune_options& options,
                             const autotune_inputs& inputs,
                             autotune_session& session,
                             const std::atomic<bool>& stop,
                             clock_type::time_point started) {
  auto plan = make_lanes(options, inputs, {});
  recorded_compile_service compiler;
  const auto grace =
      std::chrono::milliseconds(static_cast<std::int64_t>(options.stop_grace_s * 1000));
  {
    tuning_graph graph(session, compiler, plan.lanes);
    // One at a time unless asked: each proposal then sees every earlier result, so a seed gives
    // the same sequence every time (a benchmark of strategies needs that).
    graph.run(options.max_in_flight.value_or(1), grace);
  }
  std::vector<lane_activity> activity;
  for (const auto& lane : plan.lanes)
    activity.push_back(lane->activity());
  plan.lanes.clear();
  auto result = make_result(options, inputs, session, stop);
  result.lane_kind = inputs.lane_kind;
  result.winner_note = "recorded landscape: the winner is the best recorded median (no final "
                       "round: recorded samples do not change)";
  result.wall_s = std::chrono::duration<double>(clock_type::now() - started).count();
  result.pipeline = make_pipeline_report(result, std::move(activity));
  return result;
}

/// --max-in-flight's default. The model strategy picks from the results it has: with every
/// candidate of a small budget in flight at once, it would pick them all before the first result
/// (all at random). Its default keeps each lane fed with one candidate compiling ahead, at least 4.
/// Remote workers' slots are not known in advance: with --listen, enough for 64 of them.
std::size_t default_in_flight(const autotune_options& options,
                              const autotune_inputs& inputs,
                              std::size_t lanes) {
  if (options.strategy == "model")
    return std::max<std::size_t>(2 * lanes, 4);
  const std::size_t base = 2 * (std::max<std::size_t>(inputs.workers, 1) + lanes);
  // GPU lanes are rarely the bottleneck of a sweep that compiles: the broker then sees most of
  // the space at once and hands out the longest builds first (broker_config::rank).
  const std::size_t gpu = inputs.lane_kind == "timing" ? 0 : std::min<std::size_t>(8 * base, 1024);
  return std::max<std::size_t>({base, gpu, options.listen.empty() ? 0U : 128U});
}

/// The final round after the graph: none when interrupted or failed (`winner_note` says why when
/// interrupted); the stored one of an earlier session when a resumed run measured nothing new;
/// else the finalists re-measured on the lanes of the first lane's device model, and stored.
std::optional<final_round_result>
decide_final_round(const autotune_options& options,
                   const autotune_inputs& inputs,
                   autotune_session& session,
                   const std::vector<std::unique_ptr<lane_worker>>& lanes,
                   const std::atomic<bool>& stop,
                   std::chrono::milliseconds grace,
                   std::string& winner_note) {
  std::optional<final_round_result> final_round;
  if (stop) {
    winner_note = "interrupted: no final round";
  } else if (!session.failed()) {
    final_round_settings settings;
    settings.max_finalists = options.finalists;
    settings.rounds = options.final_rounds;
    // A kernel lane's round is a few launches; an application's or a process's round is one run.
    settings.runs_per_round = inputs.lane_kind == "kernel" || inputs.lane_kind == "replay"
                                  ? std::max(options.runs, 5u)
                                  : 1;
    settings.noise_target = inputs.sampling ? inputs.sampling->max_noise : 0.01;
    const auto stored = options.resume && session.counts().completed == 0
                            ? session.store().final_round(session.run_id())
                            : std::nullopt;
    if (stored) {
      // Nothing new was measured: the earlier session's final round still decides.
      final_round = final_round_from_json(*stored);
    } else {
      // A stop during the final round ends it after the measurement in progress, or abandons
      // that measurement after the grace period.
      // Candidates are compared within one device model: the rounds go to the lanes whose GPU
      // is the first lane's model (each round whole on one device, so each pair is too).
      std::vector<lane_worker*> final_lanes;
      const std::string model = lanes.front()->activity().device_model;
      for (const auto& lane : lanes)
        if (lane->activity().device_model == model)
          final_lanes.push_back(lane.get());
      stop_watchdog watchdog(stop, grace, [&final_lanes] {
        for (lane_worker* lane : final_lanes)
          lane->abandon();
      });
      final_round = run_final_round(final_lanes, session.measured(), settings, stop, winner_note);
    }
    if (final_round && !stored) {
      try {
        session.store().record_final_round(session.run_id(), to_json(*final_round));
      } catch (const std::exception& error) {
        spdlog::error("cannot store the final round: {}", error.what());
      }
    }
  }
  return final_round;
}

} // namespace

autotune_result run_autotune(const autotune_options& options,
                             const std::function<void(const autotune_progress&)>& on_progress,
                             const std::atomic<bool>& stop) {
  spdlog::debug("autotune: reading the inputs");
  auto inputs = validate_inputs(options, false);
  spdlog::debug("autotune: inputs read");
  // GPU lanes start first: their processes' start-up (a CUDA context, some 0.3 s on an H100) then
  // overlaps identifying the compilers (0.1 s, most of it nvcc --version) and opening the store,
  // the broker and the local workers instead of delaying the first candidate.
  std::optional<lane_plan> early_lanes;
  if (inputs.lane_kind != "recorded" && inputs.lane_kind != "timing")
    early_lanes = make_lanes(options, inputs, {});
  identify_toolchains(options, inputs);
  autotune_session session(options, inputs, on_progress, stop);
  session.open();
  spdlog::debug("autotune: lanes made, store open");
  const auto started = clock_type::now();
  if (inputs.lane_kind == "recorded")
    return run_recorded(options, inputs, session, stop, started);

  std::optional<private_dir> ipc_dir;
  try {
    ipc_dir.emplace();
  } catch (const std::runtime_error& error) {
    session.store().set_run_status(session.run_id(), "failed");
    throw config_error(error.what());
  }
  auto bconfig = make_broker_config(options, inputs, *ipc_dir);
  bconfig.rank = [&session](const messages::compile_request& request) {
    return session.compile_rank(request);
  };
  broker compile_broker(bconfig);
  try {
    start_campaign_broker(compile_broker);
  } catch (const campaign_input_error&) {
    session.store().set_run_status(session.run_id(), "failed");
    throw;
  }

  const bool cpu_lanes = inputs.lane_kind == "timing";
  auto cpus = cpu_lanes ? plan_cpus(options.lanes, inputs.workers) : cpu_plan{};
  local_workers pool(make_workers_config(options, inputs, bconfig, inputs.workers, cpus.workers));
  const auto endpoints = describe_endpoints(options, bconfig);
  if (inputs.workers == 0) {
    spdlog::info("no local compile workers (--compile-workers 0): compiles wait for workers that "
                 "connect to {}; start one with: rocm-perf worker compile --connect {}",
                 endpoints.listening, endpoints.connect);
  }
  compile_workers_tick tick(options, inputs, bconfig, compile_broker, session, pool, endpoints);
  compile_broker.set_tick([&tick] { tick(); });
  // The tick uses the pool, its fallback workers and the session: the broker thread ends before
  // they do, on every way out of this function.
  struct broker_stopper {
    broker& b;
    ~broker_stopper() { b.stop(); }
  } stop_broker_first{compile_broker};

  auto plan = early_lanes ? std::move(*early_lanes) : make_lanes(options, inputs, cpus.lanes);
  auto& lanes = plan.lanes;
  determinism_check_service broker_compiler(
      compile_broker, session.run_id(), options.determinism_check, session.store(), inputs.workers);
  cached_compile_service compiler(broker_compiler, session.store(), session.artifacts(),
                                  !options.no_compile_cache);
  const auto grace =
      std::chrono::milliseconds(static_cast<std::int64_t>(options.stop_grace_s * 1000));
  // The model's seed sample goes at the default's pace; past it, at most one candidate compiling
  // ahead of each lane awaits its result, so that each pick sees all results but the lanes' last
  // (four in flight on one lane: the GEMM ground truth's seeds within 1 % fell from 91 to 72 in
  // 100, bench/README.md). An explicit --max-in-flight keeps its number throughout.
  if (!options.max_in_flight)
    if (auto* model = dynamic_cast<stages::model_strategy*>(inputs.strategy.get()))
      model->set_max_pending(lanes.size() + 1);
  {
    tuning_graph graph(session, compiler, lanes);
    graph.run(options.max_in_flight.value_or(default_in_flight(options, inputs, lanes.size())),
              grace);
  }
  spdlog::debug("autotune: sweep done");
  std::string winner_note;
  auto final_round = decide_final_round(options, inputs, session, lanes, stop, grace, winner_note);

  const auto broker_stats = compile_broker.stats();
  std::vector<lane_activity> activity;
  for (const auto& lane : lanes) {
    activity.push_back(lane->activity());
  }
  compile_broker.stop();
  spdlog::debug("autotune: broker stopped");
  pool.stop();
  spdlog::debug("autotune: compile workers stopped");
  lanes.clear();
  spdlog::debug("autotune: lanes and workers stopped");
  auto result = make_result(options, inputs, session, stop);
  result.broker = broker_stats;
  result.fallback_workers = tick.fallback_workers();
  result.compile_cache = {compiler.hits(), compiler.misses()};
  result.determinism = {options.determinism_check, broker_compiler.checked(),
                        broker_compiler.mismatched(), broker_compiler.skipped()};
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
