#pragma once
/// What a trace-timed lane measures in one traced run: the dispatches of the kernels that
/// `--kernel REGEX` selects (runtime helpers never count, see runtime_accounting.hpp's
/// is_runtime_helper), less each process's first `--warmup-dispatches` dispatches per kernel
/// name, reduced to samples: every duration when one kernel name is left, else one sample per run,
/// the sum of the per-name medians. Pure: no file is read here (the lane feeds rocpd rows in).

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <regex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rpl::stages::rocpd {

/// Which kernels count: a name is selected when it is not a runtime helper and `kernel_regex`
/// (ECMAScript) is found anywhere in it (std::regex_search: `gemm` selects `sgemm_tiled(...)`);
/// an empty regex selects every user kernel. Immutable: one per lane, shared by its runs.
class kernel_selector {
public:
  /// Throws std::invalid_argument naming the expression and a fix when it does not compile (a
  /// configuration error, caught at start-up).
  explicit kernel_selector(std::string kernel_regex, std::uint32_t warmup_dispatches = 1);

  bool selects(std::string_view kernel_name) const;
  const std::string& kernel_regex() const { return pattern_; }
  std::uint32_t warmup_dispatches() const { return warmup_dispatches_; }
  /// How error messages name the selection: "--kernel 'gemm'" or "--kernel (every user kernel)".
  std::string describe() const;

private:
  std::string pattern_;
  std::optional<std::regex> regex_;
  std::uint32_t warmup_dispatches_ = 1;
};

/// One selected kernel name of a run and the durations that count.
struct selected_kernel {
  std::string name;
  /// After the warm-up drop: processes in pid order, each process's dispatches by start time.
  std::vector<std::int64_t> durations_ns;
  std::size_t warmup_dropped = 0; ///< dispatches discarded as warm-up (all processes)
};

/// A kernel name the run dispatched, selected or not (for "kernels seen" in a reason).
struct kernel_seen {
  std::string name;
  std::size_t dispatches = 0;
  bool runtime_helper = false;
  bool selected = false;
};

/// What one traced run gives.
struct run_selection {
  std::vector<selected_kernel> kernels; ///< selected names by name, warm-up-only ones included
  std::vector<kernel_seen> seen;        ///< every name dispatched, by name
  std::size_t dispatch_count = 0;       ///< every dispatch, helpers included
};

/// Accumulates one run's dispatches (memory: two int64 per selected dispatch), in any order.
class dispatch_collector {
public:
  explicit dispatch_collector(const kernel_selector& selector) : selector_(&selector) {}
  void
  add(std::string_view kernel_name, std::int64_t pid, std::int64_t start_ns, std::int64_t end_ns);
  run_selection finish() const;

private:
  struct name_entry {
    bool selected = false;
    std::size_t dispatches = 0;
    /// pid -> (start, end) of each dispatch, in arrival order (sorted in finish()).
    std::map<std::int64_t, std::vector<std::pair<std::int64_t, std::int64_t>>> per_process;
  };
  const kernel_selector* selector_;
  std::map<std::string, name_entry, std::less<>> names_;
  std::size_t dispatch_count_ = 0;
};

/// The median of `values_ns` (any order), the mean of the middle two rounded to the nearest
/// nanosecond for an even count; 0 for none.
std::int64_t median_ns(std::vector<std::int64_t> values_ns);

/// The samples of one run: with one selected name left after the warm-up drop, every remaining
/// duration of it; with several, one sample, the sum of their medians (names whose dispatches
/// were all warm-up are left out). Empty when no selected dispatch remains.
std::vector<std::int64_t> kernel_objective_samples(const run_selection& run);

/// Why a run gave no sample, as a sentence that follows "run N: ", naming the selection, the
/// kernels seen (at most `max_names`, user kernels first) and a fix; e.g. "--kernel 'sgemm': no
/// dispatch matched; kernels seen: gemm_tile, fill, __amd_rocclr_fillBuffer (runtime helper);
/// fix: ...". Call only when kernel_objective_samples(run) is empty.
std::string describe_empty_selection(const kernel_selector& selector,
                                     const run_selection& run,
                                     std::size_t max_names = 10);

} // namespace rpl::stages::rocpd
