#pragma once
/// rocpd trace fixtures built with the writer, shared by the reader, accounting and analysis tests:
/// two processes in two files, two GPU agents and a CPU agent, several queues and streams, user
/// kernels and ROCclr helper kernels, plus the SQLite helpers the tests query them with.

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "stages/sqlite/sqlite_statement.hpp"
#include "stages/trace/rocpd_writer.hpp"

namespace rpl::testing {

namespace rocpd = stages::rocpd;

/// A plain read-write SQLite connection for checking what the writer produced. Failures throw
/// stages::sqlite::sqlite_error (a std::runtime_error) naming the file and the SQL.
class sqlite_db {
public:
  explicit sqlite_db(const std::filesystem::path& path)
      : db_(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) {
    // Fixtures are rebuilt per test; an fsync per statement only makes the suite slow.
    exec("PRAGMA synchronous = OFF");
  }
  sqlite3* get() const { return db_.handle(); }

  void exec(const std::string& sql) { db_.exec(sql); }

  /// Every row of `sql`, each column as text ("NULL" for NULL).
  std::vector<std::vector<std::string>> rows(const std::string& sql) const {
    stages::sqlite::statement query(db_, sql);
    std::vector<std::vector<std::string>> out;
    while (query.step()) {
      std::vector<std::string> row;
      for (int i = 0; i < query.column_count(); ++i) {
        row.emplace_back(query.column_nullable_text(i).value_or("NULL"));
      }
      out.push_back(std::move(row));
    }
    return out;
  }

  std::string scalar(const std::string& sql) const {
    const auto result = rows(sql);
    return result.empty() || result.front().empty() ? std::string("NULL") : result.front().front();
  }
  std::int64_t integer(const std::string& sql) const { return std::stoll(scalar(sql)); }
  double real(const std::string& sql) const { return std::stod(scalar(sql)); }

private:
  stages::sqlite::connection db_;
};

/// A deterministic pseudo-random sequence (the fixtures must not change between runs).
class lcg {
public:
  explicit lcg(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
    return state_ >> 33;
  }

private:
  std::uint64_t state_;
};

/// The common node, process, thread and agents of one fixture process; returns nothing, the writer
/// remembers them as the defaults for later rows.
inline void add_process_header(rocpd::writer& w, std::int64_t pid, std::int64_t tid) {
  rocpd::node_info node;
  node.machine_id = "0123456789abcdef0123456789abcdef";
  node.hostname = "testhost";
  w.add_node(node);
  rocpd::process_info process;
  process.pid = pid;
  process.ppid = 1;
  process.command = "./app --size 1024";
  w.add_process(process);
  rocpd::thread_info thread;
  thread.tid = tid;
  thread.name = "main";
  w.add_thread(thread);
  rocpd::agent_info cpu;
  cpu.type = "CPU";
  cpu.absolute_index = 0;
  cpu.name = "AMD EPYC 7763";
  cpu.product_name = "AMD EPYC 7763 64-Core Processor";
  w.add_agent(cpu);
  for (std::int64_t index = 1; index <= 2; ++index) {
    rocpd::agent_info gpu;
    gpu.absolute_index = index;
    gpu.logical_index = index;
    gpu.type_index = index - 1;
    gpu.name = "gfx90a";
    gpu.model_name = "aldebaran";
    gpu.product_name = "AMD Instinct MI250X";
    gpu.extdata = {{"cu_count", 110}, {"wave_front_size", 64}, {"max_engine_clk_fcompute", 1700}};
    w.add_agent(gpu);
  }
}

/// A kernel symbol in the code object `code_object`; returns its id.
inline std::int64_t
add_symbol(rocpd::writer& w, std::int64_t id, std::int64_t code_object, const std::string& name) {
  rocpd::kernel_symbol_info symbol;
  symbol.id = id;
  symbol.code_object_id = code_object;
  symbol.kernel_name = "_Z" + std::to_string(name.size()) + name + "Pfi";
  symbol.display_name = name;
  symbol.sgpr_count = 32;
  symbol.arch_vgpr_count = 64;
  symbol.accum_vgpr_count = 4;
  symbol.group_segment_size = 4096;
  symbol.kernarg_segment_size = 24;
  return w.add_kernel_symbol(symbol);
}

/// Writes the trace of one process to `path`: `dispatches` dispatches cycling over `kernels`
/// (kernel i lasts about (i + 1) µs with noise), over GPU agents 1 and 2, queues 0/0x10/0x20 and
/// streams 0/0x100/0x200, each launched by a hipLaunchKernel region; a few memory copies and PMC
/// values.
inline void write_process_trace(const std::filesystem::path& path,
                                std::int64_t pid,
                                const std::vector<std::string>& kernels,
                                std::size_t dispatches,
                                std::uint64_t seed,
                                std::int64_t start_ns = 1'000'000'000,
                                const std::string& uuid = {}) {
  std::filesystem::create_directories(path.parent_path());
  rocpd::writer w(path, uuid);
  const std::int64_t tid = pid + 1;
  add_process_header(w, pid, tid);
  w.add_queue(pid, "Queue 1", 0x10);
  w.add_queue(pid, "Queue 2", 0x20);
  w.add_stream(pid, "Stream 1", 0x100);
  w.add_stream(pid, "Stream 2", 0x200);
  rocpd::code_object_info code_object;
  code_object.id = 1;
  code_object.agent_id = 1;
  code_object.uri = "file:///app#offset=0&size=4096";
  w.add_code_object(code_object);
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    add_symbol(w, static_cast<std::int64_t>(k + 1), 1, kernels[k]);
  }
  rocpd::pmc_info counter;
  counter.id = 7;
  counter.agent_id = 1;
  counter.name = "SQ_WAVES";
  counter.block = "SQ";
  counter.description = "waves sent to SQs";
  w.add_pmc_info(counter);

