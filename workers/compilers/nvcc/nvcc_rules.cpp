#include "workers/compilers/nvcc/nvcc_rules.hpp"

#include <algorithm>

#include "workers/compilers/detail/flag_table.hpp"
#include "workers/compilers/nvcc/nvcc_resource_usage.hpp"

namespace rpl::workers {

bool nvcc_rules::matches(const std::vector<std::string>& argv) const {
  return compiler_file_name(argv) == "nvcc";
}

std::vector<std::string> nvcc_rules::worker_argv(std::vector<std::string> argv) const {
  const bool asked = std::any_of(argv.begin(), argv.end(), [](const std::string& word) {
    return word == "--resource-usage" || word == "-res-usage";
  });
  // The report changes nothing in the artifact; without it the reply has no registers or spills.
  if (!asked)
    argv.push_back("--resource-usage");
  return argv;
}

bool nvcc_rules::names_target(const std::vector<std::string>& argv) const {
  for (const std::string& word : argv) {
    for (const char* flag :
         {"-arch", "--gpu-architecture", "-gencode", "--generate-code", "-code"}) {
      if (word.rfind(flag, 0) == 0)
        return true;
    }
  }
  return false;
}

std::vector<std::string> nvcc_rules::target_argv(std::string_view device_arch) const {
  if (device_arch.size() <= 3 || device_arch.substr(0, 3) != "sm_")
    return {};
  return {"-arch=" + std::string(device_arch)};
}

std::vector<messages::kernel_resource_usage>
nvcc_rules::parse_resource_usage(std::string_view output) const {
  return parse_ptxas_resource_usage(output);
}

std::optional<argv_refusal> nvcc_rules::check_argv(const std::vector<std::string>& argv,
                                                   const argv_limits& limits) const {
  // nvcc's table first: on an equal spelling (-o, -I, -Xlinker) nvcc's reading wins.
  static const detail::argv_dialect nvcc{
      "nvcc",
      {detail::nvcc_flag_rules(), detail::host_flag_rules(), detail::hipcc_flag_rules()},
      true,
      true,
      false};
  return detail::judge_words(argv, 1, nvcc, limits);
}

} // namespace rpl::workers
