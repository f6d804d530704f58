#include "workers/tracers/cupti/diagnostics.hpp"

#include <cstdio>

namespace rpl::workers::cupti_tracer {

void warn(const std::string& message) {
  std::fprintf(stderr, "rocm-perf tracer: %s\n", message.c_str());
}

bool cupti_ok(CUptiResult result, const char* what) {
  if (result == CUPTI_SUCCESS) {
    return true;
  }
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr) {
    text = "unknown CUPTI error";
  }
  warn(std::string(what) + " failed: " + text + " (" + std::to_string(static_cast<int>(result)) +
       "); continuing without it");
  return false;
}

} // namespace rpl::workers::cupti_tracer
