#include "stages/compare/change_reasons.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <utility>

#include "stages/hardware/occupancy_model.hpp"

namespace rpl::stages::compare {

namespace {

std::string number(double value) {
  char text[48];
  if (std::abs(value) >= 1e6 || (std::abs(value) < 0.01 && value != 0))
    std::snprintf(text, sizeof text, "%.3g", value);
  else if (value == std::floor(value))
    std::snprintf(text, sizeof text, "%.0f", value);
  else
    std::snprintf(text, sizeof text, "%.2f", value);
  return text;
}

void add_change(std::vector<std::string>& out,
                const char* what,
                std::int64_t a,
                std::int64_t b,
                const char* unit = "") {
  if (a != b)
    out.push_back(std::string(what) + " " + std::to_string(a) + unit + " → " + std::to_string(b) +
                  unit);
}

void add_shape(std::vector<std::string>& out, const launch_samples* a, const launch_samples* b) {
  if (a == nullptr || b == nullptr)
    return;
  if (a->grid != b->grid)
    out.push_back("grid " + format_dim(a->grid) + " → " + format_dim(b->grid));
  if (a->block != b->block)
    out.push_back("block " + format_dim(a->block) + " → " + format_dim(b->block));
}

void add_resources(std::vector<std::string>& out, const kernel_report& a, const kernel_report& b) {
  if (a.resources && b.resources) {
    add_change(out, "registers", a.resources->vgpr, b.resources->vgpr);
    add_change(out, "accumulation registers", a.resources->agpr, b.resources->agpr);
    add_change(out, "scalar registers", a.resources->sgpr, b.resources->sgpr);
    add_change(out, "scratch", a.resources->scratch_bytes, b.resources->scratch_bytes,
               " B per work-item");
  }
  if (a.launch_lds_bytes && b.launch_lds_bytes)
    add_change(out, "LDS/shared memory", *a.launch_lds_bytes, *b.launch_lds_bytes, " B per block");
  if (a.occupancy && b.occupancy) {
    const auto& x = a.occupancy->result;
    const auto& y = b.occupancy->result;
    const long pa = std::lround(100.0 * x.occupancy), pb = std::lround(100.0 * y.occupancy);
    if (pa != pb)
      out.push_back("occupancy " + std::to_string(pa) + " % → " + std::to_string(pb) +
                    " % (limited by " + std::string(to_string(y.limiter)) + ")");
  }
}

void add_counters(std::vector<std::string>& out,
                  const rocpd::kernel_counters* a,
                  const rocpd::kernel_counters* b) {
  if (a == nullptr || b == nullptr)
    return;
  std::vector<std::pair<double, std::string>> changes;
  for (const auto& [name, total] : a->counters) {
    const auto other = b->counters.find(name);
    if (other == b->counters.end() || total.dispatches == 0 || other->second.dispatches == 0)
      continue;
    const double before = total.sum / static_cast<double>(total.dispatches);
    const double after = other->second.sum / static_cast<double>(other->second.dispatches);
    const double scale = std::max(std::abs(before), std::abs(after));
    if (scale <= 0 || std::abs(after - before) / scale < counter_change_floor)
      continue;
    changes.emplace_back(std::abs(after - before) / scale,
                         name + " " + number(before) + " → " + number(after) + " per dispatch");
  }
  std::stable_sort(changes.begin(), changes.end(),
                   [](const auto& x, const auto& y) { return x.first > y.first; });
  for (std::size_t i = 0; i < changes.size() && i < counter_sentences; ++i)
    out.push_back(changes[i].second);
}

} // namespace

std::vector<std::string> change_reasons(const kernel_evidence& base, const kernel_evidence& next) {
  std::vector<std::string> out;
  add_shape(out, base.launch, next.launch);
  if (base.report != nullptr && next.report != nullptr)
    add_resources(out, *base.report, *next.report);
  add_counters(out, base.counters, next.counters);
  return out;
}

} // namespace rpl::stages::compare
