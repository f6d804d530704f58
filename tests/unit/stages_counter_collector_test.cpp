// The counters read without a join (counter_collector: the dispatches from a scan, the pmc rows
// from plain scans in rowid ranges) against the join read_kernel_counters made before: the same
// per-kernel sums, counts and per-ordinal values, with per-instance rows summed per dispatch.
#include <cmath>
#include <thread>

#include <gtest/gtest.h>

#include "stages/sqlite/sqlite_statement.hpp"
#include "stages/trace/counter_collector.hpp"
#include "stages/trace/rocpd_writer.hpp"
#include "support/test_support.hpp"

namespace rpl::stages::rocpd {
namespace {

using rpl::testing::temp_dir;

/// read_kernel_counters as it was (one GROUP BY / JOIN query per pass, sorted by dispatch id):
/// the reference the collector must match.
std::map<std::string, kernel_counters>
joined_kernel_counters(const std::vector<std::filesystem::path>& paths,
                       std::size_t max_dispatches) {
  std::map<std::string, kernel_counters> out;
  const reader files = reader::open(paths);
  std::map<std::pair<std::size_t, std::int64_t>, std::pair<std::string, std::string>> agents;
  for (const auto& agent : files.agents())
    agents[{agent.database, agent.id}] = {agent.name, agent.product_name};
  for (std::size_t database = 0; database < files.databases().size(); ++database) {
    const database_info& info = files.databases()[database];
    sqlite::connection db(info.path, SQLITE_OPEN_READONLY);
    for (const auto& sfx : info.uuids) {
      sqlite::statement rows(
          db, "SELECT D.id, COALESCE(NULLIF(KS.display_name, ''), KS.kernel_name), D.start, "
              "D.\"end\", D.agent_id, PI.name, SUM(PE.value) FROM rocpd_pmc_event" +
                  sfx + " PE JOIN rocpd_info_pmc" + sfx +
                  " PI ON PI.id = PE.pmc_id JOIN rocpd_kernel_dispatch" + sfx +
                  " D ON D.event_id = PE.event_id JOIN rocpd_info_kernel_symbol" + sfx +
                  " KS ON KS.id = D.kernel_id GROUP BY PE.event_id, PE.pmc_id ORDER BY D.id");
      std::int64_t last_dispatch = -1;
      std::map<std::string, std::size_t> ordinal;
      kernel_counters::dispatch* current = nullptr;
      while (rows.step()) {
        const std::int64_t dispatch = rows.column_int64(0);
        const std::string name = rows.column_text(1);
        kernel_counters& k = out[kernel_key(name)];
        if (k.name.empty()) {
          k.name = name;
          const auto agent = agents.find({database, rows.column_int64(4)});
          if (agent != agents.end()) {
            k.target = agent->second.first;
            k.product = agent->second.second;
          }
        }
        if (dispatch != last_dispatch) {
          ++k.dispatches;
          const double duration = static_cast<double>(rows.column_int64(3) - rows.column_int64(2));
          k.duration_sum_ns += duration;
          last_dispatch = dispatch;
          const std::size_t n = ordinal[k.name]++;
          current = nullptr;
          if (n < max_dispatches) {
            if (k.dispatches_by_ordinal.size() <= n)
              k.dispatches_by_ordinal.resize(n + 1);
            current = &k.dispatches_by_ordinal[n];
            current->duration_ns = duration;
          }
        }
        const std::string counter = rows.column_text(5);
        const double value = rows.column_double(6);
        counter_total& c = k.counters[counter];
        c.sum += value;
        ++c.dispatches;
        if (current != nullptr)
          current->counters[counter] = value;
      }
    }
  }
  return out;
}

void expect_same_counters(const std::map<std::string, kernel_counters>& actual,
                          const std::map<std::string, kernel_counters>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (const auto& [key, e] : expected) {
    SCOPED_TRACE(key);
    ASSERT_EQ(actual.count(key), 1u);
    const kernel_counters& a = actual.at(key);
    EXPECT_EQ(a.name, e.name);
    EXPECT_EQ(a.target, e.target);
    EXPECT_EQ(a.product, e.product);
    EXPECT_EQ(a.dispatches, e.dispatches);
    EXPECT_EQ(a.duration_sum_ns, e.duration_sum_ns);
    ASSERT_EQ(a.counters.size(), e.counters.size());
    for (const auto& [name, total] : e.counters) {
      SCOPED_TRACE(name);
      ASSERT_EQ(a.counters.count(name), 1u);
      EXPECT_EQ(a.counters.at(name).sum, total.sum);
      EXPECT_EQ(a.counters.at(name).dispatches, total.dispatches);
    }
    ASSERT_EQ(a.dispatches_by_ordinal.size(), e.dispatches_by_ordinal.size());
    for (std::size_t n = 0; n < e.dispatches_by_ordinal.size(); ++n) {
      EXPECT_EQ(a.dispatches_by_ordinal[n].duration_ns, e.dispatches_by_ordinal[n].duration_ns);
      EXPECT_EQ(a.dispatches_by_ordinal[n].counters, e.dispatches_by_ordinal[n].counters) << n;
    }
  }
}

/// A counter pass as rocprofv3 --pmc writes one: kernels "void app::gemm<64>(float*)" and
/// "app::scale(float*)" alternating on two agents, TCC_HIT and TCC_MISS with a row per instance
/// (4), SQ_WAVES one row; every 5th dispatch without counters, one dispatch of a kernel without a
/// symbol row, one value of a counter rocpd_info_pmc does not list, one NULL value (a NaN binds
/// as NULL). With `interleave`, an even dispatch's TCC_HIT rows come before the next dispatch's
/// rows and its others after them (an event's rows not adjacent, events out of order).
void write_instance_pass(const std::filesystem::path& path,
                         std::int64_t pid,
                         std::size_t dispatches,
                         bool interleave) {
  writer w(path);
  node_info node;
  w.add_node(node);
  process_info process;
  process.pid = pid;
  w.add_process(process);
  thread_info thread;
  thread.pid = pid;
  thread.tid = pid;
  w.add_thread(thread);
  for (std::int64_t a = 1; a <= 2; ++a) {
    agent_info agent;
    agent.pid = pid;
    agent.absolute_index = a;
    agent.name = a == 1 ? "gfx942" : "gfx90a";
    agent.product_name = a == 1 ? "AMD Instinct MI300X" : "AMD Instinct MI250X";
    w.add_agent(agent);
  }
  code_object_info code;
  code.id = 1;
  code.pid = pid;
  code.agent_id = 1;
  w.add_code_object(code);
  for (std::int64_t s = 1; s <= 2; ++s) {
    kernel_symbol_info symbol;
    symbol.id = s;
    symbol.pid = pid;
    symbol.code_object_id = 1;
    symbol.kernel_name = s == 1 ? "_ZN3app4gemmILi64EEEvPf" : "_ZN3app5scaleEPf";
    symbol.display_name = s == 1 ? "void app::gemm<64>(float*)" : "app::scale(float*)";
    w.add_kernel_symbol(symbol);
  }
  std::map<std::string, std::int64_t> ids;
  for (const char* name : {"TCC_MISS", "SQ_WAVES", "TCC_HIT"}) {
    pmc_info info;
    info.pid = pid;
    info.agent_id = 1;
    info.name = name;
    ids[name] = w.add_pmc_info(info);
  }
  std::vector<std::pair<std::int64_t, std::size_t>> held; // (event, dispatch) to finish later
  auto hits = [&](std::int64_t event, std::size_t i) {
    for (int instance = 0; instance < 4; ++instance)
      w.add_pmc_event(event, ids["TCC_HIT"], 1000.0 * static_cast<double>(i) + 10 * instance + 1);
  };
  auto rest = [&](std::int64_t event, std::size_t i) {
    w.add_pmc_event(event, ids["SQ_WAVES"], 64.0 + static_cast<double>(i));
    for (int instance = 0; instance < 4; ++instance)
      w.add_pmc_event(event, ids["TCC_MISS"], static_cast<double>(i % 7) + instance * 0.5);
  };
  for (std::size_t i = 0; i < dispatches; ++i) {
    dispatch_info d;
    d.pid = pid;
    d.tid = pid;
    d.agent_id = 1 + static_cast<std::int64_t>(i % 2);
    d.kernel_id = i == 3 ? 99 : 1 + static_cast<std::int64_t>(i % 3 == 0);
    d.start_ns = 1'000 + static_cast<std::int64_t>(i) * 10'000;
    d.end_ns = d.start_ns + 1'000 + static_cast<std::int64_t>(i % 11) * 37;
    w.add_dispatch(d);
    const std::int64_t event = w.last_event_id();
    if (i % 5 == 4)
      continue;
    hits(event, i);
    if (interleave && i % 2 == 0) {
      held.emplace_back(event, i);
      continue;
    }
    rest(event, i);
    for (const auto& [e, j] : held)
      rest(e, j);
    held.clear();
    if (i == 6) {
      w.add_pmc_event(event, 4242, 5); // no such counter: the join drops it
      w.add_pmc_event(event, ids["TCC_HIT"], std::nan(""));
    }
  }
  for (const auto& [e, j] : held)
    rest(e, j);
  w.commit();
}

std::map<std::string, kernel_counters> collect(const std::vector<std::filesystem::path>& paths,
                                               std::size_t max_dispatches,
                                               std::uint64_t rowids_per_range,
                                               bool two_threads,
                                               bool from_pages) {
  const reader files = reader::open(paths);
  std::vector<std::size_t> databases;
  for (std::size_t i = 0; i < files.databases().size(); ++i)
    databases.push_back(i);
  counter_collector collector(files, databases, max_dispatches, rowids_per_range, from_pages);
  std::thread side;
  if (two_threads)
    side = std::thread([&] { collector.read_counter_rows(); });
  files.for_each_dispatch([&](const dispatch_row& row) { collector.add(row); },
                          dispatch_fields::report);
  collector.read_counter_rows();
  if (side.joinable())
    side.join();
  return collector.finish();
}

TEST(stages_counter_collector, gives_what_the_join_gave_with_instances_summed_per_dispatch) {
  temp_dir dir;
  write_instance_pass(dir / "pass1.db", 11, 40, false);
  write_instance_pass(dir / "pass2.db", 12, 25, true);
  const std::vector<std::filesystem::path> paths = {dir / "pass1.db", dir / "pass2.db"};
  const auto expected = joined_kernel_counters(paths, 1000);
  expect_same_counters(read_kernel_counters(paths), expected);
  // Small ranges (each dispatch's rows cut across ranges by rowid through SQL, a leaf page each
  // from the pages) read by two threads at once.
  for (const bool pages : {false, true}) {
    SCOPED_TRACE(pages ? "from the pages" : "through SQL");
    for (const std::uint64_t rowids : {1u, 3u, 7u, 64u})
      expect_same_counters(collect(paths, 1000, rowids, true, pages), expected);
    // At most 2 dispatches per kernel by ordinal; the totals still count all of them.
    expect_same_counters(collect(paths, 2, 5, false, pages), joined_kernel_counters(paths, 2));
  }
}

TEST(stages_counter_collector, a_row_the_pages_cannot_give_is_read_through_sql) {
  temp_dir dir;
  write_instance_pass(dir / "pass.db", 11, 200, false);
  {
    // A text value in the REAL column (SUM reads it as 0): a value only SQL reads right.
    const reader files = reader::open({dir / "pass.db"});
    sqlite::connection db(dir / "pass.db", SQLITE_OPEN_READWRITE);
    const std::string table = "rocpd_pmc_event" + files.databases()[0].uuids[0];
    db.exec("UPDATE " + table + " SET value = 'n/a' WHERE id = 40");
  }
  const std::vector<std::filesystem::path> paths = {dir / "pass.db"};
  const auto expected = joined_kernel_counters(paths, 1000);
  expect_same_counters(collect(paths, 1000, 1, true, true), expected);
  expect_same_counters(collect(paths, 1000, 1 << 20, false, true), expected);
}

TEST(stages_counter_collector, sums_each_counters_instances_once_per_dispatch) {
  temp_dir dir;
  write_instance_pass(dir / "pass.db", 11, 3, false);
  const auto counters = read_kernel_counters({dir / "pass.db"});
  // Dispatch 0 runs app::scale (kernel 2), dispatches 1 and 2 app::gemm<64> (kernel 1).
  const kernel_counters& gemm = counters.at("app::gemm<64>");
  EXPECT_EQ(gemm.name, "void app::gemm<64>(float*)");
  EXPECT_EQ(gemm.target, "gfx90a"); // the agent of its first dispatch (1: agent 2)
  EXPECT_EQ(gemm.dispatches, 2u);
  // 4 instances per dispatch, one value: (1000 i + 1) + (1000 i + 11) + ... + (1000 i + 31).
  ASSERT_EQ(gemm.dispatches_by_ordinal.size(), 2u);
  EXPECT_EQ(gemm.dispatches_by_ordinal[0].counters.at("TCC_HIT"), 4000.0 + 64);
  EXPECT_EQ(gemm.dispatches_by_ordinal[1].counters.at("TCC_HIT"), 8000.0 + 64);
  EXPECT_EQ(gemm.dispatches_by_ordinal[1].counters.at("TCC_MISS"), 4 * 2.0 + 3.0);
  EXPECT_EQ(gemm.counters.at("TCC_HIT").sum, 12000.0 + 128);
  EXPECT_EQ(gemm.counters.at("TCC_HIT").dispatches, 2u); // dispatches, not instance rows
  EXPECT_EQ(gemm.counters.at("SQ_WAVES").sum, 65.0 + 66);
  EXPECT_EQ(gemm.duration_sum_ns, 1037.0 + 1074);
  EXPECT_EQ(counters.at("app::scale").dispatches_by_ordinal[0].counters.at("TCC_HIT"), 64.0);
}

} // namespace
} // namespace rpl::stages::rocpd
