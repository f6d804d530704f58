#include "workers/tracers/cupti/tracer_state.hpp"

#include <iterator>

namespace rpl::workers::cupti_tracer {

tracer_state* g_state = nullptr;

namespace {

template <typename Record> void append(std::vector<Record>& to, const std::vector<Record>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

/// Moves `from` to the end of `to` and leaves `from` empty.
template <typename Record> void move_append(std::vector<Record>& to, std::vector<Record>& from) {
  if (to.empty()) {
    to.swap(from);
  } else {
    to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
  }
  from.clear();
}

} // namespace

void merge_buffer(tracer_state& state,
                  parsed_records& records,
                  std::optional<std::size_t> dropped) {
  std::lock_guard<std::timed_mutex> lock(state.mutex);
  ++state.counts.buffers;
  ++state.merges;
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
  append(state.event_records, records.event_records);
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
  std::lock_guard<std::timed_mutex> lock(state.mutex);
  return state.finished;
}

bool take_new_records(tracer_state& state, std::chrono::milliseconds wait, bool finish) {
  std::unique_lock<std::timed_mutex> lock(state.mutex, std::defer_lock);
  if (!lock.try_lock_for(wait)) {
    return false;
  }
  cupti::cupti_trace& trace = state.trace;
  // Moved, not copied: the buffer callbacks start new vectors, and the writers own these.
  move_append(trace.kernels, state.kernels);
  move_append(trace.copies, state.copies);
  move_append(trace.memsets, state.memsets);
  move_append(trace.syncs, state.syncs);
  move_append(trace.event_records, state.event_records);
  move_append(trace.apis, state.apis);
  trace.devices = state.devices;
  trace.context_device = state.context_device;
  trace.counts = state.counts;
  state.merges_written = state.merges;
  if (finish) {
    state.finished = true;
  }
  return true;
}

bool has_new_records(tracer_state& state) {
  std::lock_guard<std::timed_mutex> lock(state.mutex);
  return state.merges != state.merges_written;
}

} // namespace rpl::workers::cupti_tracer
