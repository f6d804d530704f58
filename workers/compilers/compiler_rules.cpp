#include "workers/compilers/compiler_rules.hpp"

#include <filesystem>

#include "workers/compilers/detail/flag_table.hpp"
#include "workers/compilers/hipcc/hipcc_rules.hpp"
#include "workers/compilers/host/host_rules.hpp"
#include "workers/compilers/nvcc/nvcc_rules.hpp"

namespace rpl::workers {

std::vector<std::string> compiler_rules::worker_argv(std::vector<std::string> argv) const {
  return argv;
}

bool compiler_rules::names_target(const std::vector<std::string>&) const {
  return true;
}

std::vector<std::string> compiler_rules::target_argv(std::string_view) const {
  return {};
}

std::vector<messages::kernel_resource_usage>
compiler_rules::parse_resource_usage(std::string_view) const {
  return {};
}

std::optional<argv_refusal> compiler_rules::check_argv(const std::vector<std::string>& argv,
                                                       const argv_limits& limits) const {
  // A compiler no family claims may be any of them underneath (a wrapper named cc around nvcc).
  static const detail::argv_dialect strict{
      "this compiler",
      {detail::nvcc_flag_rules(), detail::host_flag_rules(), detail::hipcc_flag_rules()},
      false,
      true};
  return detail::judge_words(argv, 1, strict, limits);
}

std::vector<std::string> compiler_rules::default_target_argv(const std::vector<std::string>& argv,
                                                             std::string_view device_arch) const {
  if (names_target(argv))
    return {};
  return target_argv(device_arch);
}

const compiler_rules& compiler_rules_for(const std::vector<std::string>& argv) {
  static const nvcc_rules nvcc;
  static const hipcc_rules hipcc;
  static const host_rules host;
  for (const compiler_rules* rules :
       {static_cast<const compiler_rules*>(&nvcc), static_cast<const compiler_rules*>(&hipcc)}) {
    if (rules->matches(argv))
      return *rules;
  }
  return host;
}

std::string compiler_file_name(const std::vector<std::string>& argv) {
  if (argv.empty())
    return {};
  return std::filesystem::path(argv.front()).filename().string();
}

} // namespace rpl::workers
