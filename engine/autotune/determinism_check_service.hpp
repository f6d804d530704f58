#pragma once
/// The determinism check (issue 13, --determinism-check FRACTION): the compile service in front of
/// the broker, which sends a chosen fraction of builds a second time to another worker and compares
/// the two artifacts' content hashes. A difference is reported (a warning naming both workers, a
/// row in the store's determinism_checks, the JSON's determinism.mismatched), never hidden; the
/// candidate goes on with the first artifact either way. The choice is by build key, so a rerun
/// checks the same builds. A build is not checked when it failed, when only one worker is
/// connected, or when its second build fails (counted as skipped).

#include <atomic>
#include <cstdint>
#include <string>

#include "engine/broker/broker.hpp"
#include "engine/graph/compile_service.hpp"
#include "engine/store/results_store.hpp"

namespace rpl::engine {

class determinism_check_service final : public compile_service {
public:
  /// `fraction` in [0, 1]; 0 sends every request to the broker once. `local_workers`: the engine's
  /// own workers; with two or more, a second build always waits for the other one (it may still be
  /// starting), else it is skipped while fewer than two workers are connected.
  determinism_check_service(broker& b,
                            std::string run_id,
                            double fraction,
                            results_store& store,
                            std::size_t local_workers);

  void submit(messages::compile_request request, reply_fn on_reply) override;

  /// True when the build with this key (cached_compile_service.hpp's build_key) is checked at
  /// `fraction`: its first 64 bits, read as a fraction of 2^64, are below it.
  static bool chosen(const std::string& build_key, double fraction);

  std::uint64_t checked() const { return checked_; }       ///< compared on two workers
  std::uint64_t mismatched() const { return mismatched_; } ///< of those, the artifacts differed
  std::uint64_t skipped() const { return skipped_; }       ///< chosen but not compared

private:
  void compare(const std::string& key,
               const messages::compile_reply& first,
               const messages::compile_reply& second);

  broker& broker_;
  std::string run_id_;
  double fraction_;
  results_store& store_;
  std::size_t local_workers_;
  std::atomic<std::uint64_t> checked_{0};
  std::atomic<std::uint64_t> mismatched_{0};
  std::atomic<std::uint64_t> skipped_{0};
};

} // namespace rpl::engine
