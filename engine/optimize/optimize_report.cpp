#include "engine/optimize/optimize_report.hpp"

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/optimize/app_mode.hpp"
#include "engine/optimize/optimize_journal.hpp"
#include "engine/optimize/proposal_guard.hpp"
#include "stages/analysis/fixed_text.hpp"

namespace rpl::engine {

namespace {

std::string us(double ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f us", ns / 1000.0);
  return text;
}

nlohmann::json to_json(const attempt_record& a) {
  nlohmann::json out = {{"sequence", a.sequence},
                        {"iteration", a.iteration},
                        {"proposer", a.proposer},
                        {"worker", a.worker},
                        {"proposal_id", a.proposal_id},
                        {"title", a.title},
                        {"repair_round", a.repair_round},
                        {"stage", to_string(a.stage)},
                        {"verdict", to_string(a.verdict)},
                        {"guard", to_string(a.guard)},
                        {"resumed", a.resumed},
                        {"detail", a.detail},
                        {"speedup", a.speedup},
                        {"validation", json_or_text(a.validation)},
                        {"measurement", json_or_text(a.measurement)}};
  if (a.verdict == attempt_verdict::accepted) {
    // An acceptance the sanitizer pass did not see through (no compute-sanitizer, an AMD lane).
    out["sanitizer_checked"] = sanitizer_checked(a.validation);
  }
  return out;
}

/// The kernel's entry in report.json (the diff file written beside it when improved). No figure
/// for work not done: original_ns, best_ns and the final comparison only where measured.
nlohmann::json kernel_json(const target_result& r, const std::filesystem::path& out) {
  nlohmann::json k = {{"kernel", r.kernel},
                      {"source", r.source_path.string()},
                      {"status", r.status},
                      {"reason", r.reason},
                      {"error", r.error},
                      {"seconds", r.seconds},
                      {"proposals_seen", r.proposals_seen},
                      {"proposer_errors", r.proposer_errors},
                      {"attempts", nlohmann::json::array()}};
  if (has_figures(r)) {
    k["original_ns"] = r.original_ns;
    k["best_ns"] = r.best_ns;
  }
  if (r.status == "unchanged") {
    k["rules_not_applied"] = r.rules_not_applied;
  }
  if (r.status == "improved") {
    const auto& f = r.final_comparison;
    k["final_comparison"] = {{"summary", f.summary},
                             {"speedup", f.candidate_median_ns > 0.0
                                             ? f.incumbent_median_ns / f.candidate_median_ns
                                             : 0.0},
                             {"relative_change", f.relative_change.median},
                             {"interval", {f.relative_change.low, f.relative_change.high}},
                             {"separating_noise", f.separating_noise},
                             {"rounds", f.rounds}};
    k["diff_file"] = r.kernel + ".diff";
    std::ofstream(out / (r.kernel + ".diff"), std::ios::binary | std::ios::trunc)
        << r.accepted_diff;
  }
  std::map<std::string, int> by_verdict;
  for (const auto& a : r.attempts) {
    k["attempts"].push_back(to_json(a));
    ++by_verdict[std::string(to_string(a.verdict))];
  }
  k["attempts_by_verdict"] = by_verdict;
  return k;
}

/// "12.3 s" for a kernel's time.
std::string seconds_of(const target_result& r) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", r.seconds);
  return text;
}

/// The kernel's fate in one line: its status, the reason, figures only for work done.
std::string fate_line(const target_result& r) {
  std::string line = r.status + " (" + seconds_of(r) + "): ";
  if (r.status == "improved") {
    return line + r.final_comparison.summary + "; original " + us(r.original_ns) + ", optimized " +
           us(r.best_ns);
  }
  line += r.reason.empty() ? r.error : r.reason;
  if (r.status == "unchanged" && has_figures(r)) {
    line += " (original " + us(r.original_ns) + ")";
  }
  return line;
}

void kernel_markdown(std::ostringstream& md, const target_result& r) {
  md << "## " << r.kernel << " (" << r.source_path.filename().string() << "): " << r.status
     << "\n\n- " << fate_line(r) << "\n";
  if (r.status == "improved") {
    md << "- the accepted change: `" << r.kernel << ".diff`\n";
  }
  for (const auto& why : r.rules_not_applied) {
    md << "- rule not applied: " << why << "\n";
  }
  md << "\n";
  if (r.attempts.empty()) {
    return;
  }
  md << "| # | proposer | proposal | stage | verdict | guard / figures "
        "|\n|---|---|---|---|---|---|\n";
  for (const auto& a : r.attempts) {
    std::string detail =
        a.guard == attempt_finding::none ? a.detail : std::string(to_string(a.guard));
    if (a.stage == attempt_stage::measurement || a.stage == attempt_stage::accepted) {
      detail = a.detail;
    }
    if (a.verdict == attempt_verdict::accepted && !sanitizer_checked(a.validation)) {
      detail += " (not sanitizer-checked)";
    }
    for (auto& c : detail) {
      if (c == '\n' || c == '|') {
        c = ' ';
      }
    }
    if (detail.size() > 160) {
      detail = detail.substr(0, 160) + "...";
    }
    md << "| " << a.sequence << " | " << a.proposer << " | " << a.title << " | "
       << to_string(a.stage) << " | " << to_string(a.verdict) << " | " << detail << " |\n";
  }
  for (const auto& e : r.proposer_errors) {
    md << "\n- proposer: " << e;
  }
  md << "\n\n";
}

} // namespace

