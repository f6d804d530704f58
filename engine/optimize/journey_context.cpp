#include "engine/optimize/journey_context.hpp"

#include <cassert>
#include <cmath>
#include <limits>

#include "engine/campaign/interleaved_rounds.hpp"
#include "stages/optimize/validation_plan.hpp"
#include "workers/lanes/lane_backend.hpp"

namespace rpl::engine {

namespace {

namespace opt = stages::optimize;

/// The finding for a failed validation case: the size it ran at.
attempt_finding finding_of_case(opt::validation_size size) {
  switch (size) {
  case opt::validation_size::odd: return attempt_finding::validation_odd_size;
  case opt::validation_size::smaller: return attempt_finding::validation_smaller_size;
  case opt::validation_size::tiny: return attempt_finding::validation_tiny_size;
  case opt::validation_size::misaligned: return attempt_finding::validation_misaligned;
  case opt::validation_size::launch: break;
  }
  return attempt_finding::validation_launch_size;
}

/// The finding of a lane check that refused the case (red zones, inputs, determinism), if any.
std::optional<attempt_finding> lane_check_finding(const messages::measure_result& result) {
  if (result.finding.empty()) {
    return std::nullopt;
  }
  return parse_finding(result.finding);
}

} // namespace

std::unique_lock<std::mutex> journey_context::knob_guard_lock() const {
  return std::unique_lock(knob_guard_mutex_);
}

bool journey_context::knob_text_passed([[maybe_unused]] const std::unique_lock<std::mutex>& held,
                                       const std::string& key) const {
  assert(held.mutex() == &knob_guard_mutex_ && held.owns_lock());
  return knob_texts_passed_.contains(key);
}

void journey_context::remember_knob_text([[maybe_unused]] const std::unique_lock<std::mutex>& held,
                                         std::string key) const {
  assert(held.mutex() == &knob_guard_mutex_ && held.owns_lock());
  knob_texts_passed_.insert(std::move(key));
}

std::string clip_detail(std::string text, std::size_t limit) {
  if (text.size() > limit) {
    text.resize(limit);
    text += "\n[... cut]";
  }
  return text;
}

journey_context::journey_context(const kernel_target& target,
                                 const optimizer_settings& settings,
                                 const optimizer_services& services,
                                 const std::atomic<bool>& stop)
    : target_(target), settings_(settings), services_(services), stop_(stop) {}

bool journey_context::out_of_time() const {
  return stop_ || (settings_.deadline && std::chrono::steady_clock::now() >= *settings_.deadline);
}

std::optional<opt::source_model> journey_context::parse(const std::string& text,
                                                        std::string& error) const {
  return services_.parse(text, error);
}

messages::compile_request journey_context::compile_request(const std::string& text) const {
  messages::compile_request request;
  request.sources = target_.sources;
  const std::string name = target_.source_path.filename().string();
  for (auto& s : request.sources) {
    if (s.name == name) {
      s.content = text;
    }
  }
  request.argv = target_.build_argv;
  request.deadline_ms = 600000;
  return request;
}

std::optional<messages::kernel_launch> journey_context::resolve(const stages::launch_spec& spec,
                                                                std::string& error) const {
  auto resolved = stages::resolve_launch(spec, target_.config);
  if (!resolved.ok()) {
    error = resolved.error;
    return std::nullopt;
  }
  auto launch = std::move(*resolved.launch);
  // The original kernel defines "right", at the same geometry (its ABI is the candidate's).
  messages::kernel_reference ref;
  ref.code_object_path = original_.artifact.string();
  ref.symbol = launch.symbol;
  ref.grid = launch.grid;
  ref.block = launch.block;
  ref.shared_bytes = launch.shared_bytes;
  launch.reference = ref;
  return launch;
}

messages::measure_request
journey_context::lane_request(const std::filesystem::path& artifact,
                              const std::optional<messages::kernel_launch>& launch,
                              std::uint32_t runs,
                              std::uint32_t warmup) const {
  messages::measure_request request;
  request.candidate_key = target_.kernel + "#" + std::to_string(++lane_sequence_);
  request.argv = {artifact.string()};
  if (replay() && !target_.symbol.empty()) {
    request.argv.push_back(target_.symbol);
  }
  request.runs = runs;
  request.warmup = warmup;
  request.timeout_ms = settings_.lane_timeout_ms;
  request.launch = launch;
  request.fixed_count = true;
  return request;
}

std::optional<validation_failure> journey_context::validate(workers::lane_backend& lane,
                                                            const std::filesystem::path& artifact,
                                                            nlohmann::json& record) const {
  record = nlohmann::json::array();
  const auto outcome = [&](const std::string& label, const messages::measure_result& result) {
    const bool ok = result.status == messages::measure_status::ok;
    record.push_back({{"case", label},
                      {"status", ok ? "matched" : messages::to_string(result.status)},
                      {"reason", result.reason}});
    return ok;
  };
  if (replay()) {
    // The replay restores the captured memory and compares the candidate's outputs with what the
    // original kernel wrote in the application.
    const std::string label = "captured dispatch " + target_.replay_dir.filename().string();
    const auto result = lane.measure(lane_request(artifact, std::nullopt, 1, 0));
    if (outcome(label, result)) {
      return std::nullopt;
    }
    if (const auto check = lane_check_finding(result)) {
      return validation_failure{*check, label + ": " + result.reason, false};
    }
    return validation_failure{attempt_finding::validation_captured,
                              label + ": " + messages::to_string(result.status) + ": " +
                                  result.reason,
                              result.status == messages::measure_status::nonzero_exit};
  }
  const auto cases = opt::validation_cases(target_.launch, settings_.seed);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    if (dropped_cases_.contains(i)) {
      record.push_back({{"case", c.label},
                        {"status", "not_run"},
                        {"reason", "dropped: the original kernel fails this case itself"}});
      continue;
    }
    std::string error;
    auto launch = resolve(c.spec, error);
    if (!launch) {
      record.push_back({{"case", c.label}, {"status", "not_run"}, {"reason", error}});
      continue; // a size the launch file cannot express is not the candidate's fault
    }
    launch->strict = true;
    launch->offset_bytes = c.offset_bytes;
    const auto result = lane.measure(lane_request(artifact, *launch, 1, 0));
    if (outcome(c.label, result)) {
      continue;
    }
    if (validating_original_ && c.optional) {
      // Not every kernel supports a size under one block or misaligned buffers; a candidate need
      // not either where the original does not.
      dropped_cases_.insert(i);
      record.back()["status"] = "dropped";
      continue;
    }
    if (const auto check = lane_check_finding(result)) {
      return validation_failure{*check, c.label + ": " + result.reason, false};
    }
    // Outputs unlike the reference's: wrong_result from the kernel lane, a non-zero exit from a
    // program that checks them itself.
    const bool differ = result.status == messages::measure_status::nonzero_exit ||
                        result.status == messages::measure_status::wrong_result;
    return validation_failure{finding_of_case(c.size),
                              c.label + ": " +
                                  (differ
                                       ? "outputs differ from the original kernel's: "
                                       : std::string(messages::to_string(result.status)) + ": ") +
                                  result.reason,
                              differ};
  }
  return std::nullopt;
}

