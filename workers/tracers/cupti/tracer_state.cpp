#include "workers/tracers/cupti/tracer_state.hpp"

namespace rpl::workers::cupti_tracer {

tracer_state* g_state = nullptr;

namespace {

template <typename Record> void append(std::vector<Record>& to, const std::vector<Record>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

} // namespace

void merge_buffer(tracer_state& state,
                  parsed_records& records,
                  std::optional<std::size_t> dropped) {
  std::lock_guard<std::mutex> lock(state.mutex);
  ++state.counts.buffers;
  if (dropped) {
    state.counts.dropped += *dropped;
  }
  if (state.finished) {
    return;
  }
  for (auto& [index, name] : records.kernel_names) {
    records.kernels[index].name = *state.names.insert(std::move(name)).first;
  }
  append(state.kernels, records.kernels);
  append(state.copies, records.copies);
  append(state.memsets, records.memsets);
  append(state.syncs, records.syncs);
  append(state.apis, records.apis);
  for (cupti::device_record& device : records.devices) {
    state.devices[device.id] = std::move(device);
  }
  for (const auto& [context, device] : records.contexts) {
    state.context_device.emplace(context, device);
  }
  state.counts.runtime_api += records.runtime_api;
  state.counts.driver_api += records.driver_api;
  state.counts.incomplete += records.incomplete;
  state.counts.other += records.other;
}

bool finished(tracer_state& state) {
  std::lock_guard<std::mutex> lock(state.mutex);
  return state.finished;
}

cupti::cupti_trace take_trace(tracer_state& state, std::uint64_t dropped_at_exit) {
  cupti::cupti_trace trace;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    state.finished = true;
    trace.kernels = std::move(state.kernels);
    trace.copies = std::move(state.copies);
    trace.memsets = std::move(state.memsets);
    trace.syncs = std::move(state.syncs);
    trace.apis = std::move(state.apis);
    trace.devices = state.devices;
    trace.context_device = state.context_device;
    trace.counts = state.counts;
  }
  trace.counts.dropped += dropped_at_exit;
  trace.start_ns = state.start_ns;
  trace.host.pid = static_cast<std::int64_t>(state.pid);
  trace.names = state.api_names;
  return trace;
}

} // namespace rpl::workers::cupti_tracer
