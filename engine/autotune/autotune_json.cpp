#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/autotune/autotune.hpp"
#include "stages/hardware/clock_events.hpp"

namespace rpl::engine {

namespace {

nlohmann::json stats_json(const stages::sample_stats& s) {
  return {{"n", s.n},          {"median_ns", s.median},
          {"mean_ns", s.mean}, {"stddev_ns", s.stddev},
          {"cv", s.cv},        {"min_ns", s.min},
          {"max_ns", s.max},   {"stability", stages::to_string(s.stability)}};
}

/// A violation time in ms, or null where NVML could not tell.
nlohmann::json violation_ms(std::int64_t ns) {
  return ns < 0 ? nlohmann::json(nullptr) : nlohmann::json(static_cast<double>(ns) / 1e6);
}

nlohmann::json clocks_json(const messages::gpu_clocks& k) {
  return {{"sm_mhz_before", k.sm_mhz_before},
          {"sm_mhz_after", k.sm_mhz_after},
          {"reasons_before", stages::clock_event_names(k.reasons_before)},
          {"reasons_after", stages::clock_event_names(k.reasons_after)},
          {"power_violation_ms", violation_ms(k.power_violation_ns)},
          {"thermal_violation_ms", violation_ms(k.thermal_violation_ns)},
          {"throttled", k.throttled}};
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
  j["sampling"] = c.sampling.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.sampling);
  j["noise"] =
      c.noise && std::isfinite(*c.noise) ? nlohmann::json(*c.noise) : nlohmann::json(nullptr);
  j["noisy"] = c.noisy;
  j["interval_ns"] = c.interval_low_ns
                         ? nlohmann::json::array({*c.interval_low_ns, *c.interval_high_ns})
                         : nlohmann::json(nullptr);
  j["race_bound_ns"] = c.race_bound_ns ? nlohmann::json(*c.race_bound_ns) : nlohmann::json(nullptr);
  j["clocks"] = c.clocks.read ? clocks_json(c.clocks) : nlohmann::json(nullptr);
  // Null where a store older than schema 4 did not record it.
  j["leftover_processes"] =
      c.leftover_processes ? nlohmann::json(*c.leftover_processes) : nlohmann::json(nullptr);
  j["lane"] = c.lane.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.lane);
  j["device"] = c.device_model.empty()
                    ? nlohmann::json(nullptr)
                    : nlohmann::json(c.device_model + " (" + c.device_uuid + ")");
  return j;
}

nlohmann::json pipeline_json(const pipeline_report& p) {
  nlohmann::json lanes = nlohmann::json::array();
  for (const auto& lane : p.lanes) {
    lanes.push_back({{"lane", lane.lane},
                     {"measurements", lane.measurements},
                     {"busy_s", std::chrono::duration<double>(lane.busy).count()},
                     {"window_s", std::chrono::duration<double>(lane.window).count()},
                     {"busy_fraction", lane.busy_fraction()}});
  }
  return {{"compile_bound_s", p.compile_bound_s},
          {"lane_bound_s", p.lane_bound_s},
          {"bound_ratio", p.bound_ratio},
          {"lanes", lanes}};
}

nlohmann::json number_or_null(double value) {
  return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
}

nlohmann::json broker_json(const broker_stats& b) {
  return {{"workers_seen", b.workers_seen},       {"workers_expired", b.workers_expired},
          {"jobs_requeued", b.jobs_requeued},     {"duplicate_replies", b.duplicate_replies},
          {"unknown_replies", b.unknown_replies}, {"malformed_messages", b.malformed_messages},
          {"peers_admitted", b.peers_admitted},   {"peers_refused", b.peers_refused},
          {"workers_benched", b.workers_benched}, {"toolchain_mismatches", b.toolchain_mismatches}};
}

} // namespace

nlohmann::json to_json(const final_round_result& f) {
  nlohmann::json finalists = nlohmann::json::array();
  for (const auto& c : f.finalists) {
    finalists.push_back({{"key", c.key},
                         {"median_ns", number_or_null(c.median_ns)},
                         {"low_ns", number_or_null(c.low_ns)},
                         {"high_ns", number_or_null(c.high_ns)},
                         {"relative_difference", number_or_null(c.relative_difference)},
                         {"relative_low", number_or_null(c.relative_low)},
                         {"relative_high", number_or_null(c.relative_high)},
                         {"separating_noise", number_or_null(c.separating_noise)},
                         {"tied", c.tied}});
  }
  return {{"lane", f.lane},
          {"rounds", f.rounds},
          {"confidence", f.confidence},
          {"noise_target", f.noise_target},
          {"winner", f.winner},
          {"tie_set", f.tie_set},
          {"finalists", finalists}};
}

