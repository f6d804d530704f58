#pragma once
/// A number as the reports print it: fixed notation with a given number of decimals.

#include <string>

namespace rpl::stages {

/// `value` with `digits` digits after the point, as printf's "%.*f" writes it.
std::string fixed_text(double value, int digits = 1);

} // namespace rpl::stages
