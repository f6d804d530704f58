#include "stages/trace/kernel_objective.hpp"

#include <algorithm>
#include <stdexcept>

#include "stages/trace/runtime_accounting.hpp"

namespace rpl::stages::rocpd {

kernel_selector::kernel_selector(std::string kernel_regex, std::uint32_t warmup_dispatches)
    : pattern_(std::move(kernel_regex)), warmup_dispatches_(warmup_dispatches) {
  if (pattern_.empty()) {
    return;
  }
  try {
    regex_.emplace(pattern_, std::regex::ECMAScript | std::regex::optimize);
  } catch (const std::regex_error& error) {
    throw std::invalid_argument("--kernel '" + pattern_ +
                                "' is not an ECMAScript regular expression (" + error.what() +
                                "); fix: escape special characters such as ( [ * + ? with a "
                                "backslash, or pass part of the kernel's name");
  }
}

bool kernel_selector::selects(std::string_view kernel_name) const {
  if (is_runtime_helper(kernel_name)) {
    return false;
  }
  return !regex_ || std::regex_search(kernel_name.begin(), kernel_name.end(), *regex_);
}

std::string kernel_selector::describe() const {
  return pattern_.empty() ? std::string("--kernel (every user kernel)")
                          : "--kernel '" + pattern_ + "'";
}

void dispatch_collector::add(std::string_view kernel_name,
                             std::int64_t pid,
                             std::int64_t start_ns,
                             std::int64_t end_ns) {
  ++dispatch_count_;
  auto it = names_.find(kernel_name);
  if (it == names_.end()) {
    // The regex runs once per name, not per dispatch: a run may have millions of dispatches.
    it = names_.emplace(std::string(kernel_name), name_entry{}).first;
    it->second.selected = selector_->selects(kernel_name);
  }
  ++it->second.dispatches;
  if (it->second.selected) {
    it->second.per_process[pid].emplace_back(start_ns, end_ns);
  }
}

run_selection dispatch_collector::finish() const {
  run_selection run;
  run.dispatch_count = dispatch_count_;
  for (const auto& [name, entry] : names_) {
    run.seen.push_back({name, entry.dispatches, is_runtime_helper(name), entry.selected});
    if (!entry.selected) {
      continue;
    }
    selected_kernel kernel;
    kernel.name = name;
    for (auto [pid, dispatches] : entry.per_process) {
      // Warm-up is "the first N of this process", so order by start time: a tracer need not
      // write its rows in launch order (CUPTI flushes buffers per stream).
      std::sort(dispatches.begin(), dispatches.end());
      const std::size_t dropped =
          std::min<std::size_t>(selector_->warmup_dispatches(), dispatches.size());
      kernel.warmup_dropped += dropped;
      for (std::size_t i = dropped; i < dispatches.size(); ++i) {
        kernel.durations_ns.push_back(dispatches[i].second - dispatches[i].first);
      }
    }
    run.kernels.push_back(std::move(kernel));
  }
  return run;
}

std::int64_t median_ns(std::vector<std::int64_t> values_ns) {
  if (values_ns.empty()) {
    return 0;
  }
  const std::size_t middle = values_ns.size() / 2;
  std::nth_element(values_ns.begin(), values_ns.begin() + static_cast<std::ptrdiff_t>(middle),
                   values_ns.end());
  const std::int64_t upper = values_ns[middle];
  if (values_ns.size() % 2 == 1) {
    return upper;
  }
  const std::int64_t lower =
      *std::max_element(values_ns.begin(), values_ns.begin() + static_cast<std::ptrdiff_t>(middle));
  // lower + (upper - lower + 1) / 2 rounds half up without overflowing for large durations.
  return lower + (upper - lower + 1) / 2;
}

std::vector<std::int64_t> kernel_objective_samples(const run_selection& run) {
  std::vector<const selected_kernel*> left;
  for (const selected_kernel& kernel : run.kernels) {
    if (!kernel.durations_ns.empty()) {
      left.push_back(&kernel);
    }
  }
  if (left.empty()) {
    return {};
  }
  if (left.size() == 1) {
    return left.front()->durations_ns;
  }
  std::int64_t sum = 0;
  for (const selected_kernel* kernel : left) {
    sum += median_ns(kernel->durations_ns);
  }
  return {sum};
}

namespace {

/// "a, b, c (runtime helper)" with user kernels first, at most `max_names`, then "and N more".
std::string list_names(const std::vector<kernel_seen>& seen, std::size_t max_names) {
  std::vector<const kernel_seen*> ordered;
  for (const kernel_seen& kernel : seen) {
    if (!kernel.runtime_helper) {
      ordered.push_back(&kernel);
    }
  }
  for (const kernel_seen& kernel : seen) {
    if (kernel.runtime_helper) {
      ordered.push_back(&kernel);
    }
  }
  if (ordered.empty()) {
    return "none";
  }
  std::string text;
  const std::size_t shown = std::min(ordered.size(), max_names);
  for (std::size_t i = 0; i < shown; ++i) {
    text += (i == 0 ? "" : ", ") + ordered[i]->name;
    if (ordered[i]->runtime_helper) {
      text += " (runtime helper)";
    }
  }
  if (ordered.size() > shown) {
    text += " and " + std::to_string(ordered.size() - shown) + " more";
  }
  return text;
}

} // namespace

std::string describe_empty_selection(const kernel_selector& selector,
                                     const run_selection& run,
                                     std::size_t max_names) {
  const std::string subject = selector.describe();
  if (!run.kernels.empty()) {
    // Something matched, but every matched dispatch was a warm-up dispatch.
    std::string counts;
    for (const selected_kernel& kernel : run.kernels) {
      counts +=
          (counts.empty() ? "" : ", ") + kernel.name + " " + std::to_string(kernel.warmup_dropped);
    }
    return subject + ": every matched dispatch was a warm-up dispatch (--warmup-dispatches " +
           std::to_string(selector.warmup_dispatches()) +
           " per process and kernel; dispatched: " + counts +
           "); fix: lower --warmup-dispatches, or make the application launch the kernel more "
           "often";
  }
  const bool user_kernels_seen = std::any_of(
      run.seen.begin(), run.seen.end(), [](const kernel_seen& k) { return !k.runtime_helper; });
  std::string text = subject +
                     ": no dispatch matched; kernels seen: " + list_names(run.seen, max_names) +
                     "; fix: ";
  if (user_kernels_seen) {
    text += "pass a --kernel regular expression (ECMAScript, found anywhere in the name) that "
            "matches one of them";
  } else {
    text += "check that the application launches its kernels on the GPU (runtime helpers never "
            "count)";
  }
  return text;
}

} // namespace rpl::stages::rocpd
