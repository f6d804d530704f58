#include "stages/compare/comparison.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

namespace rpl::stages::compare {

namespace {

using nlohmann::json;

json optional_number(const std::optional<double>& value) {
  return value && std::isfinite(*value) ? json(*value) : json(nullptr);
}

json side_json(const side_summary& s) {
  return {{"inputs", s.inputs},
          {"databases", s.databases},
          {"runs", s.runs},
          {"dispatches", s.dispatches},
          {"gpu_time_ns", s.gpu_time_ns},
          {"critical_path_ns", optional_number(s.critical_path_ns)},
          {"makespan_ns", optional_number(s.makespan_ns)},
          {"counters", s.counters},
          {"store_run", s.store_run.empty() ? json(nullptr) : json(s.store_run)}};
}

json kernel_json(const kernel_change& k) {
  const bool both = k.verdict != kernel_verdict::added && k.verdict != kernel_verdict::removed;
  json interval = nullptr;
  if (both && k.interval.bounded)
    interval = {{"low", k.interval.low}, {"high", k.interval.high}};
  json out = {{"name", k.name},
              {"verdict", std::string(verdict_name(k.verdict))},
              {"base_shape", k.base_shape.empty() ? json(nullptr) : json(k.base_shape)},
              {"new_shape", k.new_shape.empty() ? json(nullptr) : json(k.new_shape)},
              {"base_dispatches", k.base_dispatches},
              {"new_dispatches", k.new_dispatches},
              {"base_median_ns", optional_number(k.base_median_ns)},
              {"new_median_ns", optional_number(k.new_median_ns)},
              {"base_total_ns", k.base_total_ns},
              {"new_total_ns", k.new_total_ns},
              {"ratio", both ? optional_number(k.interval.ratio) : json(nullptr)},
              {"interval", interval},
              {"noise", k.noise},
              {"measured_noise", k.measured_noise},
              {"critical_path_effect_ns", optional_number(k.critical_path_effect_ns)},
              {"critical_path_note", k.critical_path_note},
              {"reasons", k.reasons}};
  return out;
}

} // namespace

std::size_t count(const comparison& c, kernel_verdict verdict) {
  std::size_t n = 0;
  for (const auto& k : c.kernels)
    n += k.verdict == verdict ? 1 : 0;
  return n;
}

json to_json(const comparison& c) {
  json kernels = json::array();
  for (const auto& k : c.kernels)
    kernels.push_back(kernel_json(k));
  json summary = json::object();
  for (const auto v : {kernel_verdict::same, kernel_verdict::faster, kernel_verdict::slower,
                       kernel_verdict::ambiguous, kernel_verdict::added, kernel_verdict::removed})
    summary[std::string(verdict_name(v))] = count(c, v);
  json application = {{"gpu_time_ratio", c.base.gpu_time_ns > 0
                                             ? json(c.next.gpu_time_ns / c.base.gpu_time_ns)
                                             : json(nullptr)}};
  application["critical_path_ratio"] =
      c.base.critical_path_ns && c.next.critical_path_ns && *c.base.critical_path_ns > 0
          ? json(*c.next.critical_path_ns / *c.base.critical_path_ns)
          : json(nullptr);
  return {{"schema_version", "1.0"}, {"base", side_json(c.base)},  {"new", side_json(c.next)},
          {"noise", c.noise_floor},  {"confidence", c.confidence}, {"application", application},
          {"summary", summary},      {"kernels", kernels},         {"notes", c.notes}};
}

} // namespace rpl::stages::compare
