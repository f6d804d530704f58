#pragma once
/// The two callbacks of cuptiActivityRegisterCallbacks: CUPTI asks for an empty buffer, and hands
/// back a full one, whose records are parsed and merged into the tracer state.

#include <cstddef>
#include <cstdint>

#include <cupti.h>

namespace rpl::workers::cupti_tracer {

/// Gives CUPTI a page-aligned buffer of the configured size (RPL_CUPTI_BUFFER_MB); on allocation
/// failure, none (CUPTI then drops records and counts them), warning once.
void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records);

/// Parses every record of a full buffer, merges them into the state and frees the buffer. Never
/// throws: a failure drops this buffer with a warning.
void CUPTIAPI buffer_completed(CUcontext context,
                               std::uint32_t stream_id,
                               std::uint8_t* buffer,
                               std::size_t size,
                               std::size_t valid_size);

} // namespace rpl::workers::cupti_tracer
