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

/// Writes the files and returns report.json's content.
/// `application` (null without -- APP): the application's profile before and, with
/// --app-build, after.
nlohmann::json write_optimize_report(const std::filesystem::path& out,
                                     const std::vector<target_result>& results,
                                     const nlohmann::json& application);

/// The terminal summary: one block per kernel, its verdict with figures, the attempts by outcome.
std::string optimize_summary_text(const std::vector<target_result>& results,
                                  const std::filesystem::path& out);

} // namespace rpl::engine
