#include <algorithm>

#include "engine/autotune/autotune.hpp"

namespace rpl::engine {

namespace {

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

nlohmann::json broker_json(const broker_stats& b) {
  return {{"workers_seen", b.workers_seen},           {"workers_expired", b.workers_expired},
          {"jobs_requeued", b.jobs_requeued},         {"duplicate_replies", b.duplicate_replies},
          {"unknown_replies", b.unknown_replies},     {"malformed_messages", b.malformed_messages}};
}

}  // namespace

nlohmann::json to_json(const autotune_result& result) {
  nlohmann::json doc;
  doc["schema_version"] = "1.1";
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
  doc["broker"] = broker_json(result.broker);
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
