// rpl_cupti_tracer: a CUPTI activity tracer loaded into any CUDA program through
// CUDA_INJECTION64_PATH. It records kernels, memory copies, memsets, synchronization and the
// launch/synchronize-type runtime and driver API calls, and writes ONE rocpd database per process
// at exit: ${RPL_TRACE_DIR:-./rocm-perf-trace}/<hostname>/<pid>_results.db (as rocprofv3 does), so
// the rest of rocm-perf reads NVIDIA traces with the same reader as AMD ones.
//
// Rules: never crash or stop the traced program. Every failure prints one line prefixed
// "rocm-perf tracer:" on stderr and tracing goes on with what still works.
//
// This file is the entry point (InitializeInjection, the only exported symbol) and the exit
// handler; see README.md for the other files.

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <string_view>
#include <unistd.h>
#include <utility>
#include <vector>

#include <cupti.h>

#include "workers/tracers/cupti/activity_buffers.hpp"
#include "workers/tracers/cupti/diagnostics.hpp"
#include "workers/tracers/cupti/trace_database.hpp"
#include "workers/tracers/cupti/tracer_state.hpp"

namespace rpl::workers::cupti_tracer {
namespace {

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? std::string(v) : std::string(fallback);
}

/// The names of every callback id of `domain`, canonical (and as CUPTI spells them, if `raw`),
/// and whether `keep` wants each.
void fill_api_names(CUpti_CallbackDomain domain,
                    std::uint32_t count,
                    std::vector<std::string>& canonical,
                    std::vector<std::string>* raw,
                    std::vector<char>& keep,
                    bool (*keep_fn)(std::string_view)) {
  canonical.assign(count, std::string());
  if (raw != nullptr) {
    raw->assign(count, std::string());
  }
  keep.assign(count, 0);
  for (std::uint32_t cbid = 1; cbid < count; ++cbid) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || name == nullptr) {
      continue; // gaps in the id space are normal
    }
    canonical[cbid] = cupti::canonical_api_name(name);
    if (raw != nullptr) {
      (*raw)[cbid] = name;
    }
    keep[cbid] = keep_fn(canonical[cbid]) ? 1 : 0;
  }
}

/// The state with the settings of the environment (RPL_TRACE_*, RPL_CUPTI_BUFFER_MB).
tracer_state* make_state() {
  auto* g = new tracer_state;
  g->pid = getpid();
  g->verbose = env_or("RPL_TRACE_VERBOSE", "0") == "1";
  std::filesystem::path dir = env_or("RPL_TRACE_DIR", "./rocm-perf-trace");
  std::error_code ec;
  if (dir.is_relative()) {
    const auto cwd = std::filesystem::current_path(ec);
    if (!ec)
      dir = cwd / dir; // resolved now: the program may chdir before it exits
  }
  g->out_dir = dir;
  const long mb = std::strtol(env_or("RPL_CUPTI_BUFFER_MB", "8").c_str(), nullptr, 10);
  g->buffer_bytes = static_cast<std::size_t>(mb >= 1 && mb <= 1024 ? mb : 8) << 20;
  fill_api_names(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE, g->api_names.runtime,
                 &g->api_names.runtime_raw, g->runtime_keep, cupti::keep_runtime_api);
  fill_api_names(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE, g->api_names.driver,
                 nullptr, g->driver_keep, cupti::keep_driver_api);
  return g;
}

void enable_activity_kinds(const tracer_state& g) {
  const std::pair<CUpti_ActivityKind, const char*> kinds[] = {
      {CUPTI_ACTIVITY_KIND_DEVICE, "cuptiActivityEnable(DEVICE)"},
      {CUPTI_ACTIVITY_KIND_CONTEXT, "cuptiActivityEnable(CONTEXT)"},
      {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "cuptiActivityEnable(CONCURRENT_KERNEL)"},
      {CUPTI_ACTIVITY_KIND_MEMCPY, "cuptiActivityEnable(MEMCPY)"},
      {CUPTI_ACTIVITY_KIND_MEMCPY2, "cuptiActivityEnable(MEMCPY2)"},
      {CUPTI_ACTIVITY_KIND_MEMSET, "cuptiActivityEnable(MEMSET)"},
      {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "cuptiActivityEnable(SYNCHRONIZATION)"},
      {CUPTI_ACTIVITY_KIND_RUNTIME, "cuptiActivityEnable(RUNTIME)"},
  };
  for (const auto& [kind, what] : kinds) {
    const CUptiResult r = cuptiActivityEnable(kind);
    // DEVICE and CONTEXT are descriptive only: the driver API fills agents at exit anyway.
    if (r != CUPTI_SUCCESS &&
        (kind == CUPTI_ACTIVITY_KIND_DEVICE || kind == CUPTI_ACTIVITY_KIND_CONTEXT)) {
      if (g.verbose)
        cupti_ok(r, what);
      continue;
    }
    cupti_ok(r, what);
  }
}

