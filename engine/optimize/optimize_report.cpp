#include "engine/optimize/optimize_report.hpp"

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/optimize/optimize_journal.hpp"
#include "engine/optimize/proposal_guard.hpp"

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

} // namespace

nlohmann::json write_optimize_report(const std::filesystem::path& out,
                                     const std::vector<target_result>& results,
                                     const nlohmann::json& application) {
  nlohmann::json report = {{"schema", "rocm-perf-optimize/1"},
                           {"kernels", nlohmann::json::array()}};
  std::ostringstream md;
  md << "# rocm-perf optimize report\n\n";
  if (!application.is_null()) {
    report["application"] = application;
    md << "## The application\n\n- before: " << application["before"].value("summary", "") << "\n";
    if (application.contains("after")) {
      md << "- after (the accepted changes applied, rebuilt, profiled again): "
         << application["after"].value("summary", "") << "\n- GPU time "
         << application.value("gpu_time_speedup", 0.0) << "x, critical path "
         << application.value("critical_path_speedup", 0.0) << "x (before / after, one run each)\n";
    } else if (application.contains("after_error")) {
      md << "- after: " << application["after_error"].get<std::string>() << "\n";
    }
    for (const auto& line : application["skipped"]) {
      md << "- skipped: " << line.get<std::string>() << "\n";
    }
    md << "\n";
  }
  for (const auto& r : results) {
    nlohmann::json k = {{"kernel", r.kernel},
                        {"source", r.source_path.string()},
                        {"status", r.status},
                        {"error", r.error},
                        {"original_ns", r.original_ns},
                        {"best_ns", r.best_ns},
                        {"proposals_seen", r.proposals_seen},
                        {"proposer_errors", r.proposer_errors},
                        {"attempts", nlohmann::json::array()}};
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
    report["kernels"].push_back(k);

    md << "## " << r.kernel << " (" << r.source_path.filename().string() << "): " << r.status
       << "\n\n";
    if (r.status == "improved") {
      md << "- " << r.final_comparison.summary << "\n- original " << us(r.original_ns)
         << ", optimized " << us(r.best_ns) << "\n- the accepted change: `" << r.kernel
         << ".diff`\n\n";
    } else if (!r.error.empty()) {
      md << "- " << r.error << "\n\n";
    } else {
      md << "- no proposal was faster beyond the noise; the source is unchanged (original "
         << us(r.original_ns) << ")\n\n";
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
    text << r.kernel << ": " << r.status;
    if (r.status == "improved") {
      text << ", " << r.final_comparison.summary << "; original " << us(r.original_ns)
           << ", optimized " << us(r.best_ns);
    } else if (!r.error.empty()) {
      text << ": " << r.error;
    } else {
      text << ": no proposal was faster beyond the noise (original " << us(r.original_ns) << ")";
    }
    text << "\n  attempts: " << r.attempts.size();
    for (const auto& [verdict, n] : by_verdict) {
      text << ", " << verdict << " " << n;
    }
    text << '\n';
  }
  text << "report: " << (out / "report.md").string() << '\n';
  return text.str();
}

} // namespace rpl::engine