  lcg random(seed);
  const std::int64_t queues[] = {0, 0x10, 0x20};
  const std::int64_t streams[] = {0, 0x100, 0x200};
  std::int64_t now = start_ns;
  for (std::size_t i = 0; i < dispatches; ++i) {
    const std::size_t k = i % kernels.size();
    const std::int64_t correlation = static_cast<std::int64_t>(i + 1);
    rocpd::region_info launch;
    launch.name = "hipLaunchKernel";
    launch.correlation_id = correlation;
    launch.start_ns = now;
    launch.end_ns = now + 500;
    w.add_region(launch);

    rocpd::dispatch_info d;
    d.agent_id = 1 + static_cast<std::int64_t>(i % 2);
    d.kernel_id = static_cast<std::int64_t>(k + 1);
    d.queue_id = queues[i % 3];
    d.stream_id = streams[(i / 3) % 3];
    d.correlation_id = correlation;
    d.start_ns = now + 1000;
    d.end_ns = d.start_ns + static_cast<std::int64_t>((k + 1) * 1000 + random.next() % 400);
    d.workgroup = {256, 1, 1};
    d.grid = {static_cast<std::int64_t>(256 * (k + 1) * 64), 1, 1};
    d.group_segment_size = 4096;
    w.add_dispatch(d);
    if (i < 4) {
      // Two dimension instances per dispatch, summed by counters_collection.
      w.add_pmc_event(w.last_event_id(), 7, 100.0);
      w.add_pmc_event(w.last_event_id(), 7, 28.0);
    }
    now = d.end_ns + static_cast<std::int64_t>(random.next() % 2000);
  }
  for (std::int64_t c = 0; c < 3; ++c) {
    rocpd::memory_copy_info copy;
    copy.start_ns = now + c * 10'000;
    copy.end_ns = copy.start_ns + 4'000 + c;
    copy.name = c == 2 ? "MEMORY_COPY_DEVICE_TO_HOST" : "MEMORY_COPY_HOST_TO_DEVICE";
    copy.src_agent_id = c == 2 ? 1 : 0;
    copy.dst_agent_id = c == 2 ? 0 : 1;
    copy.size_bytes = 1 << 20;
    w.add_memory_copy(copy);
  }
  w.commit();
}

/// The standard two-process trace: <dir>/testhost/100_results.db and 200_results.db.
struct two_process_trace {
  std::filesystem::path dir;
  std::filesystem::path first;
  std::filesystem::path second;
  std::size_t first_dispatches = 300;
  std::size_t second_dispatches = 200;
};

inline two_process_trace write_two_process_trace(const std::filesystem::path& dir) {
  two_process_trace trace;
  trace.dir = dir;
  trace.first = dir / "testhost" / "100_results.db";
  trace.second = dir / "testhost" / "200_results.db";
  write_process_trace(
      trace.first, 100,
      {"gemm", "softmax", "layernorm", "__amd_rocclr_fillBufferAligned", "__amd_rocclr_copyBuffer"},
      trace.first_dispatches, 11);
  write_process_trace(trace.second, 200,
                      {"gemm", "softmax", "reduce", "__amd_rocclr_fillBufferAligned"},
                      trace.second_dispatches, 23, 1'000'500'000);
  return trace;
}

} // namespace rpl::testing
