#include "stages/compare/launch_collector.hpp"

#include <algorithm>
#include <cstdint>

#include "stages/trace/runtime_accounting.hpp"

namespace rpl::stages::compare {

namespace {

double median_of(std::vector<double> v) {
  if (v.empty())
    return 0.0;
  const std::size_t n = v.size();
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n / 2), v.end());
  const double upper = v[n / 2];
  if (n % 2 == 1)
    return upper;
  return (upper + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n / 2))) /
         2.0;
}

} // namespace

launch_collector::launch_collector(std::vector<std::size_t> run_of_database)
    : run_of_database_(std::move(run_of_database)) {
  for (const std::size_t r : run_of_database_)
    runs_ = std::max(runs_, r + 1);
}

launch_collector::name_entry& launch_collector::entry_of(std::string_view name) {
  // Fibonacci hashing of the address: names allocated side by side land in different slots.
  const auto address = reinterpret_cast<std::uintptr_t>(name.data());
  slot& s = slots_[(address * 0x9E3779B97F4A7C15ull) >> 52];
  if (s.data == name.data() && names_[s.index].name == name)
    return names_[s.index];
  auto it = index_.find(std::string(name));
  if (it == index_.end()) {
    it = index_.emplace(std::string(name), names_.size()).first;
    names_.push_back({std::string(name), rocpd::is_runtime_helper(name), {}, 0});
  }
  s = {name.data(), it->second};
  return names_[it->second];
}

void launch_collector::add(const rocpd::dispatch_row& row) {
  name_entry& e = entry_of(row.kernel_name);
  if (e.helper)
    return;
  const launch_dim grid{row.grid[0], row.grid[1], row.grid[2]};
  const launch_dim block{row.workgroup[0], row.workgroup[1], row.workgroup[2]};
  if (e.last >= e.shapes.size() || e.shapes[e.last].grid != grid ||
      e.shapes[e.last].block != block) {
    auto found = std::find_if(e.shapes.begin(), e.shapes.end(),
                              [&](const shape& s) { return s.grid == grid && s.block == block; });
    if (found == e.shapes.end()) {
      e.shapes.push_back({grid, block, std::vector<std::vector<double>>(runs_)});
      found = e.shapes.end() - 1;
    }
    e.last = static_cast<std::size_t>(found - e.shapes.begin());
  }
  const std::size_t run =
      row.database < run_of_database_.size() ? run_of_database_[row.database] : 0;
  e.shapes[e.last].by_run[std::min(run, runs_ - 1)].push_back(
      static_cast<double>(row.end_ns - row.start_ns));
}

std::vector<launch_samples> launch_collector::finish() const {
  std::vector<launch_samples> out;
  for (const auto& e : names_) {
    if (e.helper)
      continue;
    for (const auto& s : e.shapes) {
      launch_samples l;
      l.name = e.name;
      l.grid = s.grid;
      l.block = s.block;
      std::size_t total = 0;
      for (const auto& r : s.by_run)
        total += r.size();
      l.durations_ns.reserve(total);
      for (const auto& r : s.by_run) {
        l.durations_ns.insert(l.durations_ns.end(), r.begin(), r.end());
        if (runs_ > 1 && !r.empty())
          l.run_medians_ns.push_back(median_of(r));
      }
      out.push_back(std::move(l));
    }
  }
  return out;
}

} // namespace rpl::stages::compare
