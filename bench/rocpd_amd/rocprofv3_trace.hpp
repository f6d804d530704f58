#pragma once
/// A rocpd database made the way rocprofv3 (ROCm 7.0) makes one: AMD's own schema SQL
/// (bench/rocpd_amd/*.sql, executed as-is with the UUID substituted as rocprofv3's loader does),
/// then the rows rocprofv3's writer inserts, table by table in its order and with its ids, values
/// and defaults (source/lib/output/generateRocpd.cpp; ../shared/reference/rocpd.md §1.3):
///
/// - the HIP API calls first (each an event, its arguments in rocpd_arg, a region whose id is the
///   call's internal correlation id), then the kernel dispatches (each an event whose stack_id is
///   the launching call's correlation id, and a row whose id is the dispatch id), then the memory
///   copies; each table in completion order (the order the profiler's buffers deliver records), so
///   a table's row order is neither its start order nor its id order;
/// - queue and stream ids are the runtime's handles (large integers), kernel ids the profiler's
///   (one symbol per kernel and code object, so each GPU has its own id for the same kernel), agent
///   ids the KFD node ids (the CPU is 0);
/// - no guid given (the column's DEFAULT holds it), no index (rocpd_indexes.sql creates none).
///
/// The application: one host thread per GPU launches kernels round-robin over its GPU's streams
/// (hipLaunchKernel with its six arguments), an asynchronous host-to-device copy every
/// `copy_every` launches, an event recorded on one stream and waited for by the next every
/// `wait_every` launches, and a hipStreamSynchronize every `sync_every` launches. Each stream runs
/// its ops in enqueue order; the streams of a GPU overlap. Deterministic for a given shape.
///
/// With `counter_every` (rocprofv3 --pmc): the counter catalog in rocpd_info_pmc (one row per
/// counter id, deduplicated over the GPU agents: agent_id is the first GPU that has it) and, for
/// every `counter_every`-th dispatch of the table, its counter values in rocpd_pmc_event on the
/// dispatch's own event, one row per value the SDK reports: one per instance for the L2 (TCC)
/// counters (4 rows each here), one for the others; ids from 1, no guid and no extdata given (the
/// columns' defaults), the rows after the dispatch table and before the copies, as
/// generateRocpd.cpp inserts them.
///
/// Shared by bench/analyze_out.cpp (--input amd) and tests/integration/rocpd_amd_schema_test.cpp.

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "stages/sqlite/sqlite_statement.hpp"

