#include "workers/compilers/hipcc/hipcc_rules.hpp"

#include "workers/compilers/detail/flag_table.hpp"

namespace rpl::workers {

namespace {

bool starts_with(std::string_view word, std::string_view prefix) {
  return word.substr(0, prefix.size()) == prefix;
}

} // namespace

bool hipcc_rules::matches(const std::vector<std::string>& argv) const {
  return compiler_file_name(argv) == "hipcc";
}

bool hipcc_rules::names_target(const std::vector<std::string>& argv) const {
  for (const std::string& word : argv) {
    // "--offload-arch gfx942" (value in the next word) starts with the flag too.
    for (const char* flag : {"--offload-arch", "--amdgpu-target", "--cuda-gpu-arch"}) {
      if (starts_with(word, flag))
        return true;
    }
    if (starts_with(word, "-march=gfx") || starts_with(word, "-mcpu=gfx"))
      return true;
  }
  return false;
}

std::vector<std::string> hipcc_rules::target_argv(std::string_view device_arch) const {
  if (device_arch.size() <= 3 || !starts_with(device_arch, "gfx"))
    return {};
  return {"--offload-arch=" + std::string(device_arch)};
}

std::optional<argv_refusal> hipcc_rules::check_argv(const std::vector<std::string>& argv,
                                                    const argv_limits& limits) const {
  static const detail::argv_dialect hipcc{
      "hipcc", {detail::host_flag_rules(), detail::hipcc_flag_rules()}, false, true};
  return detail::judge_words(argv, 1, hipcc, limits);
}

} // namespace rpl::workers
