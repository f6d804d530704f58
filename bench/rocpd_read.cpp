// bench/rocpd_read: reading and accounting a large rocpd trace. Writes a database of N dispatches
// (default 1,000,000) over ~50 kernels with the rocpd writer (timed, in a child process so its
// memory does not count), then reads and aggregates it with reader + runtime accounting, reporting
// wall time and peak RSS of that phase. Baseline: one plain `SELECT COUNT(*), SUM(end - start) FROM
// rocpd_kernel_dispatch`. Targets (issue): read + aggregate under 3 s and under 300 MB.

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include "stages/sqlite/sqlite_statement.hpp"
#include "stages/trace/rocpd_reader.hpp"
#include "stages/trace/rocpd_writer.hpp"
#include "stages/trace/runtime_accounting.hpp"

namespace {

namespace rocpd = rpl::stages::rocpd;
using clock_type = std::chrono::steady_clock;
double seconds(clock_type::duration d) {
  return std::chrono::duration<double>(d).count();
}

/// User + system CPU seconds of this process: the read phase's cost even on a busy machine.
double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0; // Linux reports KiB
}

void write_trace(const std::filesystem::path& path, std::size_t dispatches, std::size_t kernels) {
  rocpd::writer w(path);
  rocpd::node_info node;
  node.hostname = "benchhost";
  w.add_node(node);
  rocpd::process_info process;
  process.pid = 4242;
  process.command = "./bench_app";
  w.add_process(process);
  rocpd::thread_info thread;
  thread.tid = 4242;
  w.add_thread(thread);
  for (std::int64_t a = 1; a <= 2; ++a) {
    rocpd::agent_info agent;
    agent.absolute_index = a;
    agent.logical_index = a;
    agent.name = "gfx942";
    agent.product_name = "AMD Instinct MI300X";
    w.add_agent(agent);
  }
  for (std::int64_t q = 1; q <= 4; ++q) {
    w.add_queue(4242, "Queue " + std::to_string(q), q);
    w.add_stream(4242, "Stream " + std::to_string(q), q);
  }
  rocpd::code_object_info code_object;
  code_object.id = 1;
  code_object.agent_id = 1;
  w.add_code_object(code_object);
  for (std::size_t k = 0; k < kernels; ++k) {
    rocpd::kernel_symbol_info symbol;
    symbol.id = static_cast<std::int64_t>(k + 1);
    symbol.code_object_id = 1;
    symbol.display_name =
        "void bench::kernel_" + std::to_string(k) + "<float, 256>(float const*, float*, int)";
    symbol.kernel_name = "_ZN5bench8kernel_" + std::to_string(k) + "ILi256EEEvPKfPfi";
    w.add_kernel_symbol(symbol);
  }
  std::uint64_t state = 12345;
  std::int64_t now = 1'000'000'000;
  rocpd::dispatch_info d;
  d.workgroup = {256, 1, 1};
  d.grid = {1 << 20, 1, 1};
  for (std::size_t i = 0; i < dispatches; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const std::size_t k = (state >> 40) % kernels;
    d.dispatch_id = static_cast<std::int64_t>(i + 1);
    d.correlation_id = d.dispatch_id;
    d.kernel_id = static_cast<std::int64_t>(k + 1);
    d.agent_id = 1 + static_cast<std::int64_t>(i % 2);
    d.queue_id = 1 + static_cast<std::int64_t>(i % 4);
    d.stream_id = d.queue_id;
    d.start_ns = now;
    d.end_ns = now + 2'000 + static_cast<std::int64_t>(k * 500 + (state >> 20) % 1'000);
    w.add_dispatch(d);
    now = d.end_ns + 100;
  }
  w.commit();
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench/rocpd_read: read + aggregate a large rocpd trace"};
  std::size_t dispatches = 1'000'000;
  std::size_t kernels = 50;
  std::string dir_option;
  bool keep = false;
  app.add_option("--dispatches", dispatches, "Dispatches to write");
  app.add_option("--kernels", kernels, "Distinct kernels");
  app.add_option("--dir", dir_option, "Folder for the database (default: a new temporary folder)");
  app.add_flag("--keep", keep, "Keep the database");
  CLI11_PARSE(app, argc, argv);

  std::filesystem::path dir = dir_option;
  if (dir.empty()) {
    char pattern[] = "/tmp/rpl-rocpd-read-XXXXXX";
    dir = mkdtemp(pattern);
  }
  const std::filesystem::path db_path = dir / "benchhost" / "4242_results.db";
  std::filesystem::create_directories(db_path.parent_path());

  // The writer runs in a child so its memory does not inflate this process's peak RSS.
  const auto write_start = clock_type::now();
  const pid_t child = fork();
  if (child == 0) {
    try {
      write_trace(db_path, dispatches, kernels);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "write failed: %s\n", e.what());
      _exit(1);
    }
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  const double write_s = seconds(clock_type::now() - write_start);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return 1;
  }
  const double file_mb =
      static_cast<double>(std::filesystem::file_size(db_path)) / (1024.0 * 1024.0);

  // Baseline: the cheapest query over the same rows.
  std::int64_t base_count = 0;
  std::int64_t base_sum = 0;
  const auto base_start = clock_type::now();
  try {
    const rpl::stages::sqlite::connection db(db_path, SQLITE_OPEN_READONLY);
    rpl::stages::sqlite::statement query(
        db, "SELECT COUNT(*), SUM(\"end\" - start) FROM rocpd_kernel_dispatch");
    if (query.step()) {
      base_count = query.column_int64(0);
      base_sum = query.column_int64(1);
    }
  } catch (const rpl::stages::sqlite::sqlite_error& e) {
    std::fprintf(stderr, "baseline query failed: %s\n", e.what());
    return 1;
  }
  const double base_s = seconds(clock_type::now() - base_start);
  const double rss_before_mb = peak_rss_mb();

  const double cpu_start = cpu_seconds();
  const auto read_start = clock_type::now();
  const rocpd::reader source = rocpd::reader::open({dir});
  const rocpd::runtime_summary summary = rocpd::summarize(source);
  const double read_s = seconds(clock_type::now() - read_start);
  const double read_cpu_s = cpu_seconds() - cpu_start;
  const double rss_mb = peak_rss_mb();

  const double total_ns = summary.total_gpu_ns + summary.helper_gpu_ns;
  const bool consistent = static_cast<std::int64_t>(summary.dispatch_count) == base_count &&
                          static_cast<std::int64_t>(total_ns) == base_sum;
  const bool time_met = read_s < 3.0;
  const bool rss_met = rss_mb < 300.0;
  std::printf("rocpd_read: %zu dispatches, %zu kernels, file %.1f MB\n", dispatches, kernels,
              file_mb);
  std::printf("  write (rocpd writer, one transaction)    %8.3f s  (%.0f dispatches/s)\n", write_s,
              static_cast<double>(dispatches) / write_s);
  std::printf("  baseline SELECT COUNT(*), SUM(end-start) %8.3f s\n", base_s);
  std::printf(
      "  read + aggregate (reader + accounting)   %8.3f s  = %.2fx baseline  target < 3 s: %s\n",
      read_s, read_s / base_s, time_met ? "met" : "NOT met");
  std::printf("    (CPU time of read + aggregate           %8.3f s; wall above includes waiting on "
              "a busy machine)\n",
              read_cpu_s);
  std::printf("  peak RSS (ru_maxrss)                     %8.1f MB (%.1f MB before reading)  "
              "target < 300 MB: %s\n",
              rss_mb, rss_before_mb, rss_met ? "met" : "NOT met");
  std::printf("  kernels %zu, dominant %s, GPU total %.3f ms over a %.3f ms span; figures %s the "
              "baseline\n",
              summary.kernels.size(), summary.dominant_kernel.c_str(), total_ns / 1e6,
              summary.wall_span_ns / 1e6, consistent ? "match" : "DO NOT match");
  if (!keep && dir_option.empty()) {
    std::filesystem::remove_all(dir);
  } else {
    std::printf("  kept %s\n", db_path.c_str());
  }
  return consistent ? 0 : 1;
}
