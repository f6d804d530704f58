// analyze's "memory: uncoalesced" class from counter passes as each vendor's tools name them: AMD
// (rocprofv3 --pmc with rocprof-compute's vL1D coalescing counters, TA_TOTAL_WAVEFRONTS_sum and
// TCP_TOTAL_ACCESSES_sum) and NVIDIA (Nsight Compute's L1 sectors and requests per global access).
// A row gather is uncoalesced; a unit-stride copy, with the same other counters, is not.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "stages/trace/rocpd_writer.hpp"
#include "support/json_schema.hpp"
#include "support/test_support.hpp"

namespace rpl {
namespace {

using rpl::testing::run_rocm_perf;
using rpl::testing::temp_dir;

struct uc_kernel {
  const char* name;
  std::vector<std::pair<const char*, double>> counters; ///< per dispatch
  /// The name the counter pass gives it, when not `name` (Nsight Compute's CSV: the bare
  /// function name, "row_gather" for "(anonymous namespace)::row_gather(float const*, float*)").
  const char* pass_name = nullptr;
};

/// Three dispatches of each kernel on one `target` GPU (a 1,024-block grid); with `counters`,
/// each dispatch carries its kernel's pmc rows (a counter pass), else none (the timeline).
void uc_write(const std::filesystem::path& path,
              const std::string& target,
              const std::vector<uc_kernel>& kernels,
              bool counters) {
  using namespace stages::rocpd;
  writer w(path);
  w.add_node(node_info{});
  process_info process;
  process.pid = 7;
  w.add_process(process);
  thread_info thread;
  thread.pid = 7;
  thread.tid = 7;
  w.add_thread(thread);
  agent_info agent;
  agent.pid = 7;
  agent.absolute_index = 1;
  agent.name = target;
  w.add_agent(agent);
  code_object_info code;
  code.id = 1;
  code.pid = 7;
  code.agent_id = 1;
  w.add_code_object(code);
  std::map<std::string, std::int64_t> pmc_ids;
  std::int64_t now = 1'000'000;
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    kernel_symbol_info symbol;
    symbol.id = static_cast<std::int64_t>(k + 1);
    symbol.pid = 7;
    symbol.code_object_id = 1;
    symbol.kernel_name =
        counters && kernels[k].pass_name != nullptr ? kernels[k].pass_name : kernels[k].name;
    symbol.arch_vgpr_count = 32;
    symbol.sgpr_count = 16;
    w.add_kernel_symbol(symbol);
    for (int i = 0; i < 3; ++i) {
      dispatch_info d;
      d.pid = 7;
      d.tid = 7;
      d.agent_id = 1;
      d.kernel_id = symbol.id;
      d.start_ns = now;
      d.end_ns = now + 50'000;
      d.workgroup = {256, 1, 1};
      d.grid = {256 * 1024, 1, 1};
      w.add_dispatch(d);
      now = d.end_ns + 1'000;
      if (!counters)
        continue;
      const auto event = w.last_event_id();
      for (const auto& [name, value] : kernels[k].counters) {
        auto [it, added] = pmc_ids.emplace(name, 0);
        if (added) {
          pmc_info info;
          info.pid = 7;
          info.agent_id = 1;
          info.name = name;
          it->second = w.add_pmc_info(info);
        }
        w.add_pmc_event(event, it->second, value);
      }
    }
  }
  w.commit();
}

nlohmann::json uc_classes(const std::string& target, const std::vector<uc_kernel>& kernels) {
  temp_dir dir;
  uc_write(dir / "trace.db", target, kernels, false);
  uc_write(dir / "pass.db", target, kernels, true);
  const auto out = run_rocm_perf({"analyze", (dir / "trace.db").string(),
                                  (dir / "pass.db").string(), "--out", (dir / "out").string()});
  EXPECT_EQ(out.exit_code, 0) << out.output;
  nlohmann::json classes = nlohmann::json::object();
  if (!std::filesystem::exists(dir / "out" / "analysis.json"))
    return classes;
  const auto analysis =
      nlohmann::json::parse(rpl::testing::read_text(dir / "out" / "analysis.json"));
  EXPECT_EQ(rpl::testing::schema_errors(analysis, "analysis.schema.json"),
            std::vector<std::string>{});
  for (const auto& k : analysis["kernels"])
    classes[k["name"].get<std::string>()] = k["bottleneck"];
  return classes;
}

TEST(cli_uncoalesced_class, amd_vl1d_coalescing_names_the_row_gather) {
  // rocprof-compute's formula: 2,048 waves need 32,768 vL1D accesses when coalesced (100 %);
  // the gather needs 131,072 (25 %).
  const auto classes = uc_classes(
      "gfx942",
      {{"row_gather", {{"TA_TOTAL_WAVEFRONTS_sum", 2048}, {"TCP_TOTAL_ACCESSES_sum", 131072}}},
       {"unit_copy", {{"TA_TOTAL_WAVEFRONTS_sum", 2048}, {"TCP_TOTAL_ACCESSES_sum", 32768}}}});
  ASSERT_TRUE(classes.contains("row_gather")) << classes.dump(2);
  EXPECT_EQ(classes["row_gather"]["class"], "memory_uncoalesced") << classes.dump(2);
  EXPECT_EQ(classes["row_gather"]["measured"]["coalescing_pct"], 25);
  EXPECT_NE(classes["row_gather"]["next_step"].get<std::string>().find("access order"),
            std::string::npos);
  ASSERT_TRUE(classes.contains("unit_copy"));
  EXPECT_NE(classes["unit_copy"]["class"], "memory_uncoalesced") << classes.dump(2);
  EXPECT_EQ(classes["unit_copy"]["measured"]["coalescing_pct"], 100);
}

TEST(cli_uncoalesced_class, nvidia_sectors_per_request_name_the_row_gather) {
  const auto gather = std::vector<std::pair<const char*, double>>{
      {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 262144},
      {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 8192},
      {"l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", 32768},
      {"l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", 8192},
      {"lts__throughput.avg.pct_of_peak_sustained_elapsed", 88.7},
      {"l1tex__throughput.avg.pct_of_peak_sustained_elapsed", 71.2}};
  auto copy = gather;
  copy[0].second = 32768; // 4 sectors per request
  copy[4].second = 35;
  copy[5].second = 30;
  // The trace names the kernels in full, in an anonymous namespace; ncu by function name.
  const std::string g_name = "(anonymous namespace)::row_gather(float const*, float*)";
  const std::string c_name = "(anonymous namespace)::unit_copy(float const*, float*)";
  const auto classes = uc_classes(
      "sm_90", {{g_name.c_str(), gather, "row_gather"}, {c_name.c_str(), copy, "unit_copy"}});
  ASSERT_TRUE(classes.contains(g_name)) << classes.dump(2);
  EXPECT_EQ(classes[g_name]["class"], "memory_uncoalesced") << classes.dump(2);
  EXPECT_EQ(classes[g_name]["measured"]["sectors_per_request"], 18);
  EXPECT_NE(classes[g_name]["because"].get<std::string>().find("L2 88.7 %"), std::string::npos);
  ASSERT_TRUE(classes.contains(c_name));
  EXPECT_NE(classes[c_name]["class"], "memory_uncoalesced") << classes.dump(2);
}

} // namespace
} // namespace rpl