namespace rpl::bench::rocpd_amd {

namespace sqlite = stages::sqlite;

/// The files of AMD's schema in rocprofv3's load order (rocpd_indexes.sql runs after the rows).
inline constexpr const char* schema_files[] = {"rocpd_tables.sql", "rocpd_views.sql",
                                               "data_views.sql", "marker_views.sql",
                                               "summary_views.sql"};

/// `sql` with the placeholders replaced as rocprofiler-sdk-rocpd's loader replaces them:
/// `{{uuid}}` by "_" + the UUID with '-' turned into '_', `{{guid}}` by the dashed UUID.
inline std::string substitute_uuid(std::string sql, std::string_view uuid) {
  std::string suffix = "_" + std::string(uuid);
  std::replace(suffix.begin(), suffix.end(), '-', '_');
  const std::pair<std::string_view, std::string> placeholders[] = {{"{{uuid}}", suffix},
                                                                   {"{{guid}}", std::string(uuid)}};
  for (const auto& [key, value] : placeholders) {
    for (std::size_t at = sql.find(key); at != std::string::npos;
         at = sql.find(key, at + value.size()))
      sql.replace(at, key.size(), value);
  }
  return sql;
}

/// The text of one of AMD's schema files in `schema_dir`.
inline std::string read_schema(const std::filesystem::path& schema_dir, const char* file) {
  std::ifstream in(schema_dir / file, std::ios::binary);
  if (!in)
    throw std::runtime_error((schema_dir / file).string() +
                             ": cannot read AMD's schema file; fix: pass bench/rocpd_amd");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The application and the trace's size.
struct trace_shape {
  std::int64_t pid = 4242;
  std::size_t dispatches = 1000; ///< kernel dispatches in the file
  std::size_t kernels = 50;      ///< distinct kernel names, each with one symbol per GPU
  std::size_t gpus = 2;
  std::size_t streams_per_gpu = 2;
  std::size_t copy_every = 500;   ///< launches per host thread between copies; 0: no copies
  std::size_t wait_every = 1000;  ///< between event record / stream wait pairs; 0: none
  std::size_t sync_every = 20000; ///< between hipStreamSynchronize calls; 0: none
  /// Dispatches (in table order) between those with counter values: 1, every dispatch (as
  /// rocprofv3 --pmc collects them); 0, no counters.
  std::size_t counter_every = 0;
  std::uint64_t seed = 1;
};

/// One counter of the catalog: its rocprofiler counter id, and how many rows one dispatch gives it
/// (instances: 0 for a counter in the catalog but not collected).
struct counter_definition {
  std::int64_t id = 0;
  const char* name = "";
  const char* block = "";
  const char* description = "";
  const char* expression = "";
  int instances = 0;
};

/// The catalog: the 9 collected counters (the L2 ones per instance, 4 rows per dispatch each:
/// 4 x 4 + 5 = 21 rows per dispatch), then some that the agents support but the run did not
/// collect, derived ones among them.
inline constexpr counter_definition counter_catalog[] = {
    {72, "GRBM_GUI_ACTIVE", "GRBM", "The GUI is Active", "", 1},
    {112, "SQ_WAVES", "SQ", "Count number of waves sent to SQs. (per-simd, emulated, global)", "",
     1},
    {118, "SQ_BUSY_CYCLES", "SQ", "Clock cycles while SQ is reporting that it is busy.", "", 1},
    {141, "SQ_INSTS_VALU", "SQ", "Number of VALU instructions issued. (per-simd, emulated)", "", 1},
    {147, "SQ_INSTS_VMEM_RD", "SQ", "Number of vector memory read instructions issued", "", 1},
    {301, "TCC_HIT", "TCC", "Number of cache hits.", "", 4},
    {302, "TCC_MISS", "TCC", "Number of cache misses. UC reads count as misses.", "", 4},
    {318, "TCC_EA0_RDREQ", "TCC", "Number of TCC/EA read requests (either 32-byte or 64-byte)", "",
     4},
    {312, "TCC_EA0_WRREQ", "TCC",
     "Number of transactions (either 32-byte or 64-byte) going over the TC_EA_wrreq interface.", "",
     4},
    {71, "GRBM_COUNT", "GRBM", "Tie High - Count Number of Clocks", "", 0},
    {113, "SQ_WAVE_CYCLES", "SQ", "Number of clock cycles spent by waves in the CUs", "", 0},
    {140, "SQ_INSTS_SALU", "SQ", "Number of SALU instructions issued.", "", 0},
    {150, "SQ_INSTS_LDS", "SQ", "Number of LDS instructions issued.", "", 0},
    {205, "TA_BUSY_avr", "", "TA block is busy. Average over TA instances.",
     "reduce(TA_TA_BUSY,avr)", 0},
    {900, "TCC_HIT_sum", "", "Number of cache hits. Sum over TCC instances.", "reduce(TCC_HIT,sum)",
     0},
    {901, "TCC_MISS_sum", "", "Number of cache misses. Sum over TCC instances.",
     "reduce(TCC_MISS,sum)", 0},
    {902, "TCC_EA0_RDREQ_sum", "", "TCC_EA0_RDREQ summed over TCC instances.",
     "reduce(TCC_EA0_RDREQ,sum)", 0},
    {903, "TCC_EA0_WRREQ_sum", "", "TCC_EA0_WRREQ summed over TCC instances.",
     "reduce(TCC_EA0_WRREQ,sum)", 0},
    {910, "FETCH_SIZE", "", "Total kilobytes fetched from the video memory.",
     "(TCC_EA0_RDREQ_32B_sum*32+(TCC_EA0_RDREQ_sum-TCC_EA0_RDREQ_32B_sum)*64)/1024", 0},
};

/// The UUID rocprofv3 would give the file (a UUIDv7 whose time field is small: boot time).
inline std::string uuid_of(const trace_shape& shape) {
  char text[40];
  std::snprintf(
      text, sizeof text,
      "0000%04" PRIx64 "-%04" PRIx64 "-7%03" PRIx64 "-8%03" PRIx64 "-%012" PRIx64,
      static_cast<std::uint64_t>(shape.pid) & 0xffff, (shape.seed * 2654435761u) & 0xffff,
      static_cast<std::uint64_t>(shape.pid) & 0xfff, shape.seed & 0xfff,
      static_cast<std::uint64_t>((shape.seed * 0x9e3779b97f4a7c15ull) & 0xffffffffffffull));
  return text;
}

namespace detail {

/// One API call, kernel dispatch or copy of the simulated application.
struct record {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::int64_t id = 0;   ///< correlation id (API call), dispatch id, or copy index
  std::int64_t corr = 0; ///< dispatch/copy: its launching call's correlation id
  std::int64_t tid = 0;
  std::uint32_t what = 0;   ///< API: index into api_names; dispatch: kernel index
  std::uint32_t stream = 0; ///< index into the process's streams
  std::uint32_t other = 0;  ///< stream wait: the event's stream; copy: its size in KiB
  std::uint32_t gpu = 0;
};

enum api : std::uint32_t { launch, memcpy_async, event_record, stream_wait, stream_sync };
inline constexpr const char* api_names[] = {"hipLaunchKernel", "hipMemcpyAsync", "hipEventRecord",
                                            "hipStreamWaitEvent", "hipStreamSynchronize"};

inline std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%" PRIx64, value);
  return text;
}

} // namespace detail

namespace detail {

/// The simulated application's records, each list in completion order (the order the profiler's
/// buffers deliver them).
struct application {
  std::vector<record> calls, dispatches, copies;
  std::int64_t process_start_ns = 0;
  std::int64_t process_end_ns = 0;
};

inline application
simulate(const trace_shape& shape, std::size_t gpus, std::size_t per_gpu, std::size_t kernels) {
  const std::int64_t pid = shape.pid;
  std::uint64_t state = shape.seed * 0x9e3779b97f4a7c15ull + static_cast<std::uint64_t>(pid);
  auto random = [&state](std::uint64_t range) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (state >> 33) % range;
  };
  std::vector<std::int64_t> kernel_ns(kernels);
  for (std::size_t k = 0; k < kernels; ++k)
    kernel_ns[k] = 3'000 + static_cast<std::int64_t>((k * 7919) % 97) * 1'000;
  struct host_thread {
    std::int64_t tid = 0;
    std::int64_t now_ns = 0;
    std::size_t launches = 0;
    std::size_t next_stream = 0;
  };
  application app;
  app.process_start_ns = 3'600'000'000'000 + static_cast<std::int64_t>(pid) * 1'000;
  std::vector<host_thread> threads(gpus);
  for (std::size_t g = 0; g < gpus; ++g)
    threads[g] = {pid + static_cast<std::int64_t>(g), app.process_start_ns + 50'000'000, 0, 0};
  std::vector<std::int64_t> stream_ready(gpus * per_gpu, 0);
  std::vector<std::int64_t> stream_last_end(gpus * per_gpu, 0);
  std::vector<record>& calls = app.calls;
  std::vector<record>& dispatches = app.dispatches;
  std::vector<record>& copies = app.copies;
  calls.reserve(shape.dispatches * 11 / 10);
  dispatches.reserve(shape.dispatches);
  std::int64_t corr = 0, dispatch_id = 0, copy_id = 0;
  auto call = [&](host_thread& t, std::uint32_t what, std::int64_t duration_ns, std::uint32_t s,
                  std::uint32_t other) -> record& {
    record r;
    r.start_ns = t.now_ns;
    r.end_ns = t.now_ns + duration_ns;
    r.id = ++corr;
    r.tid = t.tid;
    r.what = what;
    r.stream = s;
    r.other = other;
    t.now_ns = r.end_ns + 300 + static_cast<std::int64_t>(random(700));
    calls.push_back(r);
    return calls.back();
  };
  // The GPU side of an enqueued op: after the call and after the stream's previous op.
  auto run_on = [&](std::uint32_t s, std::int64_t enqueued_ns, std::int64_t duration_ns) {
    const std::int64_t start = std::max(stream_ready[s], enqueued_ns + 2'000);
    stream_ready[s] = start + duration_ns + 200;
    stream_last_end[s] = start + duration_ns;
    return start;
  };
  while (static_cast<std::size_t>(dispatch_id) < shape.dispatches) {
    // The host thread that is furthest behind issues its next call.
    host_thread& t = *std::min_element(threads.begin(), threads.end(),
                                       [](auto& a, auto& b) { return a.now_ns < b.now_ns; });
    const auto g = static_cast<std::uint32_t>(&t - threads.data());
    const auto s = static_cast<std::uint32_t>(g * per_gpu + t.next_stream);
    t.next_stream = (t.next_stream + 1) % per_gpu;
    ++t.launches;
    if (shape.copy_every != 0 && t.launches % shape.copy_every == 0) {
      const auto kib = static_cast<std::uint32_t>(64 + random(4096));
      const record& c =
          call(t, detail::memcpy_async, 4'000 + static_cast<std::int64_t>(random(2'000)), s, kib);
      record copy;
      copy.id = ++copy_id;
      copy.corr = c.id;
      copy.tid = t.tid;
      copy.stream = s;
      copy.other = kib;
      copy.gpu = g;
      const std::int64_t ns = static_cast<std::int64_t>(kib) * 1024 / 25; // 25 GB/s
      copy.start_ns = run_on(s, c.end_ns, ns);
      copy.end_ns = copy.start_ns + ns;
      copies.push_back(copy);
    }
    if (shape.wait_every != 0 && per_gpu > 1 && t.launches % shape.wait_every == 0) {
      // The event is recorded on this stream; the GPU's next stream waits for it.
      const auto waiter = static_cast<std::uint32_t>(g * per_gpu + (s - g * per_gpu + 1) % per_gpu);
      call(t, detail::event_record, 1'500, s, static_cast<std::uint32_t>(t.launches));
      call(t, detail::stream_wait, 1'200, waiter, s);
      stream_ready[waiter] = std::max(stream_ready[waiter], stream_last_end[s] + 1'000);
    }
    const auto k = static_cast<std::uint32_t>(random(kernels));
    const record& launch =
        call(t, detail::launch, 2'000 + static_cast<std::int64_t>(random(3'000)), s, 0);
    record d;
    d.id = ++dispatch_id;
    d.corr = launch.id;
    d.tid = t.tid;
    d.what = k;
    d.stream = s;
    d.gpu = g;
    const std::int64_t ns =
        kernel_ns[k] +
        static_cast<std::int64_t>(random(static_cast<std::uint64_t>(kernel_ns[k] / 10 + 1)));
    d.start_ns = run_on(s, launch.end_ns, ns);
    d.end_ns = d.start_ns + ns;
    dispatches.push_back(d);
    if (shape.sync_every != 0 && t.launches % shape.sync_every == 0) {
      // The host blocks until the stream has drained.
      const std::int64_t wait =
          std::max<std::int64_t>(2'000, stream_last_end[s] - t.now_ns + 3'000);
      call(t, detail::stream_sync, wait, s, 0);
    }
  }
  auto by_completion = [](const record& a, const record& b) {
    return std::tie(a.end_ns, a.id) < std::tie(b.end_ns, b.id);
  };
  std::sort(calls.begin(), calls.end(), by_completion);
  std::sort(dispatches.begin(), dispatches.end(), by_completion);
  std::sort(copies.begin(), copies.end(), by_completion);
  for (const auto* list : {&calls, &dispatches, &copies})
    for (const record& r : *list)
      app.process_end_ns = std::max(app.process_end_ns, r.end_ns);
  app.process_end_ns += 10'000'000;
  return app;
}

/// rocpd_string ids of the fixed strings (written first, in this order: '' is the region name of
/// every dispatch without a ROCTx range).
inline constexpr std::int64_t empty_string = 1, dispatch_category = 2, copy_category = 3,
                              api_category = 4, h2d_name = 5;

/// The file being written: the rows' shared ids, and the thread, stream and queue rows made the
/// first time a record names them.
class trace_rows {
public:
  trace_rows(sqlite::connection& connection,
             const std::string& uuid,
             std::int64_t process_id,
             std::int64_t node,
             std::size_t streams)
      : db(connection), pid(process_id), node_id(node), sfx_("_" + uuid),
        streams_seen_(streams, false) {
    std::replace(sfx_.begin(), sfx_.end(), '-', '_');
  }

