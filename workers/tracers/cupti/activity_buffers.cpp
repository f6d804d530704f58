#include "workers/tracers/cupti/activity_buffers.hpp"

#include <cstdlib>
#include <exception>
#include <mutex>
#include <optional>
#include <string>

#include "workers/tracers/cupti/activity_records.hpp"
#include "workers/tracers/cupti/diagnostics.hpp"
#include "workers/tracers/cupti/tracer_state.hpp"

namespace rpl::workers::cupti_tracer {

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  *max_records = 0;
  void* memory = nullptr;
  const std::size_t bytes = g_state != nullptr ? g_state->buffer_bytes : (8u << 20);
  // CUPTI wants 8-byte alignment; a page keeps the buffers tidy.
  if (posix_memalign(&memory, 4096, bytes) != 0) {
    memory = nullptr;
  }
  *buffer = static_cast<std::uint8_t*>(memory);
  *size = memory != nullptr ? bytes : 0;
  if (memory == nullptr && g_state != nullptr) {
    std::lock_guard<std::timed_mutex> lock(g_state->mutex);
    if (g_state->counts.allocation_failures++ == 0) {
      warn("could not allocate a " + std::to_string(bytes) +
           "-byte activity buffer; CUPTI drops records until memory is available");
    }
  }
}

namespace {

/// Every record of `buffer`, parsed in order; stops at the first CUPTI error, warning.
void parse_buffer(std::uint8_t* buffer,
                  std::size_t valid_size,
                  const tracer_state& state,
                  parsed_records& out) {
  CUpti_Activity* record = nullptr;
  for (;;) {
    const CUptiResult r = cuptiActivityGetNextRecord(buffer, valid_size, &record);
    if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) {
      return;
    }
    if (r != CUPTI_SUCCESS) {
      cupti_ok(r, "cuptiActivityGetNextRecord");
      return;
    }
    parse_record(*record, state, out);
  }
}

} // namespace

void CUPTIAPI buffer_completed(CUcontext context,
                               std::uint32_t stream_id,
                               std::uint8_t* buffer,
                               std::size_t size,
                               std::size_t valid_size) {
  (void)size;
  try {
    parsed_records records;
    if (g_state != nullptr && buffer != nullptr && valid_size > 0) {
      parse_buffer(buffer, valid_size, *g_state, records);
    }
    std::size_t dropped = 0;
    const CUptiResult dropped_result =
        cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped);
    if (g_state != nullptr) {
      merge_buffer(*g_state, records,
                   dropped_result == CUPTI_SUCCESS ? std::optional<std::size_t>(dropped)
                                                   : std::nullopt);
    }
  } catch (const std::exception& e) {
    warn(std::string("dropped an activity buffer: ") + e.what());
  } catch (...) {
    warn("dropped an activity buffer: unknown error");
  }
  std::free(buffer);
}

} // namespace rpl::workers::cupti_tracer
