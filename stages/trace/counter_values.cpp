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
  // The argument list is the balanced parenthesized group that ends the name (a name may start
  // with one too: "(anonymous namespace)::scale(float*)"; template arguments may hold others).
  std::size_t end = base.find_last_not_of(' ');
  if (end != std::string::npos && base[end] == ')') {
    int depth = 0;
    for (std::size_t i = end + 1; i-- > 0;) {
      if (base[i] == ')')
        ++depth;
      else if (base[i] == '(' && --depth == 0) {
        base.erase(i);
        break;
      }
    }
  }
  std::string key;
  for (const char c : base)
    if (c != ' ')
      key += c;
  // Tools spell the anonymous namespace two ways: c++filt's "(anonymous namespace)" (CUPTI,
  // rocprofv3) and "<unnamed>" (some demanglers).
  static const std::string unnamed = "<unnamed>::";
  for (auto at = key.find(unnamed); at != std::string::npos; at = key.find(unnamed, at))
    key.replace(at, unnamed.size(), "(anonymousnamespace)::");
  return key;
}

namespace {

/// "row_gather" of "(anonymousnamespace)::row_gather" or "ns::row_gather<4>": a key without its
/// scopes and template arguments.
std::string bare_name(const std::string& key) {
  std::string name = key;
  if (const auto open = name.find('<'); open != std::string::npos && name.back() == '>')
    name.erase(open);
  if (const auto scope = name.rfind("::"); scope != std::string::npos)
    name.erase(0, scope + 2);
  return name;
}

} // namespace

const kernel_counters* find_kernel_counters(const std::map<std::string, kernel_counters>& counters,
                                            const std::string& name) {
  const std::string key = kernel_key(name);
  if (const auto it = counters.find(key); it != counters.end())
    return &it->second;
  const std::string bare = bare_name(key);
  if (bare.empty())
    return nullptr;
  const kernel_counters* found = nullptr;
  for (const auto& [other, k] : counters) {
    if (bare_name(other) != bare)
      continue;
    if (found != nullptr)
      return nullptr; // several kernels share the bare name: not told apart
    found = &k;
  }
  return found;
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
