#pragma once
/// CUPTI activity records -> the plain records of stages/trace/cupti_mapping.hpp. Values are copied
/// out because CUPTI reuses its buffers; nothing else is decided here.

#include <cupti.h>

#include "workers/tracers/cupti/tracer_state.hpp"

namespace rpl::workers::cupti_tracer {

/// Appends `record` to `out` by kind: kernels, copies (MEMCPY, MEMCPY2), memsets,
/// synchronizations, kept runtime/driver API calls (`state`'s keep tables), devices and contexts.
/// A GPU record without a valid start/end counts as incomplete; other kinds count as other.
void parse_record(const CUpti_Activity& record, const tracer_state& state, parsed_records& out);

} // namespace rpl::workers::cupti_tracer