  sqlite::statement insert(const std::string& table, const std::string& columns) const {
    std::string marks;
    for (std::size_t
             i = 0,
             n = static_cast<std::size_t>(std::count(columns.begin(), columns.end(), ',')) + 1;
         i < n; ++i)
      marks += i == 0 ? "?" : ", ?";
    return sqlite::statement(db, "INSERT INTO " + table + sfx_ + " (" + columns + ") VALUES (" +
                                     marks + ")");
  }

  // Queue and stream ids are the runtime's handles.
  static std::int64_t stream_handle(std::size_t s) {
    return 0x55d0a1c00000ll + static_cast<std::int64_t>(s) * 0x1f000;
  }
  static std::int64_t queue_handle(std::size_t s) {
    return 0x7f3b6c000000ll + static_cast<std::int64_t>(s) * 0x2000000;
  }
  void add_stream_row(std::int64_t id, const std::string& name) const {
    auto s = insert("rocpd_info_stream", "id, nid, pid, name");
    s.bind_int64(1, id).bind_int64(2, node_id).bind_int64(3, pid).bind_text(4, name);
    s.step();
  }
  void add_queue_row(std::int64_t id, const std::string& name) const {
    auto s = insert("rocpd_info_queue", "id, nid, pid, name");
    s.bind_int64(1, id).bind_int64(2, node_id).bind_int64(3, pid).bind_text(4, name);
    s.step();
  }

