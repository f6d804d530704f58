#include "engine/commands/autotune_output.hpp"

#include <algorithm>
#include <vector>

#include <spdlog/spdlog.h>

namespace rpl::engine::commands {

std::string format_ms(double ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", ns / 1e6);
  return text;
}

std::string params_text(const nlohmann::json& params) {
  std::string text;
  for (auto it = params.begin(); it != params.end(); ++it) {
    if (!text.empty()) {
      text += ' ';
    }
    text += it.key() + "=" + (it->is_string() ? it->get<std::string>() : it->dump());
  }
  return text;
}

void progress_printer::operator()(const autotune_progress& p) {
  if (quiet_) {
    return;
  }
  const auto& c = *p.candidate;
  const auto done = p.counts.completed + p.counts.resumed + p.counts.duplicates;
  const double elapsed = std::chrono::duration<double>(p.elapsed).count();
  const double remaining_items =
      static_cast<double>(p.counts.planned > done ? p.counts.planned - done : 0);
  const double eta = p.counts.completed > 0
                         ? elapsed / static_cast<double>(p.counts.completed) * remaining_items
                         : 0.0;
  const std::string best =
      p.best ? format_ms(p.best->stats.median) + " ms (" + params_text(p.best->params) + ")" : "-";
  if (interactive_) {
    std::fprintf(
        stderr, "\r\033[Kcompiled %zu  measured %zu  failed %zu  of %zu  best %s  ETA %.0f s",
        p.counts.compiled, p.counts.measured, p.counts.failed, p.counts.planned, best.c_str(), eta);
    std::fflush(stderr);
    printed_line_ = true;
  } else {
    const std::string outcome = c.verdict.decision == messages::verdict_kind::invalid
                                    ? "invalid: " + c.verdict.reason
                                    : std::string(messages::to_string(c.verdict.decision)) +
                                          " median " + format_ms(c.stats.median) + " ms cv " +
                                          std::to_string(c.stats.cv).substr(0, 5);
    spdlog::info("[{}/{}] {} {}: {}", done, p.counts.planned, c.key.substr(0, 12),
                 params_text(c.config.to_json()), outcome);
  }
}

void progress_printer::finish() {
  if (printed_line_) {
    std::fprintf(stderr, "\n");
  }
}

void print_table(const autotune_result& result) {
  std::vector<const stored_candidate*> valid;
  std::size_t invalid = 0;
  for (const auto& c : result.candidates) {
    if (c.status == "ok") {
      valid.push_back(&c);
    } else {
      ++invalid;
    }
  }
  std::sort(valid.begin(), valid.end(),
            [](const auto* a, const auto* b) { return a->stats.median < b->stats.median; });
  std::printf("\nrun %s (%s): %zu configurations (%zu cut by constraints), %zu completed, %zu "
              "invalid, %.1f s, %zu compile workers, %zu lanes\n",
              result.run_id.c_str(), result.run_status.c_str(), result.space_size,
              result.cut_by_constraints, result.candidates.size(), invalid, result.wall_s,
              result.compile_workers, result.lanes);
  std::printf("%-4s %12s %12s %8s %-9s %s\n", "rank", "median ms", "min ms", "cv", "stability",
              "parameters");
  for (std::size_t i = 0; i < valid.size() && i < 10; ++i) {
    const auto& c = *valid[i];
    std::printf("%-4zu %12s %12s %8.4f %-9s %s%s\n", i + 1, format_ms(c.stats.median).c_str(),
                format_ms(c.stats.min).c_str(), c.stats.cv, stages::to_string(c.stats.stability),
                params_text(c.params).c_str(), c.key == result.winner_key ? "  <- winner" : "");
  }
  std::size_t listed = 0;
  for (const auto& c : result.candidates) {
    if (c.status == "ok") {
      continue;
    }
    if (listed++ == 0) {
      std::printf("\ninvalid candidates:\n");
    }
    if (listed > 10) {
      std::printf("  ... and %zu more (sqlite3 %s \"SELECT params_json, reason FROM candidates "
                  "WHERE status='invalid'\")\n",
                  invalid - 10, result.db.c_str());
      break;
    }
    std::printf("  %s: %s\n", params_text(c.params).c_str(), c.reason.c_str());
  }
  for (const auto& c : result.candidates) {
    if (c.key == result.winner_key) {
      std::printf("\nwinner: %s  median %s ms (cv %.4f, %s, n=%zu)  key %s\n",
                  params_text(c.params).c_str(), format_ms(c.stats.median).c_str(), c.stats.cv,
                  stages::to_string(c.stats.stability), c.stats.n, c.key.c_str());
    }
  }
  if (!result.final_round && !valid.empty() && !result.winner_key.empty() &&
      valid.front()->key != result.winner_key) {
    std::printf(
        "note: candidates above the winner have a lower median, but the difference lies "
        "inside the noise band (verdict same or ambiguous); more --runs can separate them\n");
  }
  if (result.final_round) {
    const auto& f = *result.final_round;
    std::printf("final round: %zu finalists x %u rounds, interleaved on %s; ", f.finalists.size(),
                f.rounds, f.lane.c_str());
    if (f.tie_set.size() > 1) {
      std::printf("tie: %zu finalists within the noise (separating noise >= %.2f%%)\n",
                  f.tie_set.size(), f.noise_target * 100.0);
      for (const auto& c : f.finalists) {
        if (c.tied) {
          std::printf("  tied: %s  median %s ms  %+.2f%% [%+.2f%%, %+.2f%%]\n", c.key.c_str(),
                      format_ms(c.median_ns).c_str(), c.relative_difference * 100.0,
                      c.relative_low * 100.0, c.relative_high * 100.0);
        }
      }
    } else {
      std::printf("the winner is separated from every other finalist\n");
    }
  } else if (!result.winner_note.empty()) {
    std::printf("note: %s\n", result.winner_note.c_str());
  }
  if (result.model.is_object() && result.model.value("low_model_confidence", false)) {
    const auto& r2 = result.model["cv_r2"];
    std::printf("low_model_confidence: the model's cross-validated R² is %s (under %.2f): the "
                "search widened instead of trusting it\n",
                r2.is_number() ? std::to_string(r2.get<double>()).substr(0, 5).c_str() : "unknown",
                result.model.value("confidence_r2", 0.75));
  }
  if (result.winner_key.empty()) {
    std::printf("\nno winner: no candidate produced a valid measurement\n");
  }
}

} // namespace rpl::engine::commands
