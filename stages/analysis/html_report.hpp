#pragma once
/// One self-contained HTML page (inline SVG and CSS, no script, nothing fetched) that shows what
/// limits an application: the roofline with each kernel placed on it, the timeline with the
/// critical path, and the per-kernel table with classes and next steps. A million-op timeline stays
/// small: each track's ops are merged at the drawing's resolution (one rectangle per run of busy
/// pixels), so the page grows with the picture's width, not with the trace.

#include <optional>
#include <string>
#include <vector>

#include "stages/analysis/perfetto_trace.hpp"

namespace rpl::stages::analysis {

/// A roof: a compute peak (FLOP/s) for one data type.
struct html_compute_roof {
  std::string label; ///< "FP32 VALU", "BF16 MFMA"
  double flops_per_s = 0;
};

/// A kernel placed on the roofline (absent from the chart, but listed, without counters).
struct html_roofline_point {
  std::string kernel;
  double intensity = 0;   ///< FLOP per DRAM byte
  double flops_per_s = 0; ///< achieved
  std::string bound;      ///< "compute" or "memory"
};

/// A row of the kernel table.
struct html_kernel_row {
  std::string kernel;
  std::size_t dispatches = 0;
  double total_ns = 0;
  double share = 0;                          ///< of GPU time, 0..1
  std::optional<double> critical_path_share; ///< 0..1
  std::optional<double> percent_of_peak;     ///< roofline
  std::string bottleneck;                    ///< the class's name, or why there is none
  std::string because;                       ///< the rule's evidence
  std::string next_step;
};

struct html_report_input {
  std::string title;                        ///< e.g. the command or the databases
  std::vector<std::string> notes;           ///< assumptions, partial traces, ...
  std::optional<double> memory_bytes_per_s; ///< the DRAM/HBM roof
  std::vector<html_compute_roof> compute_roofs;
  std::vector<html_roofline_point> points;
  std::vector<timeline_op> timeline;    ///< kernels and copies, critical ones flagged
  std::vector<html_kernel_row> kernels; ///< in the order to print
};

/// The page. Deterministic: the same input gives the same bytes.
std::string html_report(const html_report_input& input);

} // namespace rpl::stages::analysis
