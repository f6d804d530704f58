#include "workers/replay/replay_timing.hpp"

#include <array>
#include <unordered_map>
#include <utility>

#include <nlohmann/json.hpp>

namespace rpl::workers::replay {

namespace {

struct method_names {
  timing_method method;
  std::string_view json;
  std::string_view flag;
};

constexpr std::array<method_names, 4> names = {{
    {timing_method::cupti_kernel_activity, "cupti_kernel_activity", "cupti"},
    {timing_method::events_per_launch, "events_per_launch", "events"},
    {timing_method::events_per_batch, "events_per_batch", "batch"},
    {timing_method::hsa_dispatch_timestamps, "hsa_dispatch_timestamps", "hsa"},
}};

std::string count_of(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

} // namespace

std::string_view to_string(timing_method method) {
  for (const auto& n : names) {
    if (n.method == method) {
      return n.json;
    }
  }
  return "unknown";
}

std::optional<timing_method> timing_method_named(std::string_view name) {
  for (const auto& n : names) {
    if (n.json == name) {
      return n.method;
    }
  }
  return std::nullopt;
}

std::optional<timing_method> parse_timing_flag(std::string_view flag) {
  for (const auto& n : names) {
    if (n.flag == flag && n.method != timing_method::hsa_dispatch_timestamps) {
      return n.method;
    }
  }
  return std::nullopt;
}

std::string_view timing_flag(timing_method method) {
  for (const auto& n : names) {
    if (n.method == method) {
      return n.flag;
    }
  }
  return "unknown";
}

span_match match_launches(const std::vector<kernel_span>& records,
                          const std::vector<std::uint32_t>& warmup_ids,
                          const std::vector<std::uint32_t>& timed_ids) {
  enum class role { warmup, timed };
  std::unordered_map<std::uint32_t, role> launches;
  for (const auto id : warmup_ids) {
    launches.emplace(id, role::warmup);
  }
  std::unordered_map<std::uint32_t, std::size_t> times_given;
  for (const auto id : timed_ids) {
    launches[id] = role::timed;
    ++times_given[id];
  }
  std::unordered_map<std::uint32_t, const kernel_span*> timed_spans;
  span_match match;
  for (const auto& r : records) {
    const auto it = launches.find(r.correlation_id);
    if (it == launches.end()) {
      ++match.other_records;
    } else if (it->second == role::warmup) {
      ++match.warmup_records;
    } else if (timed_spans.emplace(r.correlation_id, &r).second) {
      ++match.timed_records;
    } else {
      ++match.other_records; // a second record of one launch: not a sample
    }
  }
  for (const auto id : timed_ids) {
    if (id == 0 || times_given[id] > 1) {
      ++match.unidentified;
      continue;
    }
    const auto it = timed_spans.find(id);
    if (it == timed_spans.end()) {
      ++match.missing;
      continue;
    }
    match.samples_ns.push_back(static_cast<std::int64_t>(it->second->end_ns) -
                               static_cast<std::int64_t>(it->second->start_ns));
  }
  return match;
}

std::string describe_missing(const span_match& match,
                             std::size_t timed_launches,
                             std::size_t incomplete_records,
                             std::size_t dropped_records) {
  const std::string what = match.unidentified > 0
                               ? "gave no correlation id to " + std::to_string(match.unidentified)
                               : "delivered no kernel record for " + std::to_string(match.missing);
  return "CUPTI " + what + " of the " + std::to_string(timed_launches) + " timed launches (" +
         std::to_string(match.timed_records) + " timed, " + std::to_string(match.warmup_records) +
         " warm-up and " + std::to_string(match.other_records) + " other records; " +
         std::to_string(incomplete_records) + " incomplete, " + std::to_string(dropped_records) +
         " dropped)";
}

std::string describe_replay_timing(const nlohmann::json& timing) {
  if (!timing.is_object()) {
    return "not timed";
  }
  const auto launches = timing.value("iterations", std::size_t{0});
  const auto restored = timing.value("restored_regions", std::size_t{0});
  const auto method = timing_method_named(timing.value("method", std::string()));
  std::string text;
  if (!method) {
    text = "a CUDA event pair around each of " + count_of(launches, "launch", "launches") +
           " (a replay program older than the timing methods)";
  } else if (*method == timing_method::cupti_kernel_activity) {
    text = "CUPTI kernel activity records of " + count_of(launches, "launch", "launches") +
           " (GPU start/end, as the tracer reads them)";
  } else if (*method == timing_method::events_per_launch) {
    text = "a CUDA event pair around each of " + count_of(launches, "launch", "launches") +
           " (the events add a few microseconds that a trace does not)";
  } else if (*method == timing_method::events_per_batch) {
    const auto batch = timing.value("batch_size", std::size_t{1});
    text = "CUDA events around " + count_of(launches, "batch", "batches") + " of " +
           count_of(batch, "back-to-back launch", "back-to-back launches") +
           ", each sample a batch's time / " + std::to_string(batch) +
           " (the gaps between launches included)";
  } else {
    text = "the AQL packets' profiling timestamps of " +
           count_of(launches, "dispatch", "dispatches") +
           " (GPU start/end, as rocprofv3 reads them)";
  }
  if (restored > 0) {
    text += "; " + count_of(restored, "written region", "written regions") +
            " restored before each launch, outside what is timed";
  } else if (method == timing_method::events_per_batch) {
    text += "; nothing restored (a second launch without restoring wrote the same output)";
  } else {
    text += "; nothing to restore (the kernel writes no captured region)";
  }
  const auto requested = timing_method_named(timing.value("requested", std::string()));
  if (requested && requested != method) {
    text += "; --timing " + std::string(timing_flag(*requested)) + " was asked for but " +
            timing.value("fallback_reason", std::string("could not be used"));
  }
  return text;
}

std::string describe_trace_timing(std::size_t dispatches, const std::vector<std::string>& agents) {
  std::size_t nvidia = 0;
  std::size_t amd = 0;
  for (const auto& a : agents) {
    nvidia += a.rfind("sm_", 0) == 0 ? 1 : 0;
    amd += a.rfind("gfx", 0) == 0 ? 1 : 0;
  }
  const char* source = !agents.empty() && nvidia == agents.size() ? "CUPTI kernel activity records"
                       : !agents.empty() && amd == agents.size()
                           ? "rocprofv3 kernel dispatch records"
                           : "its kernel dispatch records";
  return "GPU start/end of " + count_of(dispatches, "dispatch", "dispatches") +
         " from the trace (" + source + ")";
}

} // namespace rpl::workers::replay
