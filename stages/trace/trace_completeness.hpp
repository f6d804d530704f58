#pragma once
/// Whether a rocpd database holds its process's whole trace. Our CUPTI tracer rewrites its
/// database while the process runs (a checkpoint every RPL_CUPTI_FLUSH_MS), once more from a fatal
/// signal's handler, and a last time at normal exit, and says in rocpd_metadata which of these the
/// file is. rocprofv3 writes once, at exit, and says nothing: a file without the tag counts as
/// complete.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rpl::stages::rocpd {

/// How the producer last left a database.
enum class trace_end : std::uint8_t {
  unmarked = 0,   ///< no rpl_trace_state row (rocprofv3, older tracers): taken as complete
  complete = 1,   ///< written at the process's normal exit, after a forced flush
  checkpoint = 2, ///< a periodic checkpoint, and no later write: the process vanished
  signal = 3,     ///< written from the handler of a fatal signal
};

/// The rocpd_metadata tags (values are text, as every rocpd metadata value).
namespace completeness_tag {
inline constexpr std::string_view state = "rpl_trace_state";   ///< complete | checkpoint | signal
inline constexpr std::string_view signal = "rpl_trace_signal"; ///< "SIGABRT", with state signal
inline constexpr std::string_view checkpoint_period_ms = "rpl_checkpoint_period_ms";
} // namespace completeness_tag

struct trace_completeness {
  trace_end end = trace_end::unmarked;
  std::string signal{}; ///< the signal's name ("SIGABRT") when `end` is signal
  /// How often the tracer wrote checkpoints, in ms (0: never); absent when unknown.
  std::optional<std::int64_t> checkpoint_period_ms{};

  /// True when the producer said the file may miss the end of its process's activity.
  bool partial() const { return end == trace_end::checkpoint || end == trace_end::signal; }
};

/// "complete", "checkpoint", "signal"; "unmarked" for a file without the tag.
const char* to_string(trace_end end);

/// The metadata rows that state `completeness`, state first (none for `unmarked`).
std::vector<std::pair<std::string, std::string>>
completeness_metadata(const trace_completeness& completeness);

/// Reads them back from a database's metadata rows (rocpd::database_info::metadata). A state this
/// reader does not know reads as a checkpoint: it is not known to be complete.
trace_completeness read_completeness(const std::map<std::string, std::string>& metadata);

/// Why a partial database may miss activity, as a sentence to follow "<file>: "; empty when the
/// database is complete or unmarked.
std::string describe_partial(const trace_completeness& completeness);

} // namespace rpl::stages::rocpd
