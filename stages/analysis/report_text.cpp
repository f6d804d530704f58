#include "stages/analysis/report_text.hpp"

#include <cstdarg>
#include <cstdio>

#include "stages/analysis/fixed_text.hpp"

namespace rpl::stages {

namespace {

/// Appends printf-style text to `out`.
[[gnu::format(printf, 2, 3)]] void appendf(std::string& out, const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  const int size = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  if (size > 0) {
    const std::size_t old = out.size();
    out.resize(old + static_cast<std::size_t>(size) + 1);
    std::vsnprintf(out.data() + old, static_cast<std::size_t>(size) + 1, format, again);
    out.resize(old + static_cast<std::size_t>(size));
  }
  va_end(again);
}

std::string shorten(const std::string& name, std::size_t width) {
  return name.size() <= width ? name : name.substr(0, width - 3) + "...";
}

double ms(double ns) {
  return milliseconds(ns);
}

/// A trace report always has totals; an empty set keeps the renderer total for any input.
const report_totals& totals_of(const profile_report& r) {
  static const report_totals none;
  return r.totals ? *r.totals : none;
}

void summary_line(std::string& out, const profile_report& r, bool timing) {
  const report_stability& st = r.stability;
  appendf(out, "backend %s, %d run(s): %s per run median %s ms (mean %s, cv %s, %s)\n",
          r.backend.c_str(), static_cast<int>(st.per_run_ns.size()),
          timing ? "process wall time" : "GPU time", fixed_text(ms(st.median_ns), 3).c_str(),
          fixed_text(ms(st.mean_ns), 3).c_str(), fixed_text(st.cv, 4).c_str(),
          to_string(st.classification));
  if (r.note) {
    appendf(out, "note: %s\n", r.note->c_str());
  }
  for (const std::string& reason : r.partial_reasons) {
    appendf(out, "partial trace: %s\n", reason.c_str());
  }
}

void agents_and_totals(std::string& out, const profile_report& r) {
  for (const auto& a : r.agents) {
    appendf(out, "agent %s (%s)\n", a.name.c_str(), a.product_name.c_str());
  }
  const report_totals& t = totals_of(r);
  appendf(
      out, "all runs: %d dispatches, GPU time %s ms, runtime helpers %s ms, wall span %s ms\n\n",
      static_cast<int>(t.dispatches), fixed_text(ms(t.gpu_time_ns), 3).c_str(),
      fixed_text(ms(t.helper_gpu_time_ns), 3).c_str(), fixed_text(ms(t.wall_span_ns), 3).c_str());
}

void kernel_row(std::string& out, const kernel_report& k) {
  std::string res = "    -     -     -       -";
  if (k.resources) {
    char text[64];
    std::snprintf(
        text, sizeof text, "%5lld %5lld %5lld %7lld", static_cast<long long>(k.resources->vgpr),
        static_cast<long long>(k.resources->agpr), static_cast<long long>(k.resources->sgpr),
        static_cast<long long>(k.launch_lds_bytes.value_or(k.resources->lds_bytes)));
    res = text;
  }
  const std::string occ = k.occupancy ? occupancy_summary(k.occupancy->result) : "-";
  const rocpd::kernel_stats& s = k.runtime;
  appendf(out, "%-40s %7d %11s %10s %10s %10s %7s %5s%% %s  %s\n", shorten(s.name, 40).c_str(),
          static_cast<int>(s.count), fixed_text(ms(s.total_ns), 3).c_str(),
          fixed_text(ms(s.mean_ns) * 1e3, 2).c_str(), fixed_text(ms(s.median_ns) * 1e3, 2).c_str(),
          fixed_text(ms(s.p95_ns) * 1e3, 2).c_str(), fixed_text(s.cv, 3).c_str(),
          fixed_text(k.share * 100, 1).c_str(), res.c_str(), occ.c_str());
}

void kernel_table(std::string& out, const profile_report& r) {
  // NVIDIA agents (sm_XY) store registers per thread where AMD stores VGPRs, and shared memory as
  // LDS. The LDS/SMEM column is the launch's (dynamic included), what occupancy was computed with.
  bool nvidia = false;
  for (const auto& a : r.agents) {
    nvidia = nvidia || a.name.rfind("sm_", 0) == 0;
  }
  appendf(out, "%-40s %7s %11s %10s %10s %10s %7s %6s %5s %5s %5s %7s  %s\n", "kernel", "calls",
          "total ms", "mean us", "median us", "p95 us", "cv", "share", nvidia ? "REGS" : "VGPR",
          "AGPR", "SGPR", nvidia ? "SMEM" : "LDS", "occupancy");
  for (const auto& k : r.kernels) {
    kernel_row(out, k);
  }
  for (const auto& k : r.helper_kernels) {
    appendf(out, "runtime helper: %s, %d dispatches, %s ms\n", k.runtime.name.c_str(),
            static_cast<int>(k.runtime.count), fixed_text(ms(k.runtime.total_ns), 3).c_str());
  }
}

void dominant_kernel(std::string& out, const profile_report& r) {
  if (r.dominant_kernel.empty()) {
    return;
  }
  appendf(out, "\ndominant kernel: %s\n", r.dominant_kernel.c_str());
  for (const auto& k : r.kernels) {
    if (k.runtime.name == r.dominant_kernel && k.occupancy) {
      for (const auto& s : k.occupancy->result.suggestions) {
        appendf(out, "  to raise occupancy: %s\n", s.c_str());
      }
    }
  }
}

void groups(std::string& out, const char* title, const std::vector<rocpd::group_total>& list) {
  if (list.size() < 2) {
    return;
  }
  appendf(out, "%s:", title);
  for (const auto& g : list) {
    appendf(out, "  %s %s ms (%d)", g.name.c_str(), fixed_text(ms(g.total_ns), 3).c_str(),
            static_cast<int>(g.count));
  }
  appendf(out, "\n");
}

} // namespace

std::string report_text(const profile_report& r) {
  std::string out;
  const bool timing = r.backend == "timing";
  summary_line(out, r, timing);
  if (timing) {
    return out;
  }
  agents_and_totals(out, r);
  kernel_table(out, r);
  dominant_kernel(out, r);
  const report_totals& t = totals_of(r);
  groups(out, "per agent", t.per_agent);
  groups(out, "per queue", t.per_queue);
  groups(out, "per stream", t.per_stream);
  groups(out, "per process", t.per_process);
  return out;
}

} // namespace rpl::stages
