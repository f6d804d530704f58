// rpl_cupti_tracer: a CUPTI activity tracer loaded into any CUDA program through
// CUDA_INJECTION64_PATH. It records kernels, memory copies, memsets, synchronization and the
// launch/synchronize-type runtime and driver API calls into ONE rocpd database per process:
// ${RPL_TRACE_DIR:-./rocm-perf-trace}/<hostname>/<pid>_results.db (as rocprofv3 names it), so the
// rest of rocm-perf reads NVIDIA traces with the same reader as AMD ones. The database is written
// at every checkpoint (RPL_CUPTI_FLUSH_MS), on a fatal signal and at exit, each time whole, so a
// process that dies leaves the trace up to its last write.
//
// Rules: never crash or stop the traced program. Every failure prints one line prefixed
// "rocm-perf tracer:" on stderr and tracing goes on with what still works.
//
// This file is the entry point (InitializeInjection, the only exported symbol), the checkpoint and
// signal writes and the exit handler; see README.md for the other files.

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <mutex>
#include <string>
#include <string_view>
#include <unistd.h>
#include <utility>
#include <vector>

#include <cupti.h>

#include "stages/trace/rocpd_writer.hpp"
#include "stages/trace/trace_completeness.hpp"
#include "workers/tracers/cupti/activity_buffers.hpp"
#include "workers/tracers/cupti/checkpoints.hpp"
#include "workers/tracers/cupti/diagnostics.hpp"
#include "workers/tracers/cupti/host_facts.hpp"
#include "workers/tracers/cupti/trace_database.hpp"
#include "workers/tracers/cupti/tracer_state.hpp"