std::optional<final_round_result> final_round_from_json(const nlohmann::json& doc) {
  auto number = [](const nlohmann::json& v) {
    return v.is_number() ? v.get<double>() : std::numeric_limits<double>::quiet_NaN();
  };
  try {
    final_round_result f;
    f.lane = doc.at("lane").get<std::string>();
    f.rounds = doc.at("rounds").get<std::uint32_t>();
    f.confidence = doc.at("confidence").get<double>();
    f.noise_target = doc.at("noise_target").get<double>();
    f.winner = doc.at("winner").get<std::string>();
    f.tie_set = doc.at("tie_set").get<std::vector<std::string>>();
    for (const auto& c : doc.at("finalists")) {
      finalist_result r;
      r.key = c.at("key").get<std::string>();
      r.median_ns = number(c.at("median_ns"));
      r.low_ns = number(c.at("low_ns"));
      r.high_ns = number(c.at("high_ns"));
      r.relative_difference = number(c.at("relative_difference"));
      r.relative_low = number(c.at("relative_low"));
      r.relative_high = number(c.at("relative_high"));
      r.separating_noise = number(c.at("separating_noise"));
      r.tied = c.at("tied").get<bool>();
      f.finalists.push_back(std::move(r));
    }
    return f;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

nlohmann::json to_json(const autotune_result& result) {
  nlohmann::json doc;
  doc["schema_version"] = "1.6";
  doc["run_id"] = result.run_id;
  doc["status"] = result.run_status;
  doc["db"] = result.db.string();
  doc["backend"] = result.lane_kind.empty() ? "timing" : result.lane_kind;
  doc["noise_target"] =
      result.noise_target ? nlohmann::json(*result.noise_target) : nlohmann::json(nullptr);
  doc["devices"] = result.devices;
  doc["final_round"] = result.final_round ? to_json(*result.final_round) : nlohmann::json(nullptr);
  doc["model"] = result.model;
  doc["space_measured_fraction"] =
      result.space_size > 0
          ? static_cast<double>(result.candidates.size()) / static_cast<double>(result.space_size)
          : 0.0;
  doc["winner_note"] =
      result.winner_note.empty() ? nlohmann::json(nullptr) : nlohmann::json(result.winner_note);
  doc["space"] = {{"size", result.space_size},
                  {"total", result.space_total},
                  {"cut_by_constraints", result.cut_by_constraints}};
  doc["strategy"] = result.strategy;
  doc["order"] = {{"prior_run", result.prior_run.empty() ? nlohmann::json(nullptr)
                                                         : nlohmann::json(result.prior_run)},
                  {"prior_known", result.prior_known}};
  doc["counts"] = {{"planned", result.counts.planned},      {"completed", result.counts.completed},
                   {"compiled", result.counts.compiled},    {"measured", result.counts.measured},
                   {"failed", result.counts.failed},        {"resumed", result.counts.resumed},
                   {"duplicates", result.counts.duplicates}};
  doc["compile_workers"] = result.compile_workers;
  doc["lanes"] = result.lanes;
  doc["wall_s"] = result.wall_s;
  doc["broker"] = broker_json(result.broker);
  doc["broker"]["local_fallback_workers"] = result.fallback_workers;
  doc["determinism"] = {{"fraction", result.determinism.fraction},
                        {"checked", result.determinism.checked},
                        {"mismatched", result.determinism.mismatched},
                        {"skipped", result.determinism.skipped}};
  doc["compile_cache"] = {{"hits", result.compile_cache.hits},
                          {"compiled", result.compile_cache.compiled}};
  doc["pipeline"] = pipeline_json(result.pipeline);
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
  std::sort(valid.begin(), valid.end(),
            [](const auto* a, const auto* b) { return a->stats.median < b->stats.median; });
  nlohmann::json best = nlohmann::json::array();
  for (std::size_t i = 0; i < valid.size() && i < 10; ++i) {
    best.push_back(candidate_json(*valid[i]));
  }
  doc["best"] = best;
  doc["candidates"] = all;
  doc["error"] = result.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(result.error);
  return doc;
}

} // namespace rpl::engine