  void thread_row(std::int64_t tid) {
    if (std::find(threads_seen_.begin(), threads_seen_.end(), tid) != threads_seen_.end())
      return;
    threads_seen_.push_back(tid);
    auto s = insert("rocpd_info_thread", "id, nid, ppid, pid, tid");
    s.bind_int64(1, tid)
        .bind_int64(2, node_id)
        .bind_int64(3, 1)
        .bind_int64(4, pid)
        .bind_int64(5, tid);
    s.step();
  }

  /// The stream's handle; its stream and queue rows first, the first time.
  std::int64_t stream_id(std::uint32_t s) {
    if (!streams_seen_[s]) {
      streams_seen_[s] = true;
      add_stream_row(stream_handle(s), "Stream " + std::to_string(s + 1));
      add_queue_row(queue_handle(s), "Queue " + std::to_string(s + 1));
    }
    return stream_handle(s);
  }

  std::int64_t add_event(std::int64_t category, std::int64_t stack) {
    if (!event_)
      event_.emplace(
          insert("rocpd_event", "id, category_id, stack_id, parent_stack_id, correlation_id"));
    event_->reset();
    event_->bind_int64(1, ++event_id_)
        .bind_int64(2, category)
        .bind_int64(3, stack)
        .bind_int64(4, stack)
        .bind_int64(5, 0);
    event_->step();
    return event_id_;
  }

  /// Called after each record's rows: commits every 50,000 records.
  void batch() {
    if (++in_transaction_ % 50'000 == 0) {
      db.exec("COMMIT");
      db.exec("BEGIN");
    }
  }

