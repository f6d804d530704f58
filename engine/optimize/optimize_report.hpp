#pragma once
/// What an optimize run leaves in --out for people and scripts: report.json (every target, its
/// verdict, the final comparison and every attempt with the guard that stopped it), report.md
/// (the same for reading) and `<kernel>.diff`, the accepted change of each improved kernel
/// against the user's original file.

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/optimize/kernel_optimizer.hpp"

namespace rpl::engine {

struct app_profile;

/// Writes the files and returns report.json's content.
/// `application` (null without -- APP): the application's profile before and, with
/// --app-build, after. Every kernel's fate (improved, unchanged, not_reached, skipped, failed)
/// with its reason and seconds; original_ns and best_ns only where measured.
nlohmann::json write_optimize_report(const std::filesystem::path& out,
                                     const std::vector<target_result>& results,
                                     const nlohmann::json& application);

/// Sets application["figures"] (GPU time and critical path, before -> after when `after` is
/// given, and the kernels' share of the critical path) and, when kernels take under half of the
/// critical path, application["gpu_share_note"]: kernel gains barely move such an application.
void application_figures(nlohmann::json& application,
                         const app_profile& before,
                         const app_profile* after);

/// The application's lines (before, after or why not, the GPU's share of the critical path, the
/// files kernels were taken from), each starting with `prefix`.
std::string application_text(const nlohmann::json& application, const std::string& prefix);

/// The terminal summary: one block per kernel, its fate with the reason and the seconds spent,
/// figures only for work done, the attempts by outcome.
std::string optimize_summary_text(const std::vector<target_result>& results,
                                  const std::filesystem::path& out);

} // namespace rpl::engine
