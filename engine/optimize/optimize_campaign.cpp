#include "engine/optimize/optimize_campaign.hpp"

#include <algorithm>
#include <future>
#include <thread>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "engine/autotune/cached_compile_service.hpp"
#include "engine/autotune/determinism_check_service.hpp"
#include "engine/campaign/compile_processes.hpp"
#include "engine/store/artifact_store.hpp"
#include "engine/store/results_store.hpp"
#include "stages/optimize/proposer_kinds.hpp"

namespace rpl::engine {

namespace fs = std::filesystem;

std::size_t default_compile_workers(const optimize_options& options) {
  if (options.compile_workers > 0) {
    return options.compile_workers;
  }
  // All cores but two (the lane's thread and the engine's), 2 to 16: a batch of proposals (a knob
  // search's configurations) builds at once while the lane measures; nvcc is single-threaded.
  const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
  return std::clamp<std::size_t>(cores > 2 ? cores - 2 : 1, std::min<std::size_t>(2, cores), 16);
}

optimize_campaign::optimize_campaign(const optimize_options& options,
                                     std::optional<broker_curve> curve,
                                     const campaign_setup& setup)
    : run_id_("optimize-" + std::to_string(::getpid())) {
  // --listen takes CURVE clients only (optimize's --listen needs keys: run_optimize.cpp).
  config_ = campaign_broker_config(ipc_, std::move(curve), {});
  broker_ = std::make_unique<broker>(config_);
  start_campaign_broker(*broker_);
  start_workers(options, setup);
  // The artifact cache: a build of the same sources, argv and compiler is answered from
  // OUT/artifacts, so a --resume (or a proposal made twice) compiles nothing new.
  cache_index_ = std::make_unique<results_store>(options.out / "build-cache.sqlite");
  artifacts_ = std::make_unique<artifact_store>(options.out / "artifacts");
  to_broker_ = std::make_unique<determinism_check_service>(*broker_, run_id_, 0.0, *cache_index_,
                                                           compile_pool_ ? 1 : 0);
  cached_ = std::make_unique<cached_compile_service>(*to_broker_, *cache_index_, *artifacts_, true);
}

void optimize_campaign::start_workers(const optimize_options& options,
                                      const campaign_setup& setup) {
  // As bound: a wildcard port (tcp://0.0.0.0:*) is named with the port the system chose.
  std::string remote_endpoints;
  for (std::size_t i = config_.bind_endpoints.size(); i < broker_->bound_endpoints().size(); ++i) {
    remote_endpoints += (remote_endpoints.empty() ? "" : ", ") + broker_->bound_endpoints()[i];
  }
  if (config_.curve) {
    spdlog::info("listening on {} (CURVE) for remote proposers and compile workers whose keys "
                 "{} lists",
                 remote_endpoints, options.allow_keys.string());
  }
  local_workers_config compile_config =
      compile_workers_config(options.worker_executable, config_, default_compile_workers(options),
                             {}, setup.compilers, setup.read_paths);
  compile_pool_ = std::make_unique<local_workers>(compile_config);
  compile_pool_->start();
  for (const auto& kind : setup.kinds) {
    const auto* registered = stages::optimize::find_proposer_kind(kind);
    if (registered != nullptr && registered->needs_endpoint && options.llm_endpoint.empty()) {
      spdlog::info("no --llm-endpoint: LLM proposals come from remote `worker propose --kind {}` "
                   "processes connecting to {}",
                   kind, remote_endpoints);
      continue;
    }
    local_workers_config config = compile_config;
    config.count = 1;
    config.command = {"worker", "propose", "--kind", kind};
    if (registered != nullptr && registered->needs_endpoint) {
      config.command.insert(config.command.end(),
                            {"--llm-endpoint", options.llm_endpoint, "--llm-model",
                             options.llm_model, "--llm-timeout-s",
                             std::to_string(options.llm_timeout_s)});
    }
    proposer_pools_.push_back(std::make_unique<local_workers>(config));
    proposer_pools_.back()->start();
  }
  broker_->set_tick([this] {
    compile_pool_->supervise();
    for (auto& pool : proposer_pools_) {
      pool->supervise();
    }
  });
}

optimize_campaign::~optimize_campaign() {
  stop();
}

compile_service& optimize_campaign::compiler() {
  return *cached_;
}

std::uint64_t optimize_campaign::cache_hits() const {
  return cached_->hits();
}
std::uint64_t optimize_campaign::cache_misses() const {
  return cached_->misses();
}

messages::propose_reply optimize_campaign::propose(const std::string& kind,
                                                   const messages::propose_request& request) {
  auto promise = std::make_shared<std::promise<messages::propose_reply>>();
  auto future = promise->get_future();
  broker_->submit_proposal(run_id_, kind, request, [promise](const messages::propose_reply& reply) {
    promise->set_value(reply);
  });
  return future.get();
}

void optimize_campaign::stop() {
  if (stopped_) {
    return;
  }
  stopped_ = true;
  // The broker first: its tick supervises the workers and would restart them as they stop.
  broker_->stop();
  for (auto& pool : proposer_pools_) {
    pool->stop();
  }
  compile_pool_->stop();
  // The cache answers its pending hits on its own thread before it goes.
  cached_.reset();
}

} // namespace rpl::engine