  sqlite::connection& db;
  const std::int64_t pid;
  const std::int64_t node_id;

private:
  std::string sfx_;
  std::vector<std::int64_t> threads_seen_;
  std::vector<bool> streams_seen_;
  std::optional<sqlite::statement> event_;
  std::int64_t event_id_ = 0;
  std::size_t in_transaction_ = 0;
};

/// The kernels' names as rocpd_string holds them, and the id of the first API name.
struct kernel_strings {
  std::vector<std::string> kernel_names, mangled;
  std::int64_t api_string = 0;
};

inline kernel_strings write_strings(const trace_rows& rows, std::size_t kernels) {
  std::vector<std::string> strings = {"",
                                      "KERNEL_DISPATCH",
                                      "MEMORY_COPY",
                                      "HIP_RUNTIME_API_EXT",
                                      "MEMORY_COPY_HOST_TO_DEVICE",
                                      "gfx942",
                                      "AMD Instinct MI300X"};
  kernel_strings out;
  out.api_string = static_cast<std::int64_t>(strings.size() + 1);
  for (const char* name : detail::api_names)
    strings.emplace_back(name);
  out.kernel_names.resize(kernels);
  out.mangled.resize(kernels);
  for (std::size_t k = 0; k < kernels; ++k) {
    out.kernel_names[k] = "void app::kernel_" + std::to_string(k) +
                          "<float, 256>(float const*, float*, unsigned int)";
    out.mangled[k] = "_ZN3app8kernel_" + std::to_string(k) + "IfLi256EEEvPKT_PS1_j.kd";
    strings.push_back(out.kernel_names[k]);
    strings.push_back(out.mangled[k]);
  }
  auto s = rows.insert("rocpd_string", "id, string");
  for (std::size_t i = 0; i < strings.size(); ++i) {
    s.reset();
    s.bind_int64(1, static_cast<std::int64_t>(i + 1)).bind_text(2, strings[i]);
    s.step();
  }
  return out;
}

inline void write_node_and_process(const trace_rows& rows, const application& app) {
  {
    auto s = rows.insert("rocpd_info_node", "id, hash, machine_id, system_name, hostname, "
                                            "release, version, hardware_name, domain_name");
    s.bind_int64(1, rows.node_id)
        .bind_int64(2, rows.node_id * 7919)
        .bind_text(3, "0123456789abcdef0123456789abcdef")
        .bind_text(4, "Linux")
        .bind_text(5, "benchhost")
        .bind_text(6, "6.8.0-rocm")
        .bind_text(7, "#1 SMP")
        .bind_text(8, "x86_64")
        .bind_text(9, "(none)");
    s.step();
  }
  auto s =
      rows.insert("rocpd_info_process", "id, nid, ppid, pid, init, fini, start, \"end\", command, "
                                        "environment, extdata");
  s.bind_int64(1, rows.pid)
      .bind_int64(2, rows.node_id)
      .bind_int64(3, 1)
      .bind_int64(4, rows.pid)
      .bind_int64(5, app.process_start_ns)
      .bind_int64(6, app.process_end_ns)
      .bind_int64(7, app.process_start_ns)
      .bind_int64(8, app.process_end_ns)
      .bind_text(9, "./app --size 1024")
      .bind_text(10, R"({"HOME":"/home/bench","PATH":"/opt/rocm/bin:/usr/bin"})")
      .bind_text(11,
                 R"({"kernel_trace":true,"hip_runtime_api_trace":true,"memory_copy_trace":true})");
  s.step();
}

/// The agent's extdata (part of rocprofiler_agent_v0_t as JSON): agent 0 is the CPU.
inline std::string agent_extdata(std::size_t agent) {
  return agent > 0
             ? R"({"size":1312,"type":2,"cpu_cores_count":0,"simd_count":1216,"max_waves_per_simd":8,)"
               R"("lds_size_in_kb":64,"wave_front_size":64,"num_xcc":8,"cu_count":304,)"
               R"("simd_per_cu":4,"max_waves_per_cu":32,"max_engine_clk_fcompute":2100,)"
               R"("gfx_target_version":90402,"local_mem_size":206141652992,"node_id":)" +
                   std::to_string(agent) + "}"
             : R"({"size":1312,"type":1,"cpu_cores_count":96,"simd_count":0,"node_id":0})";
}

/// The CPU (node 0), then the GPUs (nodes 1..).
inline void write_agents(const trace_rows& rows, std::size_t gpus) {
  auto s = rows.insert("rocpd_info_agent", "id, nid, pid, type, absolute_index, logical_index, "
                                           "type_index, uuid, name, model_name, vendor_name, "
                                           "product_name, user_name, extdata");
  for (std::size_t a = 0; a <= gpus; ++a) {
    const bool gpu = a > 0;
    const std::string extdata = agent_extdata(a);
    s.reset();
    s.bind_int64(1, static_cast<std::int64_t>(a))
        .bind_int64(2, rows.node_id)
        .bind_int64(3, rows.pid)
        .bind_text(4, gpu ? "GPU" : "CPU")
        .bind_int64(5, static_cast<std::int64_t>(a))
        .bind_int64(6, static_cast<std::int64_t>(a))
        .bind_int64(7, gpu ? static_cast<std::int64_t>(a - 1) : 0)
        .bind_int64(8, gpu ? 0x74a1 : 0)
        .bind_text(9, gpu ? "gfx942" : "AMD EPYC 9654 96-Core Processor")
        .bind_text(10, gpu ? "aqua_vanjaram" : "")
        .bind_text(11, gpu ? "AMD" : "CPU")
        .bind_text(12, gpu ? "AMD Instinct MI300X" : "AMD EPYC 9654 96-Core Processor")
        .bind_text(13, gpu ? "AMD Instinct MI300X" : "AMD EPYC 9654 96-Core Processor")
        .bind_text(14, extdata);
    s.step();
  }
}

/// One code object per GPU, and each kernel's symbol in it: kernel id g * kernels + k + 1.
inline void
write_code_objects(const trace_rows& rows, std::size_t gpus, const kernel_strings& names) {
  const std::size_t kernels = names.kernel_names.size();
  auto co = rows.insert("rocpd_info_code_object", "id, nid, pid, agent_id, uri, load_base, "
                                                  "load_size, load_delta, storage_type, extdata");
  auto ks = rows.insert("rocpd_info_kernel_symbol",
                        "id, nid, pid, code_object_id, kernel_name, display_name, kernel_object, "
                        "kernarg_segment_size, kernarg_segment_alignment, group_segment_size, "
                        "private_segment_size, sgpr_count, arch_vgpr_count, accum_vgpr_count, "
                        "extdata");
  for (std::size_t g = 0; g < gpus; ++g) {
    const auto co_id = static_cast<std::int64_t>(g + 1);
    co.reset();
    co.bind_int64(1, co_id)
        .bind_int64(2, rows.node_id)
        .bind_int64(3, rows.pid)
        .bind_int64(4, static_cast<std::int64_t>(g + 1))
        .bind_text(5, "file:///work/app#offset=8192&size=1048576")
        .bind_int64(6, 0x7f3c00000000ll + co_id * 0x1000000)
        .bind_int64(7, 1048576)
        .bind_int64(8, 0x7f3c00000000ll + co_id * 0x1000000)
        .bind_text(9, "FILE")
        .bind_text(10, R"({"size":72,"storage_type":1})");
    co.step();
    for (std::size_t k = 0; k < kernels; ++k) {
      const auto id = static_cast<std::int64_t>(g * kernels + k + 1);
      const std::string& kernel_name = names.kernel_names[k];
      ks.reset();
      ks.bind_int64(1, id)
          .bind_int64(2, rows.node_id)
          .bind_int64(3, rows.pid)
          .bind_int64(4, co_id)
          .bind_text(5, names.mangled[k])
          .bind_text(6, kernel_name)
          .bind_int64(7, 0x7f3c00100000ll + id * 0x100)
          .bind_int64(8, 24)
          .bind_int64(9, 8)
          .bind_int64(10, static_cast<std::int64_t>(k % 4) * 4096)
          .bind_int64(11, 0)
          .bind_int64(12, 32)
          .bind_int64(13, 32 + static_cast<std::int64_t>(k % 8) * 16)
          .bind_int64(14, 0)
          .bind_text(15, R"({"size":64,"kernel_id":)" + std::to_string(id) +
                             R"(,"formatted_kernel_name":")" + kernel_name +
                             R"(","demangled_kernel_name":")" + kernel_name +
                             R"(","truncated_kernel_name":"kernel_)" + std::to_string(k) + R"("})");
      ks.step();
    }
  }
}

