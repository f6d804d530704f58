#pragma once
/// The processes and stores around an optimize run: the broker on a private ipc:// socket (and
/// CURVE endpoints with --listen), the local compile workers and proposer workers it supervises,
/// and the compile service the graph uses: the broker's workers behind the artifact cache
/// (engine/autotune/cached_compile_service.hpp), whose index is `OUT/build-cache.sqlite` and
/// whose code objects are `OUT/artifacts/<hash>`, so that a --resume builds nothing it built
/// before. Stops everything in the right order when it goes away.

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/broker/broker.hpp"
#include "engine/broker/local_workers.hpp"
#include "engine/broker/private_dir.hpp"
#include "engine/optimize/run_optimize.hpp"
#include "messages/proposal.hpp"

namespace rpl::engine {

class artifact_store;
class cached_compile_service;
class compile_service;
class determinism_check_service;
class results_store;

struct campaign_setup {
  std::vector<std::string> kinds;      ///< proposer kinds to run (stages/optimize/proposer_kinds)
  std::vector<std::string> compilers;  ///< absolute compiler paths the build templates name
  std::vector<std::string> read_paths; ///< files the build templates read
};

/// --compile-workers, or all cores but two (2 to 16).
std::size_t default_compile_workers(const optimize_options& options);

class optimize_campaign {
public:
  /// Starts the broker and the workers; throws optimize_input_error when --listen cannot bind.
  optimize_campaign(const optimize_options& options,
                    std::optional<broker_curve> curve,
                    const campaign_setup& setup);
  ~optimize_campaign();
  optimize_campaign(const optimize_campaign&) = delete;
  optimize_campaign& operator=(const optimize_campaign&) = delete;

  compile_service& compiler();
  const artifact_store& artifacts() const { return *artifacts_; }
  /// Asks a proposer of `kind`; blocking, bounded by request.timeout_ms.
  messages::propose_reply propose(const std::string& kind,
                                  const messages::propose_request& request);
  /// Builds answered from the cache, and sent to the workers.
  std::uint64_t cache_hits() const;
  std::uint64_t cache_misses() const;
  /// Stops the broker, then the workers (the broker's tick would restart them).
  void stop();

private:
  void start_workers(const optimize_options& options, const campaign_setup& setup);

  std::string run_id_;
  private_dir ipc_;
  broker_config config_;
  std::unique_ptr<broker> broker_;
  std::unique_ptr<local_workers> compile_pool_;
  std::vector<std::unique_ptr<local_workers>> proposer_pools_;
  std::unique_ptr<results_store> cache_index_;
  std::unique_ptr<artifact_store> artifacts_;
  std::unique_ptr<determinism_check_service> to_broker_;
  std::unique_ptr<cached_compile_service> cached_;
  bool stopped_ = false;
};

} // namespace rpl::engine
