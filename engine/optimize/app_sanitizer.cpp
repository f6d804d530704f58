#include "engine/optimize/app_sanitizer.hpp"

#include <spdlog/spdlog.h>

#include "workers/lanes/kernel/sanitizer_pass.hpp"

namespace rpl::engine {

namespace {

attempt_finding finding_of(const std::string& tool) {
  if (tool == "racecheck")
    return attempt_finding::sanitizer_racecheck;
  if (tool == "initcheck")
    return attempt_finding::sanitizer_initcheck;
  if (tool == "synccheck")
    return attempt_finding::sanitizer_synccheck;
  return attempt_finding::sanitizer_memcheck;
}

/// Each outcome as a validation case in the kernel's last accepted attempt's record.
void record_outcomes(target_result& r, const std::vector<workers::sanitizer_outcome>& outcomes) {
  attempt_record* last = nullptr;
  for (auto& a : r.attempts)
    if (a.verdict == attempt_verdict::accepted)
      last = &a;
  if (last == nullptr)
    return;
  auto record = nlohmann::json::parse(last->validation, nullptr, false);
  if (!record.is_array())
    record = nlohmann::json::array();
  for (const auto& o : outcomes)
    record.push_back({{"case", "sanitizer:" + o.tool},
                      {"scope", "application"},
                      {"status", o.clean ? "clean" : "finding"},
                      {"reason", o.first_report},
                      {"seconds", o.seconds},
                      {"log", o.log.string()}});
  last->validation = record.dump();
}

/// The kernel's change refused by `found`: its accepted attempts rejected at the sanitizer, the
/// kernel unchanged, its diff dropped.
void refuse(target_result& r, const workers::sanitizer_outcome& found) {
  const std::string why =
      "compute-sanitizer " + found.tool +
      " on the application rebuilt with the kernel's accepted change: " + found.first_report +
      " (log: " + found.log.string() + ")";
  for (auto& a : r.attempts) {
    if (a.verdict != attempt_verdict::accepted)
      continue;
    a.verdict = attempt_verdict::rejected;
    a.stage = attempt_stage::sanitizer;
    a.guard = finding_of(found.tool);
    a.detail = why;
  }
  r.status = "unchanged";
  r.reason = "its accepted change was refused by " + why;
  r.best_ns = r.original_ns;
  r.best_source.clear();
  r.accepted_diff.clear();
}

} // namespace

nlohmann::json sanitize_accepted(std::vector<target_result>& results,
                                 const app_sanitizer_pass& pass,
                                 const app_tools& tools,
                                 const std::atomic<bool>& stop) {
  const std::string missing = !tools.sanitize           ? "no sanitizer for this backend"
                              : tools.sanitizer_missing ? tools.sanitizer_missing()
                                                        : std::string();
  if (!missing.empty()) {
    spdlog::warn("the accepted changes are not sanitizer-checked on the application: {}", missing);
    return {{"ran", false}, {"not_run", missing}};
  }
  std::error_code ec;
  std::filesystem::create_directories(pass.log_dir, ec);
  nlohmann::json refused = nlohmann::json::object();
  double seconds = 0;
  for (auto& r : results) {
    if (r.status != "improved")
      continue;
    if (stop)
      return {{"ran", false}, {"not_run", "interrupted"}, {"refused", refused}};
    const auto symbol = pass.symbols.find(r.kernel);
    const std::string name = symbol != pass.symbols.end() ? symbol->second : r.kernel;
    std::vector<workers::sanitizer_outcome> outcomes;
    for (const auto tool : workers::sanitizer_tools) {
      outcomes.push_back(tools.sanitize(pass.argv, name, std::string(tool), pass.log_dir,
                                        "app." + r.kernel, pass.device));
      seconds += outcomes.back().seconds;
      spdlog::info("{}: compute-sanitizer {} on the application: {} ({:.1f} s)", r.kernel, tool,
                   outcomes.back().clean ? "clean" : outcomes.back().first_report,
                   outcomes.back().seconds);
      if (!outcomes.back().clean)
        break;
    }
    record_outcomes(r, outcomes);
    if (!outcomes.back().clean) {
      refuse(r, outcomes.back());
      refused[r.kernel] = "sanitizer:" + outcomes.back().tool + ": " + outcomes.back().first_report;
      spdlog::warn("{}: {}", r.kernel, r.reason);
    }
  }
  return {{"ran", true}, {"seconds", seconds}, {"refused", refused}};
}

} // namespace rpl::engine