/// Each API call: its event, its arguments in rocpd_arg, and its region.
inline void
write_api_calls(trace_rows& rows, const std::vector<record>& calls, std::int64_t api_string) {
  auto arg = rows.insert("rocpd_arg", "event_id, position, type, name, value");
  auto region = rows.insert("rocpd_region", "id, nid, pid, tid, start, \"end\", name_id, event_id");
  auto add_arg = [&](std::int64_t e, int position, const char* type, const char* name,
                     const std::string& value) {
    arg.reset();
    arg.bind_int64(1, e)
        .bind_int64(2, position)
        .bind_text(3, type)
        .bind_text(4, name)
        .bind_text(5, value);
    arg.step();
  };
  for (const record& c : calls) {
    rows.thread_row(c.tid);
    const std::int64_t e = rows.add_event(api_category, c.id);
    const std::string stream =
        detail::hex(static_cast<std::uint64_t>(trace_rows::stream_handle(c.stream)));
    switch (c.what) {
    case detail::launch:
      add_arg(e, 0, "void const*", "function_address",
              detail::hex(0x55d0a0000000ull + c.id % 64 * 0x40));
      add_arg(e, 1, "dim3", "numBlocks", "{z=1, y=1, x=4096}");
      add_arg(e, 2, "dim3", "dimBlocks", "{z=1, y=1, x=256}");
      add_arg(e, 3, "void**", "args",
              detail::hex(0x7ffd5e3a1000ull + static_cast<std::uint64_t>(c.id % 8) * 0x40));
      add_arg(e, 4, "unsigned long", "sharedMemBytes", "0");
      add_arg(e, 5, "ihipStream_t*", "stream", stream);
      break;
    case detail::memcpy_async:
      add_arg(e, 0, "void*", "dst", detail::hex(0x7f2a00000000ull));
      add_arg(e, 1, "void const*", "src", detail::hex(0x55d0b0000000ull));
      add_arg(e, 2, "unsigned long", "sizeBytes", std::to_string(std::uint64_t{c.other} * 1024));
      add_arg(e, 3, "hipMemcpyKind", "kind", "1");
      add_arg(e, 4, "ihipStream_t*", "stream", stream);
      break;
    case detail::event_record:
      add_arg(e, 0, "ihipEvent_t*", "event", detail::hex(0x55d0c0000000ull + c.stream * 0x100));
      add_arg(e, 1, "ihipStream_t*", "stream", stream);
      break;
    case detail::stream_wait:
      add_arg(e, 0, "ihipStream_t*", "stream", stream);
      add_arg(e, 1, "ihipEvent_t*", "event", detail::hex(0x55d0c0000000ull + c.other * 0x100));
      add_arg(e, 2, "unsigned int", "flags", "0");
      break;
    case detail::stream_sync: add_arg(e, 0, "ihipStream_t*", "stream", stream); break;
    }
    region.reset();
    region.bind_int64(1, c.id)
        .bind_int64(2, rows.node_id)
        .bind_int64(3, rows.pid)
        .bind_int64(4, c.tid)
        .bind_int64(5, c.start_ns)
        .bind_int64(6, c.end_ns)
        .bind_int64(7, api_string + c.what)
        .bind_int64(8, e);
    region.step();
    rows.batch();
  }
}

