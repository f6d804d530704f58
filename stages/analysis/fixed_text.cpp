#include "stages/analysis/fixed_text.hpp"

#include <cstdio>

namespace rpl::stages {

std::string fixed_text(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

} // namespace rpl::stages
