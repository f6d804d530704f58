// The sanitizer pass (workers/lanes/kernel/sanitizer_pass.hpp): a candidate measured faster runs
// once more under compute-sanitizer's memcheck, racecheck, initcheck and synccheck before it is
// accepted (memcheck and initcheck at the odd validation size, racecheck and synccheck at the
// small hazard size: journey_context::sanitizer_plan). A tool's report refuses it
// (sanitizer:<tool>, with the report's first line and the log). Each tool's outcome and time go
// into the attempt's validation record; where the lane has no checker, the record says why and the
// acceptance is not sanitizer-checked (the report marks it), and the run says so once.

#include <mutex>

#include <spdlog/spdlog.h>

#include "engine/optimize/proposal_guard.hpp"
#include "workers/lanes/lane_backend.hpp"

namespace rpl::engine {

namespace {

class sanitizer_guard final : public proposal_guard {
public:
  std::string_view name() const override { return "sanitizer"; }
  guard_input reads() const override { return guard_input::pre_acceptance; }
  std::optional<guard_refusal> check(guard_subject& s) const override {
    if (!s.validation.is_array()) {
      s.validation = nlohmann::json::array();
    }
    std::string unavailable;
    const auto outcomes = s.lane->sanitize(s.journey.sanitizer_plan(s.artifact), unavailable);
    if (outcomes.empty()) {
      static std::once_flag said;
      std::call_once(
          said, [&] { spdlog::warn("acceptances are not sanitizer-checked: {}", unavailable); });
      s.validation.push_back(
          {{"case", "sanitizer"}, {"status", "not_run"}, {"reason", unavailable}});
      return std::nullopt;
    }
    for (const auto& o : outcomes) {
      s.validation.push_back({{"case", "sanitizer:" + o.tool},
                              {"status", o.clean ? "clean" : "finding"},
                              {"reason", o.first_report},
                              {"seconds", o.seconds},
                              {"log", o.log.string()}});
    }
    for (const auto& o : outcomes) {
      if (!o.clean) {
        return guard_refusal{attempt_stage::sanitizer, sanitizer_finding(o.tool),
                             "compute-sanitizer " + o.tool + ": " + o.first_report +
                                 " (log: " + o.log.string() + ")"};
      }
    }
    return std::nullopt;
  }
};

} // namespace

std::unique_ptr<proposal_guard> make_sanitizer_guard() {
  return std::make_unique<sanitizer_guard>();
}

/// True when the attempt's validation record shows all four tools clean.
bool sanitizer_checked(const std::string& validation) {
  const auto record = nlohmann::json::parse(validation, nullptr, false);
  if (!record.is_array()) {
    return false;
  }
  int clean = 0;
  for (const auto& entry : record) {
    if (entry.is_object() && entry.value("status", "") == "clean" &&
        entry.value("case", "").rfind("sanitizer:", 0) == 0) {
      ++clean;
    }
  }
  return clean == 4;
}

} // namespace rpl::engine
