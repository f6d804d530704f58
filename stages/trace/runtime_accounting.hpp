#pragma once
/// Runtime accounting of a trace: per-kernel duration statistics, GPU time against wall span, and
/// totals per agent, queue, stream and process, computed from dispatch rows as they stream past.
/// Also the stability of the GPU total across repeated runs.

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "stages/statistics/statistics.hpp"
#include "stages/trace/rocpd_reader.hpp"

namespace rpl::stages::rocpd {

/// Name prefixes of kernels the runtime launches on its own behalf (blits, fills, the device
/// scheduler), not the user's work: ROCclr's `__amd_rocclr_*` kernels (copyBuffer, fillBuffer*,
/// copyImage*, fillImage, gwsInit, initHeap, streamOps*, scheduler, ...). Kept conservative: a
/// name is only a helper if it starts with one of these.
std::span<const std::string_view> runtime_helper_prefixes();

/// Whether `kernel_name` is a runtime helper kernel (see runtime_helper_prefixes).
bool is_runtime_helper(std::string_view kernel_name);

/// Duration statistics of one kernel name over all its dispatches (all files merged).
struct kernel_stats {
  std::string name;
  std::size_t count = 0;
  double total_ns = 0;
  double mean_ns = 0;
  double median_ns = 0; ///< mean of the middle two for an even count
  double p95_ns = 0;    ///< nearest rank: the ceil(0.95 * count)-th smallest duration
  double min_ns = 0;
  double max_ns = 0;
  double cv = 0; ///< sample stddev (n - 1) / mean; 0 for one dispatch
  bool runtime_helper = false;
};

struct group_total {
  std::string name;
  std::size_t count = 0;
  double total_ns = 0; ///< SUM(end - start) of every dispatch in the group, helpers included
};

struct runtime_summary {
  std::vector<kernel_stats> kernels;        ///< user kernels, by total_ns descending, then name
  std::vector<kernel_stats> helper_kernels; ///< runtime helpers, same order
  double total_gpu_ns = 0;                  ///< SUM(end - start) of user kernels
  double helper_gpu_ns = 0;                 ///< SUM(end - start) of helper kernels
  double wall_span_ns = 0;                  ///< max(end) - min(start) over all dispatches
  std::size_t dispatch_count = 0;           ///< all dispatches, helpers included
  /// "gfx90a (agent 1)": agents of the same name and id in several files are one GPU.
  std::vector<group_total> per_agent;
  std::vector<group_total> per_queue;   ///< "Queue 1 (pid 4242)": queue handles are per process
  std::vector<group_total> per_stream;  ///< "Default Stream (pid 4242)"
  std::vector<group_total> per_process; ///< "pid 4242"
  std::string dominant_kernel;          ///< the user kernel with the largest total; empty if none
};

/// Accumulates dispatches one at a time; memory is one int64 per dispatch (8 MB per million) plus
/// one entry per kernel name and group. Groups come back sorted by total_ns descending, then name.
class runtime_accumulator {
public:
  /// Labels for agents, queues and streams come from these rows (matched by database and id).
  runtime_accumulator(std::vector<agent_row> agents,
                      std::vector<queue_row> queues,
                      std::vector<stream_row> streams);
  /// Takes the labels from `source`'s info tables.
  explicit runtime_accumulator(const reader& source);

  void add(const dispatch_row& row);
  runtime_summary finish() const;

private:
  struct kernel_acc {
    std::vector<std::int64_t> durations_ns;
    std::int64_t total_ns = 0;
  };
  struct group_acc {
    std::size_t count = 0;
    std::int64_t total_ns = 0;
  };
  using key = std::tuple<std::size_t, std::int64_t, std::int64_t>; // database, pid, id
  struct string_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const {
      return std::hash<std::string_view>{}(text);
    }
  };

  /// Slots that point into the maps below for the per-dispatch path; a copied or moved accumulator
  /// starts with them empty, so they never point into another accumulator's maps.
  template <typename Slot, std::size_t N> struct slot_cache {
    std::array<Slot, N> slots{};
    slot_cache() = default;
    slot_cache(const slot_cache&) {}
    slot_cache& operator=(const slot_cache&) {
      slots = {};
      return *this;
    }
  };

  std::unordered_map<std::string, kernel_acc, string_hash, std::equal_to<>> kernels_;
  /// The reader hands out the same name storage for every dispatch of a kernel, so a slot chosen by
  /// the name's address finds its entry without hashing the name; the name is still compared, so a
  /// slot that now holds another name is only a miss.
  struct name_slot {
    const std::string* name = nullptr;
    kernel_acc* acc = nullptr;
  };
  slot_cache<name_slot, 4096> name_slots_; // applications run thousands of kernels
  /// Consecutive dispatches mostly cycle through a few agents, queues, streams and processes, so
  /// each group set keeps its last few entries (map nodes do not move) and skips the tree walk.
  struct group_set {
    std::map<key, group_acc> groups;
    struct recent_entry {
      key k{};
      group_acc* acc = nullptr;
    };
    slot_cache<recent_entry, 8> recent;
    std::size_t next_victim = 0;
    void add(const key& k, std::int64_t duration_ns);
  };
  group_set agents_;
  group_set queues_;
  group_set streams_;
  group_set processes_;
  std::vector<agent_row> agent_rows_;
  std::vector<queue_row> queue_rows_;
  std::vector<stream_row> stream_rows_;
  std::int64_t min_start_ns_ = 0;
  std::int64_t max_end_ns_ = 0;
  std::size_t dispatch_count_ = 0;
};

/// Streams every dispatch of `source` through a runtime_accumulator.
runtime_summary summarize(const reader& source);

/// Statistics of one kernel's durations (exposed for the golden tests and the CLI).
kernel_stats kernel_statistics(std::string name, std::vector<std::int64_t> durations_ns);

/// How repeatable the GPU total (user kernels) is across runs of the same workload.
struct run_stability {
  std::vector<double> per_run_total_ns;
  double mean = 0;
  double median = 0;
  double stddev = 0; ///< sample stddev (n - 1)
  double cv = 0;
  stability_class stability =
      stability_class::stable; ///< classify_cv: ≤ 0.05 stable, ≤ 0.10 moderate
};

run_stability across_runs(const std::vector<runtime_summary>& runs);

} // namespace rpl::stages::rocpd
