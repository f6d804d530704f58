// A stand-in for rocprofv3, for tests on machines without ROCm or an AMD GPU (all of ours).
// It accepts the command line `rocm-perf profile` uses:
//   rocprofv3 --kernel-trace --output-format rocpd -d DIR -- APP [ARGS...]
//   rocprofv3 --pmc C1 C2 ... --output-format rocpd -d DIR -- APP [ARGS...]   (a counter pass)
// With --pmc each dispatch also gets one rocpd_pmc_event row per counter (two instance rows for
// SQ_* counters, as per-XCD counters come): 10 for names with BUBBLE, 100 for names with 32B or
// 64B, 1000 otherwise, split evenly over the instances.
// runs APP for real, then writes what rocprofv3 would: DIR/<host>/<pid>_results.db in the rocpd
// schema, through our own writer, with three kernels on one gfx90a agent. The kernel timings are
// synthetic (this is not a profiler); the tests check our reading and analysis of them.
//
// Environment: FAKE_ROCPROF_DISPATCHES (per kernel, default 10), FAKE_ROCPROF_FAIL=1 (exit 1 like
// a failing rocprofv3), FAKE_ROCPROF_NO_DISPATCHES=1 (a trace with no kernels).

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "stages/trace/rocpd_writer.hpp"

namespace rocpd = rpl::stages::rocpd;

