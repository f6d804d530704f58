#pragma once
/// What every room of a proposal's journey reads about the kernel being optimized (set once,
/// before the graph runs): the target, the settings, the services, and the original kernel as
/// built and parsed. Also the lane-side steps the guards and the comparison share: the lane
/// requests for a code object, validation against the original, the paired rounds.

#include <atomic>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/optimize/attempt_outcome.hpp"
#include "engine/optimize/kernel_optimizer.hpp"
#include "stages/optimize/paired_verdict.hpp"
#include "stages/optimize/source_model.hpp"
#include "workers/lanes/lane_backend.hpp"

namespace rpl::workers {
class lane_backend;
}

namespace rpl::engine {

/// The user's kernel as built and parsed at the start: what "right" and "the same ABI" mean.
struct original_kernel {
  stages::optimize::source_model model;
  std::filesystem::path artifact;
  std::vector<std::byte> bytes;
  messages::compile_reply reply;
};

/// A validation case that did not match: which one and why (the finding names the case).
struct validation_failure {
  attempt_finding finding = attempt_finding::none;
  std::string detail; ///< "odd size N=3071, seed 7: outputs differ from the original's: ..."
  bool outputs_differ = false; ///< the lane ran it and the outputs differed (not a lane failure)
};

class journey_context {
public:
  journey_context(const kernel_target& target,
                  const optimizer_settings& settings,
                  const optimizer_services& services,
                  const std::atomic<bool>& stop);

  const kernel_target& target() const { return target_; }
  const optimizer_settings& settings() const { return settings_; }
  const optimizer_services& services() const { return services_; }
  const original_kernel& original() const { return original_; }
  void set_original(original_kernel original) { original_ = std::move(original); }
  /// While true, validate() runs the original kernel against itself: a case marked optional
  /// (a size under one block, misaligned buffers) that it fails is dropped for every candidate.
  void set_validating_original(bool on) { validating_original_ = on; }
  /// Without a profile (--launch): the original's resources and occupancy from the static
  /// screen, for the proposers.
  const std::string& static_analysis() const { return static_analysis_; }
  void set_static_analysis(std::string text) { static_analysis_ = std::move(text); }
  bool replay() const { return !target_.replay_dir.empty(); }
  /// A signal, or --time-budget spent.
  bool out_of_time() const;
  const std::atomic<bool>& stop() const { return stop_; }

  /// Parses `text` as the target's source (libclang); nullopt with `error` set when it cannot.
  std::optional<stages::optimize::source_model> parse(const std::string& text,
                                                      std::string& error) const;
  /// The build of the target's sources with `text` in place of the target's file (the user's
  /// build template, {OUT} left for the worker).
  messages::compile_request compile_request(const std::string& text) const;
  /// A proposer's request about `text`: the target, its language and parser flags, the block size
  /// and the static analysis; the caller adds the history, the round and the limits.
  messages::propose_request propose_request(const std::string& text) const;
  /// The launch file resolved at `spec`'s sizes, with the original kernel as the reference its
  /// outputs are compared with; nullopt with `error` when the sizes cannot be expressed.
  std::optional<messages::kernel_launch> resolve(const stages::launch_spec& spec,
                                                 std::string& error) const;
  /// The lane request that runs `artifact` (its launch: the kernel lane's; none: the replay's).
  messages::measure_request lane_request(const std::filesystem::path& artifact,
                                         const std::optional<messages::kernel_launch>& launch,
                                         std::uint32_t runs,
                                         std::uint32_t warmup) const;
  /// Runs every validation case of `artifact` on `lane` (the launch file's three, or the captured
  /// dispatch) and writes their outcomes into `record`; nullopt when every case matched.
  std::optional<validation_failure> validate(workers::lane_backend& lane,
                                             const std::filesystem::path& artifact,
                                             nlohmann::json& record) const;
  /// What the sanitizer pass runs for `artifact`: memcheck and initcheck at the odd validation
  /// size (tails and partial tiles run, at a fraction of the launch size's work), else the launch
  /// size; racecheck and synccheck at the hazard size (stages/optimize/validation_plan.hpp);
  /// nothing for a captured dispatch.
  workers::sanitizer_plan sanitizer_plan(const std::filesystem::path& artifact) const;
  /// Interleaved paired rounds of `incumbent` and `challenger` on `lane`, judged
  /// (stages/optimize/paired_verdict); the figures go into `record`.
  stages::optimize::paired_verdict compare(workers::lane_backend& lane,
                                           const std::filesystem::path& incumbent,
                                           const std::filesystem::path& challenger,
                                           std::uint32_t rounds,
                                           nlohmann::json& record) const;

  /// Held by source_rules around a knob configuration's check, so that the configurations
  /// behind the first wait for its verdict instead of each parsing too.
  std::unique_lock<std::mutex> knob_guard_lock() const;
  /// The source guard's verdicts shared by a knob search's configurations (source_rules): texts,
  /// less the knobs' values (stages/optimize/tunable_macros.hpp), that passed it with every knob
  /// used only inside the target's body. Only under `held`, knob_guard_lock()'s lock.
  bool knob_text_passed(const std::unique_lock<std::mutex>& held, const std::string& key) const;
  void remember_knob_text(const std::unique_lock<std::mutex>& held, std::string key) const;

private:
  const kernel_target& target_;
  const optimizer_settings& settings_;
  const optimizer_services& services_;
  const std::atomic<bool>& stop_;
  original_kernel original_;
  std::string static_analysis_;
  mutable std::atomic<std::uint64_t> lane_sequence_{0};
  /// Set while the original validates against itself (before the graph runs, one thread): an
  /// optional case it fails goes into dropped_cases_ (by index), which candidates then skip.
  bool validating_original_ = false;
  mutable std::set<std::size_t> dropped_cases_;
  mutable std::mutex knob_guard_mutex_;
  mutable std::set<std::string> knob_texts_passed_; ///< under knob_guard_mutex_
};

/// `text` cut to `limit` bytes, marked as cut.
std::string clip_detail(std::string text, std::size_t limit = 4000);

} // namespace rpl::engine
