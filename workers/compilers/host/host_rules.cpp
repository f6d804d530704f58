#include "workers/compilers/host/host_rules.hpp"

#include <cctype>

#include "workers/compilers/detail/flag_table.hpp"

namespace rpl::workers {

bool host_rules::matches(const std::vector<std::string>& argv) const {
  const std::string name = compiler_file_name(argv);
  for (const std::string_view family : {"g++", "gcc", "clang++", "clang", "c++", "cc"}) {
    if (name == family)
      return true;
    // Debian and Ubuntu install versioned drivers (g++-12, clang++-17) beside or instead of g++.
    const std::string prefix = std::string(family) + "-";
    if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0) {
      const std::string version = name.substr(prefix.size());
      bool digits = true;
      for (const char c : version) {
        if (std::isdigit(static_cast<unsigned char>(c)) == 0 && c != '.')
          digits = false;
      }
      if (digits && std::isdigit(static_cast<unsigned char>(version.front())) != 0)
        return true;
    }
  }
  return false;
}

std::optional<argv_refusal> host_rules::check_argv(const std::vector<std::string>& argv,
                                                   const argv_limits& limits) const {
  if (!matches(argv))
    return compiler_rules::check_argv(argv, limits);
  return detail::judge_words(argv, 1, detail::host_dialect(), limits);
}

} // namespace rpl::workers
