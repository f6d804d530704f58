#include "stages/trace/trace_completeness.hpp"

#include <cstdlib>

namespace rpl::stages::rocpd {

const char* to_string(trace_end end) {
  switch (end) {
  case trace_end::complete: return "complete";
  case trace_end::checkpoint: return "checkpoint";
  case trace_end::signal: return "signal";
  case trace_end::unmarked: break;
  }
  return "unmarked";
}

std::vector<std::pair<std::string, std::string>>
completeness_metadata(const trace_completeness& completeness) {
  std::vector<std::pair<std::string, std::string>> rows;
  if (completeness.end == trace_end::unmarked) {
    return rows;
  }
  rows.emplace_back(completeness_tag::state, to_string(completeness.end));
  if (completeness.end == trace_end::signal) {
    rows.emplace_back(completeness_tag::signal, completeness.signal);
  }
  if (completeness.checkpoint_period_ms) {
    rows.emplace_back(completeness_tag::checkpoint_period_ms,
                      std::to_string(*completeness.checkpoint_period_ms));
  }
  return rows;
}

trace_completeness read_completeness(const std::map<std::string, std::string>& metadata) {
  trace_completeness out;
  const auto state = metadata.find(std::string(completeness_tag::state));
  if (state == metadata.end()) {
    return out;
  }
  if (state->second == "complete") {
    out.end = trace_end::complete;
  } else if (state->second == "signal") {
    out.end = trace_end::signal;
  } else {
    out.end = trace_end::checkpoint; // "checkpoint", or a state this reader does not know
  }
  if (const auto signal = metadata.find(std::string(completeness_tag::signal));
      signal != metadata.end()) {
    out.signal = signal->second;
  }
  if (const auto period = metadata.find(std::string(completeness_tag::checkpoint_period_ms));
      period != metadata.end() && !period->second.empty()) {
    char* end = nullptr;
    const long long value = std::strtoll(period->second.c_str(), &end, 10);
    if (end != nullptr && *end == '\0' && value >= 0) {
      out.checkpoint_period_ms = value;
    }
  }
  return out;
}

std::string describe_partial(const trace_completeness& completeness) {
  if (completeness.end == trace_end::signal) {
    return "written when the process received " +
           (completeness.signal.empty() ? std::string("a fatal signal") : completeness.signal) +
           ", before it ended: kernels still running then are missing";
  }
  if (completeness.end != trace_end::checkpoint) {
    return {};
  }
  std::string window = "since its last checkpoint";
  if (completeness.checkpoint_period_ms && *completeness.checkpoint_period_ms > 0) {
    window = "within the last " + std::to_string(*completeness.checkpoint_period_ms) +
             " ms (the checkpoint period) before it ended";
  }
  return "the tracer's last checkpoint: the process ended without a final write (killed by "
         "SIGKILL, _exit(), or a crash the tracer could not catch), so kernels that ran " +
         window + " may be missing";
}

} // namespace rpl::stages::rocpd
