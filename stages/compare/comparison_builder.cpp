#include "stages/compare/comparison_builder.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "stages/compare/change_reasons.hpp"
#include "stages/compare/kernel_matching.hpp"

namespace rpl::stages::compare {

namespace {

/// An effect on the critical path under this share of the kernel's own change of GPU time is
/// "nothing": slack absorbed the change.
constexpr double negligible_share = 0.01;

void fill_summary(side_summary& s, const side_input& in) {
  s.gpu_time_ns = in.report->stability.median_ns;
  s.dispatches = 0;
  if (!s.store_run.empty()) { // a results store: its samples, no kernels or timeline
    for (const auto& l : *in.launches)
      s.dispatches += l.durations_ns.size();
    return;
  }
  for (const auto& k : in.report->kernels)
    s.dispatches += k.runtime.count;
  if (in.path != nullptr && !in.path->kernels.empty()) {
    s.critical_path_ns = in.path->path_ns;
    s.makespan_ns = in.path->makespan_ns;
  }
}

std::map<std::string, const kernel_report*> reports_by_name(const profile_report& report) {
  std::map<std::string, const kernel_report*> out;
  for (const auto& k : report.kernels)
    out.emplace(k.runtime.name, &k);
  return out;
}

/// The side's evidence about `launch` (null: none).
kernel_evidence evidence_of(const side_input& in,
                            const std::map<std::string, const kernel_report*>& reports,
                            const launch_samples* launch) {
  kernel_evidence e;
  e.launch = launch;
  if (launch == nullptr)
    return e;
  if (const auto r = reports.find(launch->name); r != reports.end())
    e.report = r->second;
  if (in.counters != nullptr)
    if (const auto c = in.counters->find(rocpd::kernel_key(launch->name)); c != in.counters->end())
      e.counters = &c->second;
  return e;
}

double sum(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0);
}

double path_time_of(const analysis::critical_path_result* path, const std::string& name) {
  if (path != nullptr)
    for (const auto& k : path->kernels)
      if (k.name == name)
        return k.critical_path_ns;
  return 0.0;
}

std::string milliseconds_text(double ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f ms", ns / 1e6);
  return text;
}

/// A row for a launch only one side has: its critical-path time there says what it weighs.
kernel_change one_sided(const launch_match& m, const side_input& base, const side_input& next) {
  kernel_change row;
  const launch_samples& l = m.base != nullptr ? *m.base : *m.next;
  const bool gone = m.base != nullptr;
  row.name = l.name;
  (gone ? row.base_shape : row.new_shape) = describe_shape(l.grid, l.block);
  const side_input& side = gone ? base : next;
  const double runs = static_cast<double>(std::max<std::size_t>(1, side.summary.runs));
  (gone ? row.base_dispatches : row.new_dispatches) = l.durations_ns.size();
  (gone ? row.base_total_ns : row.new_total_ns) = sum(l.durations_ns) / runs;
  row.verdict = gone ? kernel_verdict::removed : kernel_verdict::added;
  const double on_path = path_time_of(side.path, l.name);
  row.critical_path_note = std::string(gone ? "only in BASE" : "only in NEW") + ": " +
                           milliseconds_text(on_path) + " on " + (gone ? "BASE" : "NEW") +
                           "'s critical path";
  return row;
}

kernel_change matched(const launch_match& m,
                      const side_input& base,
                      const side_input& next,
                      const compare_settings& settings) {
  kernel_change row;
  row.name = m.base->name;
  if (m.by_shape || m.base->grid != m.next->grid || m.base->block != m.next->block) {
    row.base_shape = describe_shape(m.base->grid, m.base->block);
    row.new_shape = describe_shape(m.next->grid, m.next->block);
  }
  row.base_dispatches = m.base->durations_ns.size();
  row.new_dispatches = m.next->durations_ns.size();
  row.base_total_ns =
      sum(m.base->durations_ns) / static_cast<double>(std::max<std::size_t>(1, base.summary.runs));
  row.new_total_ns =
      sum(m.next->durations_ns) / static_cast<double>(std::max<std::size_t>(1, next.summary.runs));
  row.interval = median_ratio(m.base->durations_ns, m.next->durations_ns, settings.confidence);
  if (std::isfinite(row.interval.base_median_ns))
    row.base_median_ns = row.interval.base_median_ns;
  if (std::isfinite(row.interval.new_median_ns))
    row.new_median_ns = row.interval.new_median_ns;
  row.measured_noise =
      std::max(run_noise(m.base->run_medians_ns), run_noise(m.next->run_medians_ns));
  row.noise = std::max(settings.noise, row.measured_noise);
  row.verdict = judge(row.interval, row.noise);
  return row;
}

int verdict_rank(kernel_verdict v) {
  switch (v) {
  case kernel_verdict::slower: return 0;
  case kernel_verdict::faster: return 1;
  case kernel_verdict::ambiguous: return 2;
  case kernel_verdict::added: return 3;
  case kernel_verdict::removed: return 4;
  case kernel_verdict::same: return 5;
  }
  return 6;
}

} // namespace

