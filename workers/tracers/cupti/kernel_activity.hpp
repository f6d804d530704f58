#pragma once
/// How a kernel's GPU span is read from a CUPTI activity record: what the tracer writes into
/// rocpd_kernel_dispatch (activity_records.cpp) and what rpl-replay-cuda times its launches with
/// (workers/replay/cuda/cupti_kernel_timer.cpp), so that both sides of `analyze --replay` read the
/// same clock the same way. Header-only and free of state: it reads the record, calls no CUPTI
/// function, so a program that loads CUPTI at run time can use it too.

#include <cstdint>

#include <cupti.h>

namespace rpl::workers::cupti_tracer {

/// The record layout this CUPTI header gives both kernel kinds (KERNEL and CONCURRENT_KERNEL).
using kernel_activity = CUpti_ActivityKernel10;

/// A GPU activity's span is usable when both ends were written: a forced flush can deliver a
/// record of an activity still running, with start or end 0.
inline bool gpu_span_complete(std::uint64_t start_ns, std::uint64_t end_ns) {
  return start_ns != 0 && end_ns >= start_ns;
}

/// The kernel record inside `record`, or null for another kind.
inline const kernel_activity* as_kernel_activity(const CUpti_Activity& record) {
  return record.kind == CUPTI_ACTIVITY_KIND_KERNEL ||
                 record.kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
             ? reinterpret_cast<const kernel_activity*>(&record)
             : nullptr;
}

} // namespace rpl::workers::cupti_tracer
