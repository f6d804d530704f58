// The occupancy model (stages/hardware/occupancy_model.hpp) against the CUDA runtime: runs
// tests/gpu/occupancy_probe.cu, which prints cudaOccupancyMaxActiveBlocksPerMultiprocessor for many
// kernels (registers, static and dynamic shared memory, block sizes), and checks that the model
// gives the same blocks per SM for every one. Skips without an NVIDIA GPU (the probe exits 77) or
// without the probe (built only with -DRPL_BUILD_CUDA=ON).

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "stages/hardware/arch_model.hpp"
#include "stages/hardware/occupancy_model.hpp"
#include "workers/process/child_process.hpp"

namespace rpl::stages {
namespace {

namespace fs = std::filesystem;

/// The probe: $RPL_OCCUPANCY_PROBE, else `occupancy_probe` next to this executable (a relocated
/// bundle), else the build tree's (RPL_OCCUPANCY_PROBE, set when CUDA is built). Empty when none
/// exists; `tried` lists where it looked.
fs::path find_probe(std::vector<std::string>& tried) {
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("RPL_OCCUPANCY_PROBE"); env != nullptr && *env != '\0')
    candidates.emplace_back(env);
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec)
    candidates.push_back(self.parent_path() / "occupancy_probe");
#ifdef RPL_OCCUPANCY_PROBE
  candidates.emplace_back(RPL_OCCUPANCY_PROBE);
#endif
  for (const fs::path& candidate : candidates) {
    tried.push_back(candidate.string());
    if (fs::is_regular_file(candidate, ec) && access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return {};
}

struct probe_line {
  nlohmann::json json;
  std::string kernel;
  std::string device;
  std::uint32_t block = 0;
  std::uint32_t regs = 0;
  std::uint64_t static_smem = 0;
  std::uint64_t dynamic_smem = 0;
  std::int64_t blocks_per_sm = 0;
};

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (const std::string& item : items)
    out += (out.empty() ? "" : separator) + item;
  return out;
}

TEST(OccupancyVsRuntime, ModelMatchesCudaOccupancyCalculatorForEveryProbedKernel) {
  std::vector<std::string> tried;
  const fs::path probe = find_probe(tried);
  if (probe.empty())
    GTEST_SKIP() << "no NVIDIA GPU: the occupancy probe was not built (configure with "
                    "-DRPL_BUILD_CUDA=ON on a machine with the CUDA toolkit); looked at: "
                 << join(tried, ", ");

  workers::child_options options;
  options.argv = {probe.string()};
  options.max_output_bytes = 32u << 20;
  const workers::child_outcome outcome = workers::run_child(options, std::chrono::minutes(3));
  ASSERT_TRUE(outcome.launched) << probe << ": " << outcome.launch_error;
  ASSERT_FALSE(outcome.timed_out) << probe << " ran past 3 minutes; output:\n" << outcome.output;
  ASSERT_FALSE(outcome.output_truncated) << probe << " printed more than 32 MiB";

  // JSON lines and notes (lines starting "occupancy_probe:") share stdout; stderr, merged in, only
  // carries a fatal error.
  std::vector<probe_line> lines;
  std::vector<std::string> notes;
  std::vector<std::string> bad_lines;
  std::istringstream stream(outcome.output);
  for (std::string text; std::getline(stream, text);) {
    if (text.empty())
      continue;
    if (text.front() != '{') {
      notes.push_back(text);
      continue;
    }
    try {
      probe_line line;
      line.json = nlohmann::json::parse(text);
      line.kernel = line.json.at("kernel").get<std::string>();
      line.device = line.json.at("device").get<std::string>();
      line.block = line.json.at("block").get<std::uint32_t>();
      line.regs = line.json.at("regs").get<std::uint32_t>();
      line.static_smem = line.json.at("static_smem").get<std::uint64_t>();
      line.dynamic_smem = line.json.at("dynamic_smem").get<std::uint64_t>();
      line.blocks_per_sm = line.json.at("blocks_per_sm").get<std::int64_t>();
      lines.push_back(std::move(line));
    } catch (const std::exception& error) {
      bad_lines.push_back(text + "  (" + error.what() + ")");
    }
  }
  if (outcome.exit_code == 77)
    GTEST_SKIP() << "no NVIDIA GPU: " << probe << " exited 77: " << join(notes, "; ");
  ASSERT_TRUE(outcome.succeeded()) << probe << " failed (exit " << outcome.exit_code << ", signal "
                                   << outcome.term_signal << "); output:\n"
                                   << outcome.output;
  EXPECT_TRUE(bad_lines.empty()) << "unparsable probe lines:\n" << join(bad_lines, "\n");

  std::map<std::string, std::optional<arch_model>> archs;
  std::map<std::string, std::string> arch_errors;
  std::vector<std::string> mismatches;
  std::map<std::string, int> mismatches_by_kernel;
  std::size_t compared = 0;
  for (const probe_line& line : lines) {
    if (!archs.contains(line.device)) {
      try {
        archs[line.device] = load_arch(line.device);
      } catch (const arch_error& error) {
        archs[line.device] = std::nullopt;
        arch_errors[line.device] = error.what();
      }
    }
    const std::optional<arch_model>& arch = archs[line.device];
    if (!arch)
      continue;
    kernel_resources kernel;
    kernel.block_size = line.block;
    kernel.vgprs = line.regs;
    kernel.lds_bytes = line.static_smem + line.dynamic_smem;
    const occupancy_result model = compute_occupancy(*arch, kernel);
    ++compared;
    if (static_cast<std::int64_t>(model.active_workgroups_per_cu) != line.blocks_per_sm) {
      std::ostringstream detail;
      detail << line.kernel << ": block " << line.block << ", " << line.regs << " regs, "
             << line.static_smem << " B static + " << line.dynamic_smem
             << " B dynamic shared (lds_bytes " << kernel.lds_bytes << ") on " << line.device
             << ": runtime " << line.blocks_per_sm << " blocks/SM, model "
             << model.active_workgroups_per_cu << " (limiter " << to_string(model.limiter) << ", "
             << model.active_waves_per_simd << " warps/SM; warps/SM each resource allows:";
      for (const auto& [resource, warps] : model.limit_by_resource)
        detail << " " << resource << "=" << warps;
      detail << ")  line: " << line.json.dump();
      mismatches.push_back(detail.str());
      ++mismatches_by_kernel[line.kernel];
    }
  }
  for (const auto& [device, message] : arch_errors)
    ADD_FAILURE() << "the probe ran on " << device << ", which has no model: " << message;

  std::cout << "occupancy vs runtime: " << lines.size() << " probe lines, " << compared
            << " compared, " << mismatches.size() << " mismatches";
  if (!lines.empty())
    std::cout << " (device " << lines.front().device << ", "
              << lines.front().json.value("name", std::string{"?"}) << ")";
  std::cout << "\n";
  for (const auto& [kernel, count] : mismatches_by_kernel)
    std::cout << "  mismatches in " << kernel << ": " << count << "\n";

  EXPECT_GE(compared, 40u) << "too few combinations compared; probe notes:\n" << join(notes, "\n");
  EXPECT_TRUE(mismatches.empty()) << mismatches.size() << " of " << compared
                                  << " combinations differ from the CUDA runtime:\n"
                                  << join(mismatches, "\n");
}

} // namespace
} // namespace rpl::stages
