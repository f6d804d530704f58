#pragma once
/// The HTML page's input (html_report.hpp) from the analyses: the roofs and each kernel's point
/// from the roofline, the kernel table from the application's analysis. The timeline is the
/// caller's to add (timeline_view.hpp), when it built one.

#include "stages/analysis/application_analysis.hpp"
#include "stages/analysis/html_report.hpp"
#include "stages/analysis/profile_report.hpp"
#include "stages/analysis/roofline_report.hpp"

namespace rpl::stages::analysis {

/// Titled with the profiled command, else "the traced application"; the notes are the analysis's.
html_report_input build_html_report_input(const profile_report& report,
                                          const roofline_report& roofline,
                                          const application_analysis& analysis);

} // namespace rpl::stages::analysis
