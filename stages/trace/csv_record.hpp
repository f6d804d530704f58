#pragma once
/// One record of a comma-separated file (RFC 4180 quoting: a field may be quoted, "" inside quotes
/// is a quote), as Nsight Compute's --csv and rocprofv3's thread-trace stats files write them.
/// Each parser wraps the error with its file and a fix.

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace rpl::stages::csv {

/// A record that is not valid CSV: the problem in words ("a quote in the middle of a field", "a
/// quoted field never ends").
class csv_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The fields of the record that starts at `at` in `text`; advances `at` past its line end ("\n"
/// or "\r\n"). A line break inside quotes belongs to the field.
std::vector<std::string> read_record(std::string_view text, std::size_t& at);

} // namespace rpl::stages::csv
