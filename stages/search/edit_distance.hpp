#pragma once
/// Levenshtein distance between two names, for "did you mean" hints (a misspelt template
/// placeholder, a misspelt verb).

#include <cstddef>
#include <string_view>

namespace rpl::stages {

/// Insertions, deletions and substitutions that turn `a` into `b`.
std::size_t edit_distance(std::string_view a, std::string_view b);

} // namespace rpl::stages