/// The application's figures before and after, as one line, and the GPU's share of its
/// critical path with what it means.
void application_figures(nlohmann::json& application,
                         const app_profile& before,
                         const app_profile* after) {
  const auto ms = [](double ns) { return stages::fixed_text(ns / 1e6, 3) + " ms"; };
  std::string line = "GPU time " + ms(before.gpu_time_ns);
  if (after != nullptr) {
    line += " -> " + ms(after->gpu_time_ns);
  }
  line += ", critical path " + ms(before.critical_path_ns);
  if (after != nullptr) {
    line += " -> " + ms(after->critical_path_ns);
  }
  if (before.gpu_share) {
    const std::string share = stages::fixed_text(*before.gpu_share * 100.0, 1) + " %";
    line += "; kernels take " + share + " of the critical path";
    if (*before.gpu_share < 0.5) {
      application["gpu_share_note"] =
          "kernels take only " + share +
          " of the application's critical path; the rest is host work, copies and waits, so "
          "faster kernels barely shorten it";
    }
  }
  application["figures"] = line;
}

/// A profile's summary lines after `label`, each further line indented under it.
std::string
summary_lines(const std::string& prefix, const std::string& label, const std::string& summary) {
  std::string out = prefix + label;
  std::istringstream lines(summary);
  std::string line;
  bool first = true;
  while (std::getline(lines, line)) {
    out += (first ? "" : prefix + "  ") + line + "\n";
    first = false;
  }
  return first ? out + "\n" : out;
}

std::string application_text(const nlohmann::json& application, const std::string& prefix) {
  std::ostringstream text;
  text << summary_lines(prefix, "before: ", application["before"].value("summary", ""));
  if (application.contains("after")) {
    text << summary_lines(prefix, "after (the accepted changes rebuilt, profiled again): ",
                          application["after"].value("summary", ""));
  }
  if (application.contains("figures")) {
    text << prefix << application["figures"].get<std::string>() << "\n";
  }
  for (const char* key : {"after_error", "not_rebuilt", "gpu_share_note"}) {
    if (application.contains(key)) {
      text << prefix << application[key].get<std::string>() << "\n";
    }
  }
  for (const auto& line : application.value("sources", std::vector<std::string>{})) {
    text << prefix << "source: " << line << "\n";
  }
  return text.str();
}

nlohmann::json write_optimize_report(const std::filesystem::path& out,
                                     const std::vector<target_result>& results,
                                     const nlohmann::json& application) {
  nlohmann::json report = {{"schema", "rocm-perf-optimize/1"},
                           {"kernels", nlohmann::json::array()}};
  std::ostringstream md;
  md << "# rocm-perf optimize report\n\n";
  if (!application.is_null()) {
    report["application"] = application;
    md << "## The application\n\n" << application_text(application, "- ") << "\n";
  }
  for (const auto& r : results) {
    report["kernels"].push_back(kernel_json(r, out));
    kernel_markdown(md, r);
  }
  std::ofstream(out / "report.json", std::ios::trunc) << report.dump(2) << '\n';
  std::ofstream(out / "report.md", std::ios::trunc) << md.str();
  return report;
}

std::string optimize_summary_text(const std::vector<target_result>& results,
                                  const std::filesystem::path& out) {
  std::ostringstream text;
  for (const auto& r : results) {
    std::map<std::string, int> by_verdict;
    for (const auto& a : r.attempts) {
      ++by_verdict[std::string(to_string(a.verdict))];
    }
    text << r.kernel << ": " << fate_line(r);
    if (!r.attempts.empty()) {
      text << "\n  attempts: " << r.attempts.size();
      for (const auto& [verdict, n] : by_verdict) {
        text << ", " << verdict << " " << n;
      }
    }
    for (const auto& why : r.rules_not_applied) {
      text << "\n  rule not applied: " << why;
    }
    text << '\n';
  }
  text << "report: " << (out / "report.md").string() << '\n';
  return text.str();
}

} // namespace rpl::engine
