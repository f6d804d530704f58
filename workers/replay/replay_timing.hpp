#pragma once
/// How a replay times its launches, as values (no CUDA here): the methods and their names in the
/// JSON, matching CUPTI's kernel records to the launches made, and the sentences `rocm-perf
/// replay` and `analyze --replay` print about how each side of a comparison was timed.
///
/// The application's side of `analyze --replay` is the trace: each dispatch's GPU start and end
/// from its kernel record (CUPTI activity on NVIDIA, rocprofv3 on AMD). The replay times alike by
/// default: CUPTI's CONCURRENT_KERNEL records of its own launches (cupti_kernel_activity). An event
/// pair around each launch (events_per_launch) adds a few microseconds the trace does not have;
/// events around a batch of back-to-back launches (events_per_batch) amortise that, and are only
/// valid when the launches need no restoring between them.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace rpl::workers::replay {

/// Numbers are only for this process; the JSON names them (to_string).
enum class timing_method {
  cupti_kernel_activity,  ///< CUPTI kernel records' end - start, as the tracer reads them
  events_per_launch,      ///< a CUDA event pair around each launch
  events_per_batch,       ///< CUDA events around B back-to-back launches, divided by B
  hsa_dispatch_timestamps ///< rpl-replay-hsa: the AQL packet's profiling start/end
};

/// "cupti_kernel_activity", "events_per_launch", "events_per_batch", "hsa_dispatch_timestamps".
std::string_view to_string(timing_method method);
/// A JSON name back (to_string's inverse); nullopt for another text.
std::optional<timing_method> timing_method_named(std::string_view name);

/// The values of rpl-replay-cuda's and `rocm-perf replay`'s `--timing`: "cupti" (the default),
/// "events", "batch"; nullopt for another text.
std::optional<timing_method> parse_timing_flag(std::string_view flag);
/// The flag value of a method ("cupti", "events", "batch"; "hsa" for the HSA replay's).
std::string_view timing_flag(timing_method method);

/// One kernel record's GPU span (only records with both ends written).
struct kernel_span {
  std::uint32_t correlation_id = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
};

/// What the records said about the launches made.
struct span_match {
  std::vector<std::int64_t> samples_ns; ///< end - start of each timed launch, in launch order
  std::size_t timed_records = 0;        ///< records of the timed launches
  std::size_t warmup_records = 0;       ///< records of the warm-up launches (not samples)
  std::size_t other_records = 0;        ///< records of no launch made here
  std::size_t missing = 0;              ///< timed launches without a record
  /// Timed launches whose id was 0 or given twice (the launch callback did not run): no sample.
  std::size_t unidentified = 0;
  bool complete() const { return missing == 0 && unidentified == 0; }
};

/// Matches kernel records to launches by CUPTI correlation id (the launch call's, which its kernel
/// record repeats): each timed launch's sample is its record's end - start, in the order of
/// `timed_ids`; warm-up and other records are counted, not sampled. A timed launch without a
/// record counts as missing, one whose id is 0 or repeated as unidentified; neither is sampled.
span_match match_launches(const std::vector<kernel_span>& records,
                          const std::vector<std::uint32_t>& warmup_ids,
                          const std::vector<std::uint32_t>& timed_ids);

/// Why a match cannot be used, one sentence: "CUPTI delivered no kernel record for 3 of the 50
/// timed launches (47 timed, 5 warm-up and 0 other records; 2 incomplete, 0 dropped)", or "CUPTI
/// gave no correlation id to 50 of the 50 timed launches (...)".
std::string describe_missing(const span_match& match,
                             std::size_t timed_launches,
                             std::size_t incomplete_records,
                             std::size_t dropped_records);

/// How the samples were taken, for the "timing" object of the replay's JSON.
struct timing_details {
  timing_method method = timing_method::cupti_kernel_activity;
  /// What --timing asked for, when another method was used, and why (a CUPTI that could not be
  /// used: the library missing, another CUPTI client attached, records missing).
  std::optional<timing_method> requested;
  std::string fallback_reason;
  std::size_t batch_size = 0; ///< events_per_batch: launches per event pair
  /// cupti_kernel_activity: what CUPTI delivered.
  struct record_counts {
    std::size_t timed = 0, warmup = 0, other = 0, incomplete = 0, dropped = 0;
  };
  std::optional<record_counts> records;
};

/// How the replay's launches were timed, from its JSON "timing" object: "CUPTI kernel activity
/// records of 50 launches (GPU start/end, as the tracer), 4 written regions restored before each
/// outside the timed spans". A document without "method" (an older replay program) timed with an
/// event pair per launch.
std::string describe_replay_timing(const nlohmann::json& timing);

/// How a trace timed a kernel's dispatches, from the trace's agent names ("sm_90" are the CUPTI
/// tracer's, "gfx942" rocprofv3's): "GPU start/end of 8 dispatches from the trace (CUPTI kernel
/// activity records)".
std::string describe_trace_timing(std::size_t dispatches, const std::vector<std::string>& agents);

} // namespace rpl::workers::replay