int main(int argc, char** argv) {
  std::filesystem::path out;
  std::vector<char*> app;
  bool kernel_trace = false;
  std::vector<std::string> pmc;
  std::string format;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") {
      for (int j = i + 1; j < argc; ++j) {
        app.push_back(argv[j]);
      }
      break;
    }
    if (arg == "--kernel-trace") {
      kernel_trace = true;
    } else if (arg == "--pmc") {
      while (i + 1 < argc && argv[i + 1][0] != '-')
        pmc.emplace_back(argv[++i]);
    } else if ((arg == "-d" || arg == "--output-directory") && i + 1 < argc) {
      out = argv[++i];
    } else if ((arg == "--output-format" || arg == "-f") && i + 1 < argc) {
      format = argv[++i];
    } else {
      std::fprintf(stderr, "rocprofv3 (test stand-in): unsupported argument %s\n", arg.c_str());
      return 1;
    }
  }
  if ((!kernel_trace && pmc.empty()) || format != "rocpd" || out.empty() || app.empty()) {
    std::fprintf(stderr, "rocprofv3 (test stand-in): expected --kernel-trace --output-format rocpd "
                         "-d DIR -- APP\n");
    return 1;
  }
  if (const char* fail = std::getenv("FAKE_ROCPROF_FAIL"); fail != nullptr && *fail == '1') {
    std::fprintf(stderr, "rocprofv3 (test stand-in): simulated failure\n");
    return 1;
  }
  app.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    execvp(app[0], app.data());
    std::fprintf(stderr, "rocprofv3 (test stand-in): cannot run %s: %s\n", app[0],
                 std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  const int app_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);

  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  const auto dir = out / host;
  std::filesystem::create_directories(dir);
  rocpd::writer db(dir / (std::to_string(pid) + "_results.db"));
  rocpd::node_info node;
  node.hostname = host;
  const auto nid = db.add_node(node);
  rocpd::process_info process;
  process.pid = pid;
  process.ppid = getpid();
  process.nid = nid;
  process.command = app[0];
  db.add_process(process);
  rocpd::thread_info thread;
  thread.tid = pid;
  thread.pid = pid;
  thread.nid = nid;
  db.add_thread(thread);
  rocpd::agent_info agent;
  agent.nid = nid;
  agent.pid = pid;
  agent.absolute_index = 1;
  agent.logical_index = 1;
  agent.name = "gfx90a";
  agent.model_name = "aldebaran";
  agent.product_name = "AMD Instinct MI210";
  agent.extdata = {{"cu_count", 104},
                   {"simd_per_cu", 4},
                   {"wave_front_size", 64},
                   {"max_waves_per_cu", 32},
                   {"max_engine_clk_fcompute", 1700}};
  const auto agent_id = db.add_agent(agent);
  rocpd::code_object_info code;
  code.nid = nid;
  code.pid = pid;
  code.agent_id = agent_id;
  code.uri = std::string("file://") + app[0] + "#offset=8192&size=4096";
  const auto code_id = db.add_code_object(code);

  struct kernel {
    const char* name;
    std::int64_t vgpr, agpr, sgpr, lds, dynamic_lds, scratch, block, duration_ns;
  };
  // gemm_tile launches with 16 KiB of dynamic LDS on top of its 16 KiB static LDS.
  const kernel kernels[] = {
      {"gemm_tile(float const*, float const*, float*, int)", 128, 0, 48, 16384, 16384, 0, 256,
       400000},
      {"reduce_sum(float*, int)", 32, 0, 24, 4096, 0, 0, 1024, 50000},
      {"__amd_rocclr_fillBufferAligned", 8, 0, 16, 0, 0, 0, 256, 3000},
  };
  int dispatches = 10;
  if (const char* n = std::getenv("FAKE_ROCPROF_DISPATCHES")) {
    dispatches = std::atoi(n);
  }
  if (const char* none = std::getenv("FAKE_ROCPROF_NO_DISPATCHES");
      none != nullptr && *none == '1') {
    dispatches = 0;
  }
  std::vector<std::int64_t> pmc_ids;
  for (const auto& name : pmc) {
    rocpd::pmc_info info;
    info.nid = nid;
    info.pid = pid;
    info.agent_id = agent_id;
    info.name = name;
    pmc_ids.push_back(db.add_pmc_info(info));
  }
  // Deterministic per-process jitter (±2 %), so repeated runs differ a little, as real ones do.
  const double jitter = 1.0 + (static_cast<double>(pid % 41) - 20.0) / 1000.0;
  std::int64_t now = 1'000'000'000;
  for (const auto& k : kernels) {
    rocpd::kernel_symbol_info symbol;
    symbol.nid = nid;
    symbol.pid = pid;
    symbol.code_object_id = code_id;
    symbol.kernel_name = k.name;
    symbol.display_name = k.name;
    symbol.arch_vgpr_count = k.vgpr;
    symbol.accum_vgpr_count = k.agpr;
    symbol.sgpr_count = k.sgpr;
    symbol.group_segment_size = k.lds;
    symbol.private_segment_size = k.scratch;
    symbol.kernarg_segment_size = 32;
    const auto kernel_id = db.add_kernel_symbol(symbol);
    for (int i = 0; i < dispatches; ++i) {
      rocpd::dispatch_info d;
      d.nid = nid;
      d.pid = pid;
      d.tid = pid;
      d.agent_id = agent_id;
      d.kernel_id = kernel_id;
      d.start_ns = now;
      d.end_ns =
          now + static_cast<std::int64_t>(static_cast<double>(k.duration_ns + i * 100) * jitter);
      d.workgroup = {k.block, 1, 1};
      d.grid = {k.block * 1024, 1, 1};
      d.group_segment_size = k.lds + k.dynamic_lds;
      db.add_dispatch(d);
      const auto event = db.last_event_id();
      for (std::size_t c = 0; c < pmc.size(); ++c) {
        const std::string& name = pmc[c];
        const double value =
            name.find("BUBBLE") != std::string::npos                                         ? 10
            : name.find("32B") != std::string::npos || name.find("64B") != std::string::npos ? 100
                                                                                             : 1000;
        const int instances = name.rfind("SQ_", 0) == 0 ? 2 : 1;
        for (int n = 0; n < instances; ++n)
          db.add_pmc_event(event, pmc_ids[c], value / instances);
      }
      now = d.end_ns + 2000;
    }
  }
  db.commit();
  return app_status;
}
