#include "stages/compare/launch_samples.hpp"

#include <cstdio>

namespace rpl::stages::compare {

std::string format_dim(const launch_dim& d) {
  // snprintf rather than operator+: GCC 12 at -O3 warns (-Wrestrict) on "x" + std::to_string().
  char text[40];
  if (d[2] != 1)
    std::snprintf(text, sizeof text, "%ux%ux%u", d[0], d[1], d[2]);
  else if (d[1] != 1)
    std::snprintf(text, sizeof text, "%ux%u", d[0], d[1]);
  else
    std::snprintf(text, sizeof text, "%u", d[0]);
  return text;
}

std::string describe_shape(const launch_dim& grid, const launch_dim& block) {
  return "grid " + format_dim(grid) + " block " + format_dim(block);
}

} // namespace rpl::stages::compare
