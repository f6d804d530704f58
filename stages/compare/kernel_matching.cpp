#include "stages/compare/kernel_matching.hpp"

#include <cstddef>
#include <map>
#include <string>

namespace rpl::stages::compare {

std::vector<launch_match> match_launches(const std::vector<launch_samples>& base,
                                         const std::vector<launch_samples>& next) {
  std::map<std::string, std::vector<std::size_t>> base_by_name, next_by_name;
  for (std::size_t i = 0; i < base.size(); ++i)
    base_by_name[base[i].name].push_back(i);
  for (std::size_t i = 0; i < next.size(); ++i)
    next_by_name[next[i].name].push_back(i);
  std::vector<char> base_used(base.size(), 0), next_used(next.size(), 0);
  std::vector<launch_match> out;
  for (std::size_t i = 0; i < base.size(); ++i) {
    const auto found = next_by_name.find(base[i].name);
    if (found == next_by_name.end())
      continue;
    const std::vector<std::size_t>& candidates = found->second;
    if (base_by_name[base[i].name].size() == 1 && candidates.size() == 1) {
      out.push_back({&base[i], &next[candidates.front()], false});
      base_used[i] = next_used[candidates.front()] = 1;
      continue;
    }
    for (const std::size_t j : candidates) {
      if (!next_used[j] && next[j].grid == base[i].grid && next[j].block == base[i].block) {
        out.push_back({&base[i], &next[j], true});
        base_used[i] = next_used[j] = 1;
        break;
      }
    }
  }
  for (std::size_t i = 0; i < base.size(); ++i)
    if (!base_used[i])
      out.push_back({&base[i], nullptr, base_by_name[base[i].name].size() > 1});
  for (std::size_t j = 0; j < next.size(); ++j)
    if (!next_used[j])
      out.push_back({nullptr, &next[j], next_by_name[next[j].name].size() > 1});
  return out;
}

} // namespace rpl::stages::compare
