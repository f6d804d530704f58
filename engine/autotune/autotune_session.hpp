#pragma once
/// One autotune run as the tuning graph's policy: it makes candidates in the strategy's order
/// (keys, resume, duplicates), stores artifacts, judges against the incumbent, writes each finished
/// candidate and gives every result back to the strategy. It owns the run's results store.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "engine/autotune/autotune.hpp"
#include "engine/autotune/autotune_inputs.hpp"
#include "engine/graph/tuning_policy.hpp"
#include "engine/store/artifact_store.hpp"
#include "engine/store/results_store.hpp"
#include "engine/store/run_lease.hpp"
#include "stages/search/acceptance.hpp"
#include "stages/search/compile_cost.hpp"

namespace rpl::engine {

class autotune_session final : public tuning_policy {
public:
  using progress_fn = std::function<void(const autotune_progress&)>;
  autotune_session(const autotune_options& options,
                   autotune_inputs& inputs,
                   const progress_fn& on_progress,
                   const std::atomic<bool>& stop);

  /// Opens the results store and the artifact folder, then creates a new run or finds the one to
  /// resume. Throws config_error (nothing to resume, unwritable folder) or store_error.
  void open();

  candidate_ptr next_candidate() override;
  void on_compiled(candidate_state& c, const messages::compile_reply& reply) override;
  /// The broker's order of queued compiles (broker_config::rank): the expected compile seconds
  /// of the request's configuration, learned from the builds so far (longest first).
  double compile_rank(const messages::compile_request& request) const;
  std::string build_failure(const candidate_state& c) const override;
  std::optional<std::string> screen(candidate_state& c) override;
  void judge(candidate_state& c) override;
  void record(candidate_state& c) override;
  void observe(const candidate_state& c) override;
  /// A signal asked to stop, or the run failed.
  bool stopping() const override { return stop_ || failed_; }

  /// Fails the run for `why` (the first reason wins): no new candidate starts, those waiting are
  /// dropped; what is measured already is still stored. Any thread.
  void fail(const std::string& why);
  /// The run failed (the store node could not write, or fail() was called).
  bool failed() const { return failed_; }
  std::string failure() const;
  const std::string& run_id() const { return run_id_; }
  results_store& store() { return *store_; }
  /// `<db>.artifacts/`, content-addressed.
  const artifact_store& artifacts() const { return *artifacts_; }
  /// The counts as the store node saw them, with the resumed and duplicate counts added.
  autotune_counts counts() const;
  std::string winner_key() const { return best_ ? best_->key : std::string(); }
  std::int64_t sum_compile_ns() const { return sum_compile_ns_; }
  std::int64_t sum_run_ns() const { return sum_run_ns_; }
  /// The earlier run whose medians order this exhaustive sweep (apply_prior_order), and how many
  /// of the space's configurations it measured; empty: space order.
  const std::string& prior_run() const { return prior_run_; }
  std::size_t prior_known() const { return prior_known_; }

  /// A candidate measured validly in this session, with what re-measures it (the final round).
  struct measured_candidate {
    std::string key;
    nlohmann::json params;
    std::vector<std::int64_t> samples_ns;
    messages::measure_request request;
    bool noisy = false;
  };
  /// Every valid candidate of this session, in completion order (read after the graph finished).
  const std::vector<measured_candidate>& measured() const { return measured_; }

private:
  void create_run();
  void resume_run();
  /// An exhaustive sweep measures what the last finished run of the same fingerprint measured
  /// first, fastest first (stages/search/prior_order.hpp), unless --no-prior-order.
  void apply_prior_order();
  /// Takes the run's exclusive lease (store/run_lease.hpp) for this session; throws config_error
  /// naming the process that holds it.
  void take_lease(const std::string& run_id);
  /// A candidate for space index `index`, or nullptr when its key is done or already seen.
  candidate_ptr make_candidate(std::size_t index);
  /// `c`'s compile request; built once, when the candidate is made.
  messages::compile_request make_compile_request(const candidate_state& c) const;
  /// `c`'s measure request, its `{BIN}` left for the stored artifact's path (resolve_bin); built
  /// once, when the candidate is made.
  messages::measure_request make_measure_request(const candidate_state& c) const;
  void report(const candidate_state& c);

  const autotune_options& options_;
  autotune_inputs& inputs_;
  const progress_fn& on_progress_;
  const std::atomic<bool>& stop_;

  /// Held from create_run() or resume_run() to the end; declared first, released last.
  std::optional<run_lease> lease_;
  std::unique_ptr<results_store> store_;
  std::unique_ptr<artifact_store> artifacts_;
  std::string run_id_;
  std::string prior_run_;
  std::size_t prior_known_ = 0;
  std::unordered_map<std::string, stored_candidate> completed_; ///< earlier sessions, by key
  std::unordered_set<std::string> seen_keys_;
  std::uint64_t proposed_ = 0;               ///< candidates made so far (the planner's thread only)
  std::optional<stages::incumbent> best_;    // acceptance node only
  std::optional<stored_candidate> best_row_; // store node only
  autotune_counts counts_;                   // store node only
  // next_candidate() runs in the feedback node while the store node reads these.
  std::atomic<std::size_t> resumed_{0};
  std::atomic<std::size_t> duplicates_{0};
  std::int64_t sum_compile_ns_ = 0;
  std::int64_t sum_run_ns_ = 0;
  std::chrono::steady_clock::time_point started_;
  /// Appended by the store node and, for candidates done in an earlier session, by
  /// next_candidate() in the feedback node, which may run beside it.
  std::vector<measured_candidate> measured_; // guarded by measured_mutex_
  std::mutex measured_mutex_;
  mutable std::mutex compile_cost_mutex_;
  std::optional<stages::compile_cost_model> compile_cost_; ///< made at the first compile reply
  std::atomic<bool> fatal_{false};  ///< the store cannot write: nothing more is stored
  std::atomic<bool> failed_{false}; ///< the run failed (a store error or fail())
  std::mutex screen_mutex_;
  std::unordered_set<std::string> screen_notes_; ///< why candidates were not screened, logged once
  mutable std::mutex failure_mutex_;
  std::string failure_; // guarded by failure_mutex_
};

} // namespace rpl::engine
