#pragma once
/// How the tracer reports trouble: one line on stderr, prefixed "rocm-perf tracer:", and the traced
/// program goes on. Nothing the tracer does may stop or crash it.

#include <string>

#include <cupti.h>

namespace rpl::workers::cupti_tracer {

/// Prints "rocm-perf tracer: <message>" on stderr.
void warn(const std::string& message);

/// True for CUPTI_SUCCESS; otherwise warns "<what> failed: <CUPTI's text> (<code>); continuing
/// without it" and returns false.
bool cupti_ok(CUptiResult result, const char* what);

} // namespace rpl::workers::cupti_tracer
