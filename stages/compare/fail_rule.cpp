#include "stages/compare/fail_rule.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace rpl::stages::compare {

std::optional<fail_rule> parse_fail_rule(const std::string& text, std::string& error) {
  const std::string kind = text.substr(0, text.find(':'));
  if (kind != "slower" && kind != "critical-path") {
    error = "--fail-on " + text + ": unknown rule '" + kind +
            "'; fix: --fail-on slower:5% (a kernel slower by more than 5 % at its interval's low "
            "end), --fail-on slower, or --fail-on critical-path:2%";
    return std::nullopt;
  }
  fail_rule rule;
  rule.what = kind == "slower" ? fail_rule::kind::slower : fail_rule::kind::critical_path;
  if (text.size() == kind.size())
    return rule;
  std::string number = text.substr(kind.size() + 1);
  if (!number.empty() && number.back() == '%')
    number.pop_back();
  char* end = nullptr;
  const double pct = std::strtod(number.c_str(), &end);
  if (number.empty() || end != number.c_str() + number.size() || !std::isfinite(pct) || pct < 0 ||
      pct >= 1000) {
    error = "--fail-on " + text + ": '" + text.substr(kind.size() + 1) +
            "' is not a percentage; fix: --fail-on slower:5% (0 to 1000)";
    return std::nullopt;
  }
  rule.slower_than = pct / 100.0;
  return rule;
}

std::vector<std::string> tripped(const comparison& c, const fail_rule& rule) {
  std::vector<std::string> out;
  if (rule.what == fail_rule::kind::critical_path) {
    if (c.base.critical_path_ns && c.next.critical_path_ns && *c.base.critical_path_ns > 0 &&
        *c.next.critical_path_ns > *c.base.critical_path_ns * (1.0 + rule.slower_than)) {
      char text[128];
      std::snprintf(text, sizeof text, "critical path %.3f ms -> %.3f ms (%+.1f %%)",
                    *c.base.critical_path_ns / 1e6, *c.next.critical_path_ns / 1e6,
                    100.0 * (*c.next.critical_path_ns / *c.base.critical_path_ns - 1.0));
      out.emplace_back(text);
    }
    return out;
  }
  for (const auto& k : c.kernels) {
    if (k.verdict != kernel_verdict::slower || !(k.interval.low > 1.0 + rule.slower_than))
      continue;
    char text[96];
    std::snprintf(text, sizeof text, " (ratio %.3f, interval %.3f-%.3f)", k.interval.ratio,
                  k.interval.low, k.interval.high);
    out.push_back(k.name + (k.new_shape.empty() ? "" : " [" + k.new_shape + "]") + text);
  }
  return out;
}

} // namespace rpl::stages::compare
