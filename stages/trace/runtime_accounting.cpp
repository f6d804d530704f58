#include "stages/trace/runtime_accounting.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

namespace rpl::stages::rocpd {
namespace {

constexpr std::array<std::string_view, 1> helper_prefixes = {"__amd_rocclr_"};

bool by_total_then_name(const auto& a, const auto& b) {
  if (a.total_ns != b.total_ns) {
    return a.total_ns > b.total_ns;
  }
  return a.name < b.name;
}

} // namespace

std::span<const std::string_view> runtime_helper_prefixes() {
  return helper_prefixes;
}

bool is_runtime_helper(std::string_view kernel_name) {
  return std::any_of(helper_prefixes.begin(), helper_prefixes.end(),
                     [&](std::string_view prefix) { return kernel_name.starts_with(prefix); });
}

kernel_stats kernel_statistics(std::string name, std::vector<std::int64_t> durations_ns) {
  kernel_stats stats;
  stats.runtime_helper = is_runtime_helper(name);
  stats.name = std::move(name);
  stats.count = durations_ns.size();
  if (durations_ns.empty()) {
    return stats;
  }
  std::int64_t total = 0;
  for (const std::int64_t d : durations_ns) {
    total += d;
  }
  stats.total_ns = static_cast<double>(total);
  // Sorted once here, for summarize_sorted and the p95 (an index); the figures do not depend on
  // the input order.
  std::sort(durations_ns.begin(), durations_ns.end());
  const sample_stats summary = stages::summarize_sorted(durations_ns);
  stats.mean_ns = summary.mean;
  stats.median_ns = summary.median;
  stats.min_ns = summary.min;
  stats.max_ns = summary.max;
  stats.cv = summary.cv;
  // Nearest rank: the smallest duration that at least 95 % of the dispatches do not exceed, always
  // an observed value (no interpolation, so it is reproducible by hand and in SQL).
  const std::size_t n = durations_ns.size();
  const std::size_t rank = (95 * n + 99) / 100; // ceil(0.95 n) in integers, 1-based
  stats.p95_ns = static_cast<double>(durations_ns[rank - 1]);
  return stats;
}

runtime_accumulator::runtime_accumulator(std::vector<agent_row> agents,
                                         std::vector<queue_row> queues,
                                         std::vector<stream_row> streams)
    : agent_rows_(std::move(agents)), queue_rows_(std::move(queues)),
      stream_rows_(std::move(streams)) {}

runtime_accumulator::runtime_accumulator(const reader& source)
    : runtime_accumulator(source.agents(), source.queues(), source.streams()) {}

void runtime_accumulator::add(const dispatch_row& row) {
  const std::int64_t duration = row.end_ns - row.start_ns;
  const auto address = reinterpret_cast<std::uintptr_t>(row.kernel_name.data());
  name_slot& slot =
      name_slots_.slots[(address * 0x9E3779B97F4A7C15ull) >> 52 & (name_slots_.slots.size() - 1)];
  if (slot.acc == nullptr || *slot.name != row.kernel_name) {
    auto it = kernels_.find(row.kernel_name);
    if (it == kernels_.end()) {
      it = kernels_.emplace(std::string(row.kernel_name), kernel_acc{}).first;
    }
    slot = name_slot{&it->first, &it->second}; // unordered_map nodes stay put on rehash
  }
  slot.acc->durations_ns.push_back(duration);
  slot.acc->total_ns += duration;

  if (dispatch_count_ == 0) {
    min_start_ns_ = row.start_ns;
    max_end_ns_ = row.end_ns;
  } else {
    min_start_ns_ = std::min(min_start_ns_, row.start_ns);
    max_end_ns_ = std::max(max_end_ns_, row.end_ns);
  }
  ++dispatch_count_;

  // Agent ids are node ids of the machine, the same in every process's file; queue and stream
  // handles only mean something inside their process.
  agents_.add(key{row.database, 0, row.agent_id}, duration);
  queues_.add(key{row.database, row.pid, row.queue_id}, duration);
  streams_.add(key{row.database, row.pid, row.stream_id}, duration);
  processes_.add(key{row.database, row.pid, 0}, duration);
}

void runtime_accumulator::group_set::add(const key& k, std::int64_t duration_ns) {
  group_acc* acc = nullptr;
  for (recent_entry& entry : recent.slots) {
    if (entry.acc != nullptr && entry.k == k) {
      acc = entry.acc;
      break;
    }
  }
  if (acc == nullptr) {
    acc = &groups[k];
    recent.slots[next_victim] = recent_entry{k, acc};
    next_victim = (next_victim + 1) % recent.slots.size();
  }
  ++acc->count;
  acc->total_ns += duration_ns;
}

runtime_summary runtime_accumulator::finish() const {
  runtime_summary summary;
  summary.dispatch_count = dispatch_count_;
  summary.wall_span_ns =
      dispatch_count_ == 0 ? 0.0 : static_cast<double>(max_end_ns_ - min_start_ns_);
  std::int64_t user_ns = 0;
  std::int64_t helper_ns = 0;
  for (const auto& [name, acc] : kernels_) {
    kernel_stats stats = kernel_statistics(name, acc.durations_ns);
    if (stats.runtime_helper) {
      helper_ns += acc.total_ns;
      summary.helper_kernels.push_back(std::move(stats));
    } else {
      user_ns += acc.total_ns;
      summary.kernels.push_back(std::move(stats));
    }
  }
  summary.total_gpu_ns = static_cast<double>(user_ns);
  summary.helper_gpu_ns = static_cast<double>(helper_ns);
  std::sort(summary.kernels.begin(), summary.kernels.end(),
            by_total_then_name<kernel_stats, kernel_stats>);
  std::sort(summary.helper_kernels.begin(), summary.helper_kernels.end(),
            by_total_then_name<kernel_stats, kernel_stats>);
  if (!summary.kernels.empty()) {
    summary.dominant_kernel = summary.kernels.front().name;
  }

  // Groups with the same label (one GPU seen by several processes) are one line.
  auto collect = [](const group_set& set, auto&& label) {
    std::map<std::string, group_acc> merged;
    for (const auto& [k, acc] : set.groups) {
      group_acc& into = merged[label(k)];
      into.count += acc.count;
      into.total_ns += acc.total_ns;
    }
    std::vector<group_total> out;
    for (const auto& [name, acc] : merged) {
      out.push_back(group_total{name, acc.count, static_cast<double>(acc.total_ns)});
    }
    std::sort(out.begin(), out.end(), by_total_then_name<group_total, group_total>);
    return out;
  };
  summary.per_agent = collect(agents_, [&](const key& k) {
    const auto& [database, pid, id] = k;
    for (const agent_row& agent : agent_rows_) {
      if (agent.database == database && agent.id == id) {
        return (agent.name.empty() ? agent.type : agent.name) + " (agent " + std::to_string(id) +
               ")";
      }
    }
    return "agent " + std::to_string(id);
  });
  summary.per_queue = collect(queues_, [&](const key& k) {
    const auto& [database, pid, id] = k;
    for (const queue_row& queue : queue_rows_) {
      if (queue.database == database && queue.id == id) {
        return queue.name + " (pid " + std::to_string(pid) + ")";
      }
    }
    return "queue " + std::to_string(id) + " (pid " + std::to_string(pid) + ")";
  });
  summary.per_stream = collect(streams_, [&](const key& k) {
    const auto& [database, pid, id] = k;
    for (const stream_row& stream : stream_rows_) {
      if (stream.database == database && stream.id == id) {
        return stream.name + " (pid " + std::to_string(pid) + ")";
      }
    }
    return "stream " + std::to_string(id) + " (pid " + std::to_string(pid) + ")";
  });
  summary.per_process =
      collect(processes_, [](const key& k) { return "pid " + std::to_string(std::get<1>(k)); });
  return summary;
}

runtime_summary summarize(const reader& source) {
  runtime_accumulator accumulator(source);
  source.for_each_dispatch([&](const dispatch_row& row) { accumulator.add(row); },
                           dispatch_fields::accounting);
  return accumulator.finish();
}

run_stability across_runs(const std::vector<runtime_summary>& runs) {
  run_stability result;
  std::vector<std::int64_t> totals;
  for (const runtime_summary& run : runs) {
    result.per_run_total_ns.push_back(run.total_gpu_ns);
    totals.push_back(std::llround(run.total_gpu_ns)); // sums of integer ns: exact below 2^53
  }
  const sample_stats stats = stages::summarize(totals);
  result.mean = stats.mean;
  result.median = stats.median;
  result.stddev = stats.stddev;
  result.cv = stats.cv;
  result.stability = classify_cv(stats.cv);
  return result;
}

} // namespace rpl::stages::rocpd