/// The dispatches' rows; returns each one's event id, in the same order.
inline std::vector<std::int64_t>
write_dispatches(trace_rows& rows, const std::vector<record>& dispatches, std::size_t kernels) {
  std::vector<std::int64_t> events;
  events.reserve(dispatches.size());
  auto row = rows.insert("rocpd_kernel_dispatch",
                         "id, nid, pid, tid, agent_id, kernel_id, dispatch_id, queue_id, "
                         "stream_id, start, \"end\", private_segment_size, group_segment_size, "
                         "workgroup_size_x, workgroup_size_y, workgroup_size_z, grid_size_x, "
                         "grid_size_y, grid_size_z, region_name_id, event_id");
  for (const record& d : dispatches) {
    const std::int64_t e = rows.add_event(dispatch_category, d.corr);
    events.push_back(e);
    const std::int64_t stream = rows.stream_id(d.stream);
    row.reset();
    row.bind_int64(1, d.id)
        .bind_int64(2, rows.node_id)
        .bind_int64(3, rows.pid)
        .bind_int64(4, d.tid)
        .bind_int64(5, static_cast<std::int64_t>(d.gpu + 1))
        .bind_int64(6, static_cast<std::int64_t>(d.gpu * kernels + d.what + 1))
        .bind_int64(7, d.id)
        .bind_int64(8, trace_rows::queue_handle(d.stream))
        .bind_int64(9, stream)
        .bind_int64(10, d.start_ns)
        .bind_int64(11, d.end_ns)
        .bind_int64(12, 0)
        .bind_int64(13, static_cast<std::int64_t>(d.what % 4) * 4096)
        .bind_int64(14, 256)
        .bind_int64(15, 1)
        .bind_int64(16, 1)
        .bind_int64(17, 4096 * 256)
        .bind_int64(18, 1)
        .bind_int64(19, 1)
        .bind_int64(20, empty_string)
        .bind_int64(21, e);
    row.step();
    rows.batch();
  }
  return events;
}

/// The catalog (insert_pmc_data): one row per counter id, on the first GPU.
inline void write_counter_catalog(const trace_rows& rows) {
  auto s = rows.insert("rocpd_info_pmc", "id, nid, pid, target_arch, agent_id, name, symbol, "
                                         "description, component, value_type, block, expression, "
                                         "is_constant, is_derived, extdata");
  const std::string extdata = agent_extdata(1);
  for (const counter_definition& c : counter_catalog) {
    s.reset();
    s.bind_int64(1, c.id)
        .bind_int64(2, rows.node_id)
        .bind_int64(3, rows.pid)
        .bind_text(4, "GPU")
        .bind_int64(5, 1)
        .bind_text(6, c.name)
        .bind_text(7, c.name)
        .bind_text(8, c.description)
        .bind_text(9, "rocm")
        .bind_text(10, "ABS")
        .bind_text(11, c.block)
        .bind_text(12, c.expression)
        .bind_int64(13, 0)
        .bind_int64(14, *c.expression != '\0' ? 1 : 0)
        .bind_text(15, extdata);
    s.step();
  }
}

/// What counter `c` reads on one instance of dispatch `d` (whole numbers, as the hardware counts).
inline double counter_value(const counter_definition& c, const record& d, int instance) {
  const double waves = 4096.0 * 256 / 64;
  const double ns = static_cast<double>(d.end_ns - d.start_ns);
  const double k = static_cast<double>(d.what);
  const double spread = static_cast<double>((d.id * 7 + instance * 13) % 29);
  switch (c.id) {
  case 72: return std::floor(ns * 2.1);
  case 112: return waves;
  case 118: return std::floor(ns * 2.1 * 0.9);
  case 141: return waves * (40 + k * 3);
  case 147: return waves * (2 + static_cast<double>(d.what % 5));
  case 301: return 1000 + k * 50 + spread;
  case 302: return 200 + k * 10 + spread;
  case 318: return 300 + k * 20 + spread;
  default: return 150 + k * 5 + spread; // 312, TCC_EA0_WRREQ
  }
}

