#include <gtest/gtest.h>

#include "stages/trace/counter_passes.hpp"
#include "stages/trace/ncu_csv.hpp"
#include "stages/trace/rocpd_writer.hpp"
#include "support/test_support.hpp"

namespace rpl::stages::rocpd {
namespace {

using rpl::testing::temp_dir;

/// One dispatch; with `counter`, one pmc row on it (as rocprofv3 --pmc writes).
void write_db(const std::filesystem::path& path, bool counter) {
  writer w(path);
  node_info node;
  w.add_node(node);
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
  agent.name = "gfx942";
  w.add_agent(agent);
  code_object_info code;
  code.id = 1;
  code.pid = 7;
  code.agent_id = 1;
  w.add_code_object(code);
  kernel_symbol_info symbol;
  symbol.id = 1;
  symbol.pid = 7;
  symbol.code_object_id = 1;
  symbol.kernel_name = "k";
  w.add_kernel_symbol(symbol);
  dispatch_info d;
  d.pid = 7;
  d.tid = 7;
  d.agent_id = 1;
  d.kernel_id = 1;
  d.start_ns = 100;
  d.end_ns = 200;
  w.add_dispatch(d);
  if (counter) {
    pmc_info info;
    info.pid = 7;
    info.agent_id = 1;
    info.name = "SQ_WAVES";
    w.add_pmc_event(w.last_event_id(), w.add_pmc_info(info), 64);
  }
  w.commit();
}

TEST(stages_counter_passes, files_with_counters_are_passes_and_the_rest_the_timeline) {
  temp_dir dir;
  write_db(dir / "trace.db", false);
  write_db(dir / "pmc_pass.db", true);
  {
    writer w(dir / "ncu.db");
    const auto csv = rpl::testing::read_text(rpl::testing::source_dir /
                                             "tests/fixtures/ncu/gemm_1024_h200_raw.csv");
    ncu::write_counter_pass(ncu::parse_raw_csv(csv), w, 1);
    w.commit();
  }
  const auto roles = split_counter_passes({dir / "trace.db", dir / "pmc_pass.db", dir / "ncu.db"});
  EXPECT_EQ(roles.timeline, std::vector<std::filesystem::path>{dir / "trace.db"});
  EXPECT_EQ(roles.counters,
            (std::vector<std::filesystem::path>{dir / "pmc_pass.db", dir / "ncu.db"}));
  EXPECT_FALSE(roles.timeline_from_counter_passes);
}

TEST(stages_counter_passes, counter_passes_alone_are_their_own_timeline_and_say_so) {
  temp_dir dir;
  write_db(dir / "pmc_pass.db", true);
  const auto roles = split_counter_passes({dir / "pmc_pass.db"});
  EXPECT_EQ(roles.timeline, roles.counters);
  EXPECT_TRUE(roles.timeline_from_counter_passes);
  EXPECT_THROW(split_counter_passes({dir / "missing.db"}), rocpd_error);
}

} // namespace
} // namespace rpl::stages::rocpd
