#pragma once
/// compare's two human renderings of a comparison: the terminal table (the default) and Markdown
/// for a pull-request comment (--markdown). Both list the application figures, then one row per
/// kernel launch in the comparison's order with its verdict, medians, ratio and interval, its
/// critical-path effect, and why it changed; `same` rows are listed after the changes.

#include <string>

#include "stages/compare/comparison.hpp"

namespace rpl::stages::compare {

std::string to_text(const comparison& c);
std::string to_markdown(const comparison& c);

} // namespace rpl::stages::compare