/// The counter rows of every `every`-th dispatch (insert_pmc_event_data): each value the SDK
/// reports, instances one after another, on the dispatch's event.
inline void write_counters(trace_rows& rows,
                           const std::vector<record>& dispatches,
                           const std::vector<std::int64_t>& events,
                           std::size_t every) {
  auto s = rows.insert("rocpd_pmc_event", "id, event_id, pmc_id, value");
  std::int64_t id = 0;
  for (std::size_t i = 0; i < dispatches.size(); i += every) {
    for (const counter_definition& c : counter_catalog) {
      for (int instance = 0; instance < c.instances; ++instance) {
        s.reset();
        s.bind_int64(1, ++id)
            .bind_int64(2, events[i])
            .bind_int64(3, c.id)
            .bind_double(4, counter_value(c, dispatches[i], instance));
        s.step();
      }
    }
    rows.batch();
  }
}

inline void write_copies(trace_rows& rows, const std::vector<record>& copies) {
  auto row = rows.insert("rocpd_memory_copy", "id, nid, pid, tid, start, \"end\", name_id, "
                                              "dst_agent_id, dst_address, src_agent_id, "
                                              "src_address, size, stream_id, event_id");
  for (const record& c : copies) {
    const std::int64_t e = rows.add_event(copy_category, c.corr);
    const std::int64_t stream = rows.stream_id(c.stream);
    row.reset();
    row.bind_int64(1, c.id)
        .bind_int64(2, rows.node_id)
        .bind_int64(3, rows.pid)
        .bind_int64(4, c.tid)
        .bind_int64(5, c.start_ns)
        .bind_int64(6, c.end_ns)
        .bind_int64(7, h2d_name)
        .bind_int64(8, static_cast<std::int64_t>(c.gpu + 1))
        .bind_int64(9, 0x7f2a00000000ll)
        .bind_int64(10, 0)
        .bind_int64(11, 0x55d0b0000000ll)
        .bind_int64(12, static_cast<std::int64_t>(c.other) * 1024)
        .bind_int64(13, stream)
        .bind_int64(14, e);
    row.step();
    rows.batch();
  }
}

} // namespace detail

/// Writes `path` (replacing it) from AMD's schema in `schema_dir`, with the rows of `shape`.
/// Returns the file's UUID. Throws stages::sqlite::sqlite_error or std::runtime_error.
inline std::string write_rocprofv3_trace(const std::filesystem::path& schema_dir,
                                         const std::filesystem::path& path,
                                         const trace_shape& shape) {
  const std::string uuid = uuid_of(shape);
  std::filesystem::remove(path);
  sqlite::connection db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  // rocprofv3 leaves the journal and sync settings at SQLite's defaults; neither changes the file.
  db.exec("PRAGMA synchronous = OFF");
  for (const char* file : schema_files)
    db.exec(substitute_uuid(read_schema(schema_dir, file), uuid));

  // --- The application, simulated: records of API calls, dispatches and copies.
  const std::size_t gpus = std::max<std::size_t>(1, shape.gpus);
  const std::size_t per_gpu = std::max<std::size_t>(1, shape.streams_per_gpu);
  const std::size_t kernels = std::max<std::size_t>(1, shape.kernels);
  const detail::application app = detail::simulate(shape, gpus, per_gpu, kernels);

  // --- The rows, in generateRocpd.cpp's order.
  const std::int64_t node_id = 0x5eed0000 + static_cast<std::int64_t>(shape.seed & 0xffff);
  detail::trace_rows rows(db, uuid, shape.pid, node_id, gpus * per_gpu);
  db.exec("BEGIN");
  const detail::kernel_strings names = detail::write_strings(rows, kernels);
  detail::write_node_and_process(rows, app);
  // Queues and streams: the default ones first (rocprofv3 always inserts them), then each the
  // first time a record names it.
  rows.add_stream_row(0, "Default Stream");
  rows.add_queue_row(0, "Default Queue");
  detail::write_agents(rows, gpus);
  if (shape.counter_every != 0)
    detail::write_counter_catalog(rows);
  detail::write_code_objects(rows, gpus, names);
  db.exec("COMMIT");

  db.exec("BEGIN");
  detail::write_api_calls(rows, app.calls, names.api_string);
  const std::vector<std::int64_t> events = detail::write_dispatches(rows, app.dispatches, kernels);
  if (shape.counter_every != 0)
    detail::write_counters(rows, app.dispatches, events, shape.counter_every);
  detail::write_copies(rows, app.copies);
  db.exec("COMMIT");
  db.exec(substitute_uuid(read_schema(schema_dir, "rocpd_indexes.sql"), uuid));
  return uuid;
}

} // namespace rpl::bench::rocpd_amd