namespace rpl::workers::cupti_tracer {
namespace {

namespace rocpd = rpl::stages::rocpd;
using namespace std::chrono_literals;

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? std::string(v) : std::string(fallback);
}

/// A whole number of `name` within [low, high]; `fallback` when unset or not such a number.
long env_long(const char* name, long fallback, long low, long high) {
  const std::string text = env_or(name, "");
  if (text.empty()) {
    return fallback;
  }
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (end == nullptr || *end != '\0' || value < low || value > high) {
    warn(std::string(name) + "=" + text + " is not a whole number in [" + std::to_string(low) +
         ", " + std::to_string(high) + "]; using " + std::to_string(fallback));
    return fallback;
  }
  return value;
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
  const long flush_ms = env_long("RPL_CUPTI_FLUSH_MS", 500, 0, 3'600'000);
  g->checkpoint_period = std::chrono::milliseconds(flush_ms > 0 && flush_ms < 10 ? 10 : flush_ms);
  g->signal_wait =
      std::chrono::milliseconds(env_long("RPL_CUPTI_SIGNAL_WAIT_MS", 3000, 0, 600'000));
  g->handle_signals = env_or("RPL_CUPTI_SIGNALS", "1") != "0";
  g->uuid = rocpd::writer::generate_uuid();
  // Read now, on the thread that initializes CUDA: the checkpoint thread must not walk `environ`
  // while the program may be changing it.
  g->trace.host = read_host_facts(static_cast<std::int64_t>(g->pid));
  fill_api_names(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE, g->api_names.runtime,
                 &g->api_names.runtime_raw, g->runtime_keep, cupti::keep_runtime_api);
  fill_api_names(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE, g->api_names.driver,
                 nullptr, g->driver_keep, cupti::keep_driver_api);
  g->trace.names = g->api_names;
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
      {CUPTI_ACTIVITY_KIND_CUDA_EVENT, "cuptiActivityEnable(CUDA_EVENT)"},
      {CUPTI_ACTIVITY_KIND_RUNTIME, "cuptiActivityEnable(RUNTIME)"},
  };
  for (const auto& [kind, what] : kinds) {
    const CUptiResult r = cuptiActivityEnable(kind);
    // DEVICE and CONTEXT are descriptive only: the driver API fills agents at exit anyway.
    // CUDA_EVENT (event records, for the critical path's stream waits) is optional too: without
    // it, waits are matched by timing and the analysis says so.
    if (r != CUPTI_SUCCESS &&
        (kind == CUPTI_ACTIVITY_KIND_DEVICE || kind == CUPTI_ACTIVITY_KIND_CONTEXT ||
         kind == CUPTI_ACTIVITY_KIND_CUDA_EVENT)) {
      if (g.verbose)
        cupti_ok(r, what);
      continue;
    }
    cupti_ok(r, what);
  }
  // When the GPU reached each event record: the wait's source is then the recording stream's
  // last op before that time, not merely before the waiter started.
  const CUptiResult r = cuptiActivityEnableCudaEventDeviceTimestamps(1);
  if (r != CUPTI_SUCCESS && g.verbose)
    cupti_ok(r, "cuptiActivityEnableCudaEventDeviceTimestamps");
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

/// The tracer's clock now, or 0 when CUPTI cannot tell.
std::uint64_t timestamp_ns() {
  std::uint64_t now_ns = 0;
  return cuptiGetTimestamp(&now_ns) == CUPTI_SUCCESS ? now_ns : 0;
}

/// "SIGABRT", or "signal N".
std::string signal_name(int signal) {
  const char* abbrev = sigabbrev_np(signal);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(signal);
}

rocpd::trace_completeness completeness(const tracer_state& g, rocpd::trace_end end) {
  rocpd::trace_completeness c;
  c.end = end;
  c.checkpoint_period_ms = g.checkpoint_period.count();
  return c;
}

/// Writes the database from the records taken so far, as `how` says it is. The caller holds
/// write_mutex. A failure warns (a checkpoint's only once: it would repeat every period).
bool write_now(tracer_state& g, const rocpd::trace_completeness& how, std::uint64_t now_ns) {
  static std::atomic<bool> checkpoint_warned{false};
  try {
    g.trace.end_ns = cupti::process_end_ns(g.trace, now_ns);
    refresh_facts(g.trace, g.driver_devices);
    const std::filesystem::path path = write_database(g.trace, g.out_dir, g.uuid, how);
    if (g.verbose && how.end != rocpd::trace_end::checkpoint) {
      warn("wrote " + path.string() + " (" + rocpd::to_string(how.end) +
           (how.end == rocpd::trace_end::signal ? " " + how.signal : std::string()) +
           "): " + std::to_string(g.trace.kernels.size()) + " dispatches, " +
           std::to_string(g.trace.copies.size()) + " copies, " +
           std::to_string(g.trace.apis.size()) + " API calls, " +
           std::to_string(g.trace.syncs.size()) + " synchronizations");
    }
    return true;
  } catch (const std::exception& e) {
    if (how.end != rocpd::trace_end::checkpoint || !checkpoint_warned.exchange(true)) {
      warn(std::string("could not write the trace database (") + rocpd::to_string(how.end) +
           "): " + e.what());
    }
  } catch (...) {
    if (how.end != rocpd::trace_end::checkpoint || !checkpoint_warned.exchange(true)) {
      warn("could not write the trace database: unknown error");
    }
  }
  return false;
}

/// A periodic checkpoint, on the checkpoint thread: delivers the buffers whose records are all
/// complete (a default flush: a buffer holding a kernel still running waits for the next one) and
/// rewrites the database when something new came.
void checkpoint() {
  static std::atomic<bool> flush_warned{false};
  tracer_state* g = g_state;
  if (g == nullptr) {
    return;
  }
  std::unique_lock<std::timed_mutex> lock(g->write_mutex, std::try_to_lock);
  if (!lock.owns_lock() || finished(*g)) {
    return; // the exit handler or a signal's last write has it
  }
  const CUptiResult flushed = cuptiActivityFlushAll(0);
  if (flushed != CUPTI_SUCCESS && !flush_warned.exchange(true)) {
    cupti_ok(flushed, "cuptiActivityFlushAll (checkpoint)");
  }
  if (!has_new_records(*g) || !take_new_records(*g, 1s, false)) {
    return;
  }
  write_now(*g, completeness(*g, rocpd::trace_end::checkpoint), timestamp_ns());
}

/// The last write before `signal` goes on, on the checkpoint thread while the signalled thread
/// waits. When the signal will end the process, the flush is forced: records of kernels still
/// running come without an end and are counted as incomplete, but the complete records that share
/// their buffers are kept.
void last_write_on_signal(int signal, bool fatal) {
  tracer_state* g = g_state;
  if (g == nullptr) {
    return;
  }
  std::unique_lock<std::timed_mutex> lock(g->write_mutex, std::defer_lock);
  if (!lock.try_lock_for(g->signal_wait / 2) || finished(*g)) {
    return;
  }
  (void)cuptiActivityFlushAll(fatal ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
  (void)take_new_records(*g, g->signal_wait / 4, false); // else: what earlier writes took
  rocpd::trace_completeness how = completeness(*g, rocpd::trace_end::signal);
  how.signal = signal_name(signal);
  write_now(*g, how, timestamp_ns());
}

/// The exit handler: stops the checkpoints, flushes CUPTI (forced), takes the last records and
/// writes the database a final time, marked complete.
void finish() {
  tracer_state* g = g_state;
  if (g == nullptr || getpid() != g->pid) {
    return; // a fork()ed child without exec: the parent writes its own records
  }
  if (!stop_checkpoints(5s)) {
    warn("the checkpoint thread did not stop within 5 s; writing the final database anyway");
  }
  std::unique_lock<std::timed_mutex> lock(g->write_mutex, std::defer_lock);
  if (!lock.try_lock_for(10s)) {
    warn("could not write the final trace database: a checkpoint still holds it after 10 s; the "
         "last checkpoint stays (marked as such)");
    return;
  }
  if (finished(*g)) {
    return;
  }
  try {
    const std::uint64_t now_ns = timestamp_ns();
    // Forced: also hand over buffers that are not full, and records of contexts CUDA already
    // destroyed (the runtime may have been torn down before this handler).
    cupti_ok(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
    std::size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) != CUPTI_SUCCESS) {
      dropped = 0;
    }
    if (!take_new_records(*g, 10s, true)) {
      warn("could not take the last activity records (a buffer callback holds the lock); the "
           "database keeps what earlier checkpoints took, marked as a checkpoint");
      return;
    }
    g->trace.counts.dropped += dropped;
    if (write_now(*g, completeness(*g, rocpd::trace_end::complete), now_ns) &&
        g->trace.counts.dropped != 0) {
      warn(std::to_string(g->trace.counts.dropped) +
           " activity records were dropped (CUPTI had no buffer); the trace database of process " +
           std::to_string(g->pid) + " is incomplete");
    }
  } catch (const std::exception& e) {
    warn(std::string("could not write the trace database: ") + e.what());
  } catch (...) {
    warn("could not write the trace database: unknown error");
  }
}

void at_exit_handler() {
  finish();
}

/// Starts the checkpoint thread and the fatal-signal handlers (RPL_CUPTI_FLUSH_MS,
/// RPL_CUPTI_SIGNALS, RPL_CUPTI_SIGNAL_WAIT_MS).
void start_keeping(const tracer_state& g) {
  checkpoint_settings settings;
  settings.period = g.checkpoint_period;
  settings.signal_wait = g.signal_wait;
  if (!g.handle_signals) {
    settings.signals.clear();
  }
  if (settings.period.count() == 0 && settings.signals.empty()) {
    return;
  }
  std::string error;
  if (!start_checkpoints(settings, {checkpoint, last_write_on_signal}, error)) {
    warn(error + "; the trace database is written at exit only");
  }
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
    g->trace.start_ns = g->start_ns;
    enable_activity_kinds(*g);
    enable_driver_api(*g);
    if (std::atexit(at_exit_handler) != 0) {
      warn("atexit failed: the trace database is written only at checkpoints and on signals");
    }
    start_keeping(*g);
  } catch (const std::exception& e) {
    warn(std::string("initialization failed: ") + e.what());
  } catch (...) {
    warn("initialization failed: unknown error");
  }
  return 1;
}