workers::sanitizer_plan
journey_context::sanitizer_plan(const std::filesystem::path& artifact) const {
  workers::sanitizer_plan plan;
  if (replay()) {
    return plan;
  }
  std::string error;
  std::optional<messages::kernel_launch> memory;
  for (const auto& c : opt::validation_cases(target_.launch, settings_.seed)) {
    if (c.size == opt::validation_size::odd && c.offset_bytes == 0) {
      memory = resolve(c.spec, error);
    }
  }
  if (!memory) {
    memory = resolve(target_.launch, error);
  }
  if (!memory) {
    return plan;
  }
  plan.memory.push_back(lane_request(artifact, *memory, 1, 0));
  if (const auto hazards = resolve(opt::hazard_case(target_.launch, settings_.seed).spec, error)) {
    plan.hazards.push_back(lane_request(artifact, *hazards, 1, 0));
  }
  return plan;
}

opt::paired_verdict journey_context::compare(workers::lane_backend& lane,
                                             const std::filesystem::path& incumbent,
                                             const std::filesystem::path& challenger,
                                             std::uint32_t rounds,
                                             nlohmann::json& record) const {
  std::string error;
  const auto launch = replay() ? std::nullopt : resolve(target_.launch, error);
  std::vector<std::vector<double>> values(
      2, std::vector<double>(rounds, std::numeric_limits<double>::quiet_NaN()));
  std::string spot_finding; // the challenger's: a check of the timed phase refused it
  std::string spot_detail;
  if (launch || replay()) {
    round_plan plan;
    plan.rounds = rounds;
    plan.runs_per_round = settings_.runs_per_round;
    plan.warmup_every_round = true;
    std::vector<messages::measure_request> sides = {
        lane_request(incumbent, launch, settings_.runs_per_round, 1),
        lane_request(challenger, launch, settings_.runs_per_round, 1)};
    for (auto& side : sides) {
      side.spot_checks = 1; // each round: one timed launch on restored buffers, checked
    }
    run_interleaved_rounds(
        sides, plan,
        [&](const messages::measure_request& r) {
          auto result = lane.measure(r);
          // Wrong outputs in the rounds (a spot check, or a round's checked launch) are the
          // timed phase's finding: validation passed, so the kernel changed its behaviour.
          if (result.status == messages::measure_status::wrong_result && spot_finding.empty() &&
              r.argv.front() == challenger.string()) {
            spot_finding = result.finding.empty() ? "timed_phase" : result.finding;
            spot_detail = result.reason;
          }
          return result;
        },
        stop_, values);
  }
  stages::finalist_config config;
  config.target_noise = settings_.noise_target;
  auto verdict = opt::judge_pair(values[0], values[1], config);
  record = {{"incumbent_ns", values[0]},
            {"candidate_ns", values[1]},
            {"incumbent_median_ns", verdict.incumbent_median_ns},
            {"candidate_median_ns", verdict.candidate_median_ns},
            {"relative_change", verdict.relative_change.median},
            {"interval", {verdict.relative_change.low, verdict.relative_change.high}},
            {"confidence", verdict.relative_change.confidence},
            {"separating_noise", verdict.separating_noise},
            {"rounds", verdict.rounds},
            {"outcome", opt::to_string(verdict.outcome)},
            {"summary", verdict.summary}};
  if (!error.empty()) {
    record["error"] = error;
  }
  if (!spot_finding.empty()) {
    record["finding"] = spot_finding;
    record["finding_detail"] = spot_detail;
  }
  return verdict;
}

messages::propose_request journey_context::propose_request(const std::string& text) const {
  messages::propose_request request;
  request.kernel = target_.kernel;
  request.source_name = target_.source_path.filename().string();
  request.source = text;
  request.language = target_.language;
  request.compile_flags = target_.compile_flags;
  request.block_threads = target_.block_threads;
  request.analysis = target_.analysis.empty() ? static_analysis() : target_.analysis;
  return request;
}

} // namespace rpl::engine
