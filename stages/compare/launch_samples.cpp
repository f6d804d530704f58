#include "stages/compare/launch_samples.hpp"

namespace rpl::stages::compare {

std::string format_dim(const launch_dim& d) {
  std::string out = std::to_string(d[0]);
  if (d[1] != 1 || d[2] != 1)
    out += "x" + std::to_string(d[1]);
  if (d[2] != 1)
    out += "x" + std::to_string(d[2]);
  return out;
}

std::string describe_shape(const launch_dim& grid, const launch_dim& block) {
  return "grid " + format_dim(grid) + " block " + format_dim(block);
}

} // namespace rpl::stages::compare
