#pragma once
/// The roofline of an application (roofline.json): the GPU's roofs and, per kernel of the profile
/// report, its roofline from the counter passes, its per-dispatch rooflines, or why there is none.
/// Values in, values out: the counters are read by the caller (stages/trace/counter_values.hpp).

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "stages/analysis/kernel_roofline.hpp"
#include "stages/analysis/profile_report.hpp"
#include "stages/trace/counter_values.hpp"

namespace rpl::stages::analysis {

/// One kernel of the report on the roofline.
struct roofline_kernel {
  std::string name;
  std::optional<kernel_roofline> roofline; ///< nullopt: `missing` says why
  std::string missing;
  /// The counters were found and the roofs known: `problems` and `dispatches` were computed.
  bool computed = false;
  std::vector<std::string> problems; ///< inconsistent counters, with their values
  /// Per dispatch (the first 1000 of each pass, matched by order across passes); nullopt for a
  /// dispatch whose counters are incomplete or inconsistent.
  std::vector<std::optional<kernel_roofline>> dispatches;
};

struct roofline_report {
  std::optional<peaks> roofs; ///< nullopt: no counter pass named a target, or no model for it
  std::string target;         ///< the target the roofs are for
  std::vector<roofline_kernel> kernels; ///< in the report's order
  /// Caveats for the application's analysis (the roofs assumed, why there are none, inconsistent
  /// counters), in the order found; roofline.json's own "notes" stay empty.
  std::vector<std::string> notes;
};

/// What the roofline needs besides the report and the counters.
struct roofline_context {
  std::string trace_product;                    ///< the trace's first GPU agent's product name
  std::map<std::string, double> peak_overrides; ///< "hbm" bytes/s, or a data type's FLOP/s
  bool counter_passes = false;                  ///< any counter pass was given
};

/// The roofs of the first counter pass kernel that names a target (its product, else the
/// trace's), then each report kernel's roofline.
roofline_report build_roofline_report(const profile_report& report,
                                      const std::map<std::string, rocpd::kernel_counters>& counters,
                                      const roofline_context& context);

/// roofline.json (schema_version 1.0).
nlohmann::json to_json(const roofline_report& r);

} // namespace rpl::stages::analysis
