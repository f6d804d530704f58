#include "stages/trace/counter_values.hpp"

#include <exception>
#include <thread>

#include "stages/trace/counter_collector.hpp"
#include "stages/trace/rocpd_reader.hpp"

namespace rpl::stages::rocpd {

std::string kernel_key(const std::string& name) {
  std::string base = name;
  if (base.rfind("void ", 0) == 0)
    base.erase(0, 5);
  // The argument list starts at the first '(' outside template brackets.
  int depth = 0;
  for (std::size_t i = 0; i < base.size(); ++i) {
    if (base[i] == '<')
      ++depth;
    else if (base[i] == '>')
      --depth;
    else if (base[i] == '(' && depth <= 0) {
      base.erase(i);
      break;
    }
  }
  std::string key;
  for (const char c : base)
    if (c != ' ')
      key += c;
  return key;
}

std::map<std::string, kernel_counters>
read_kernel_counters(const std::vector<std::filesystem::path>& paths, std::size_t max_dispatches) {
  if (paths.empty())
    return {};
  const reader files = reader::open(paths);
  std::vector<std::size_t> databases(files.databases().size());
  for (std::size_t i = 0; i < databases.size(); ++i)
    databases[i] = i;
  counter_collector collector(files, databases, max_dispatches);
  // The pmc tables on a second thread while this one scans the dispatches, then both share what
  // is left of them.
  std::exception_ptr side_error;
  std::thread side([&] {
    try {
      collector.read_counter_rows();
    } catch (...) {
      side_error = std::current_exception();
    }
  });
  try {
    files.for_each_dispatch([&](const dispatch_row& row) { collector.add(row); },
                            dispatch_fields::report);
    collector.read_counter_rows();
  } catch (...) {
    side.join();
    throw;
  }
  side.join();
  if (side_error)
    std::rethrow_exception(side_error);
  return collector.finish();
}

} // namespace rpl::stages::rocpd