/// Driver API: only the launch/copy/synchronize calls (cheap), unless RPL_CUPTI_DRIVER_API=0.
void enable_driver_api(const tracer_state& g) {
  if (env_or("RPL_CUPTI_DRIVER_API", "1") == "0") {
    return;
  }
  bool reported = false;
  for (std::uint32_t cbid = 1; cbid < g.driver_keep.size(); ++cbid) {
    if (g.driver_keep[cbid] == 0)
      continue;
    const CUptiResult r = cuptiActivityEnableDriverApi(cbid, 1);
    if (r != CUPTI_SUCCESS && !reported) {
      reported = true;
      cupti_ok(r, ("cuptiActivityEnableDriverApi(" + g.api_names.driver[cbid] + ")").c_str());
    }
  }
}

void report(const tracer_state& g,
            const cupti::cupti_trace& trace,
            const std::filesystem::path& path) {
  if (trace.counts.dropped != 0) {
    warn(std::to_string(trace.counts.dropped) +
         " activity records were dropped (CUPTI had no buffer); " + path.string() +
         " is incomplete");
  }
  if (g.verbose) {
    warn("wrote " + path.string() + ": " + std::to_string(trace.kernels.size()) + " dispatches, " +
         std::to_string(trace.copies.size()) + " copies, " + std::to_string(trace.apis.size()) +
         " API calls, " + std::to_string(trace.syncs.size()) + " synchronizations");
  }
}

/// The exit handler: flushes CUPTI, takes the records and writes the database, once.
void finish() {
  tracer_state* g = g_state;
  if (g == nullptr || getpid() != g->pid) {
    return; // a fork()ed child without exec: the parent writes its own records
  }
  if (finished(*g)) {
    return;
  }
  try {
    std::uint64_t now_ns = 0;
    if (cuptiGetTimestamp(&now_ns) != CUPTI_SUCCESS) {
      now_ns = 0;
    }
    // Forced: also hand over buffers that are not full, and records of contexts CUDA already
    // destroyed (the runtime may have been torn down before this handler).
    cupti_ok(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
    std::size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) != CUPTI_SUCCESS) {
      dropped = 0;
    }
    cupti::cupti_trace trace = take_trace(*g, dropped);
    trace.end_ns = cupti::process_end_ns(trace, now_ns);
    const std::filesystem::path path = write_database(trace, g->out_dir);
    report(*g, trace, path);
  } catch (const std::exception& e) {
    warn(std::string("could not write the trace database: ") + e.what());
  } catch (...) {
    warn("could not write the trace database: unknown error");
  }
}

void at_exit_handler() {
  finish();
}

std::atomic<bool> g_initialized{false};

} // namespace
} // namespace rpl::workers::cupti_tracer

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  using namespace rpl::workers::cupti_tracer;
  if (g_initialized.exchange(true)) {
    return 1;
  }
  try {
    if (env_or("RPL_TRACE_DISABLE", "0") == "1") {
      return 1;
    }
    tracer_state* g = make_state();
    g_state = g;
    // Thread ids as the OS knows them (gettid), so they match /proc and rocpd's tid columns.
    cupti_ok(cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM), "cuptiSetThreadIdType");
    if (!cupti_ok(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed),
                  "cuptiActivityRegisterCallbacks")) {
      return 1; // nothing would be delivered: trace nothing, write nothing
    }
    if (cuptiGetTimestamp(&g->start_ns) != CUPTI_SUCCESS) {
      g->start_ns = 0;
    }
    enable_activity_kinds(*g);
    enable_driver_api(*g);
    if (std::atexit(at_exit_handler) != 0) {
      warn("atexit failed: no trace database will be written");
    }
  } catch (const std::exception& e) {
    warn(std::string("initialization failed: ") + e.what());
  } catch (...) {
    warn("initialization failed: unknown error");
  }
  return 1;
}