comparison
build_comparison(const side_input& base, const side_input& next, const compare_settings& settings) {
  comparison c;
  c.base = base.summary;
  c.next = next.summary;
  fill_summary(c.base, base);
  fill_summary(c.next, next);
  c.noise_floor = settings.noise;
  c.confidence = settings.confidence;
  const auto base_reports = reports_by_name(*base.report);
  const auto next_reports = reports_by_name(*next.report);
  for (const launch_match& m : match_launches(*base.launches, *next.launches)) {
    if (m.base == nullptr || m.next == nullptr) {
      c.kernels.push_back(one_sided(m, base, next));
      continue;
    }
    kernel_change row = matched(m, base, next, settings);
    row.reasons = change_reasons(evidence_of(base, base_reports, m.base),
                                 evidence_of(next, next_reports, m.next));
    c.kernels.push_back(std::move(row));
  }
  if (base.counters == nullptr || next.counters == nullptr || base.counters->empty() ||
      next.counters->empty())
    c.notes.push_back("counters: not compared (both sides need counter passes, e.g. rocm-perf "
                      "profile --counters roofline --out DIR)");
  if (c.base.runs < 2 && c.next.runs < 2)
    c.notes.push_back("one run per side: the noise between runs is not measured, so --noise "
                      "alone sets the band of `same` (give --base/--new several times to "
                      "measure it)");
  sort_rows(c);
  return c;
}

what_if_plan plan_what_if(const comparison& c, std::size_t top) {
  std::vector<std::size_t> changed;
  for (std::size_t i = 0; i < c.kernels.size(); ++i)
    if (c.kernels[i].verdict == kernel_verdict::slower ||
        c.kernels[i].verdict == kernel_verdict::faster)
      changed.push_back(i);
  std::stable_sort(changed.begin(), changed.end(), [&](std::size_t a, std::size_t b) {
    return std::abs(c.kernels[a].new_total_ns - c.kernels[a].base_total_ns) >
           std::abs(c.kernels[b].new_total_ns - c.kernels[b].base_total_ns);
  });
  what_if_plan plan;
  for (std::size_t i = 0; i < changed.size() && i < top; ++i) {
    const kernel_change& k = c.kernels[changed[i]];
    const double r = k.interval.ratio;
    what_if_questions& q = k.verdict == kernel_verdict::slower ? plan.next : plan.base;
    q.names.push_back(k.name);
    q.percents.push_back(k.verdict == kernel_verdict::slower ? 100.0 * (1.0 - 1.0 / r)
                                                             : 100.0 * (1.0 - r));
    q.rows.push_back(changed[i]);
  }
  return plan;
}

namespace {

void apply_side(comparison& c,
                const what_if_questions& q,
                const std::vector<double>& savings,
                bool slower) {
  const side_summary& side = slower ? c.next : c.base;
  const double path = side.critical_path_ns.value_or(0.0);
  for (std::size_t i = 0; i < q.rows.size() && i < savings.size(); ++i) {
    kernel_change& k = c.kernels[q.rows[i]];
    const double saved = std::max(0.0, savings[i]);
    k.critical_path_effect_ns = slower ? saved : -saved;
    const double time_change = std::abs(k.new_total_ns - k.base_total_ns);
    if (saved <= negligible_share * time_change) {
      k.critical_path_note = std::string(slower ? "costs" : "gains") +
                             " the application ~nothing: off the critical path (its " +
                             milliseconds_text(time_change) + " of GPU time " +
                             (slower ? "went into slack" : "was slack") + ")";
    } else {
      char share[96];
      std::snprintf(share, sizeof share, " (%.2f %% of %s; %.0f %% of its GPU time change)",
                    path > 0 ? 100.0 * saved / path : 0.0, slower ? "it" : "BASE's",
                    time_change > 0 ? 100.0 * saved / time_change : 0.0);
      k.critical_path_note =
          std::string(slower ? "costs NEW's critical path " : "shortened the critical path by ") +
          milliseconds_text(saved) + share;
    }
  }
}

} // namespace

void apply_what_if(comparison& c,
                   const what_if_plan& plan,
                   const std::vector<double>& base_savings,
                   const std::vector<double>& next_savings) {
  apply_side(c, plan.base, base_savings, false);
  apply_side(c, plan.next, next_savings, true);
  for (auto& k : c.kernels)
    if ((k.verdict == kernel_verdict::slower || k.verdict == kernel_verdict::faster) &&
        !k.critical_path_effect_ns)
      k.critical_path_note = "critical-path effect not estimated (only the largest changes are)";
  sort_rows(c);
}

void sort_rows(comparison& c) {
  std::stable_sort(c.kernels.begin(), c.kernels.end(),
                   [](const kernel_change& a, const kernel_change& b) {
                     const int ra = verdict_rank(a.verdict), rb = verdict_rank(b.verdict);
                     if (ra != rb)
                       return ra < rb;
                     const double ea = std::abs(a.critical_path_effect_ns.value_or(0.0));
                     const double eb = std::abs(b.critical_path_effect_ns.value_or(0.0));
                     if (ea != eb)
                       return ea > eb;
                     return std::max(a.base_total_ns, a.new_total_ns) >
                            std::max(b.base_total_ns, b.new_total_ns);
                   });
}

} // namespace rpl::stages::compare
