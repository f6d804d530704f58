#pragma once
/// Hardware counter values from rocpd counter passes, per kernel name: for each counter, the sum
/// over the dispatches that recorded it and how many did, so passes recorded as separate databases
/// (same application, different counter sets, dispatch ids not comparable) merge per kernel name.
/// A counter recorded per instance (one rocpd_pmc_event row per XCD, SE, ...) is summed over its
/// instances first (SUM(value) per dispatch event and counter, as rocpd's counters_collection view
/// does); a derived `_sum` counter is one row and reads the same way.

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace rpl::stages::rocpd {

struct counter_total {
  double sum = 0;             ///< over the dispatches that recorded it
  std::size_t dispatches = 0; ///< how many did
};

struct kernel_counters {
  std::string name;           ///< display name, as the pass recorded it
  std::string target;         ///< the agent's name: "gfx942", "sm_90"
  std::string product;        ///< the agent's product name, "NVIDIA H200"
  std::size_t dispatches = 0; ///< dispatches with any counter, over all passes
  double duration_sum_ns = 0; ///< their durations as the passes recorded them
  std::map<std::string, counter_total, std::less<>> counters; ///< found by string_view too
  /// Per dispatch, in each pass's dispatch order: the n-th dispatch of this kernel in every pass
  /// is taken as the same launch (passes replay the same application), so its counters from all
  /// passes combine. At most `max_dispatches` (read_kernel_counters), each with its counters
  /// (instances summed) and the duration a pass recorded (the last pass's).
  struct dispatch {
    double duration_ns = 0;
    std::map<std::string, double> counters;
  };
  std::vector<dispatch> dispatches_by_ordinal;
};

/// The per-kernel counters of `paths` (each a counter-pass file), keyed by kernel_key(name): one
/// scan of each dispatch table and a plain scan of each rocpd_pmc_event table on two threads,
/// joined in memory (counter_collector.hpp). Throws rocpd_error naming the file for one that
/// cannot be read.
std::map<std::string, kernel_counters>
read_kernel_counters(const std::vector<std::filesystem::path>& paths,
                     std::size_t max_dispatches = 1000);

/// The name a kernel is matched by across tools: "void " and the argument list dropped, spaces
/// removed ("sgemm_tiled(const float *, ...)" and "sgemm_tiled(float const*, ...)" are one
/// kernel, as ncu and the CUPTI tracer print them differently). Overloads then share a key.
std::string kernel_key(const std::string& name);

/// The counters of the kernel named `name` in `counters` (keyed by kernel_key): by its key, else
/// by its bare function name ("row_gather" for "(anonymous namespace)::row_gather(float*)" or
/// "ns::row_gather<4>(float*)") when exactly one entry has that bare name on either side: Nsight
/// Compute's CSV names a kernel by its function name alone. nullptr when none or several match.
const kernel_counters* find_kernel_counters(const std::map<std::string, kernel_counters>& counters,
                                            const std::string& name);

} // namespace rpl::stages::rocpd
