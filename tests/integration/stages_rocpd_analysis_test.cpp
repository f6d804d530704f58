// The trace analysis end to end: a two-process trace written with the writer, read with the reader,
// summarized by the accounting, and every figure checked against plain SQL over rocprofv3's views
// and tables in each file.

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "stages/trace/rocpd_reader.hpp"
#include "stages/trace/runtime_accounting.hpp"
#include "support/rocpd_fixtures.hpp"
#include "support/test_support.hpp"

namespace rpl::stages::rocpd {
namespace {

using rpl::testing::sqlite_db;
using rpl::testing::temp_dir;

struct sql_kernel {
  std::int64_t count = 0;
  std::int64_t total = 0;
  std::int64_t min = INT64_MAX;
  std::int64_t max = INT64_MIN;
  std::vector<std::int64_t> durations;
};

/// Per kernel name, merged over the files: COUNT, SUM, MIN, MAX from the `kernels` view, plus the
/// durations (for median and nearest-rank p95) fetched in SQL order.
std::map<std::string, sql_kernel> sql_kernels(const std::vector<std::filesystem::path>& files) {
  std::map<std::string, sql_kernel> out;
  for (const auto& file : files) {
    sqlite_db db(file);
    for (const auto& r :
         db.rows("SELECT name, COUNT(*), SUM(duration), MIN(duration), MAX(duration) "
                 "FROM kernels GROUP BY name")) {
      sql_kernel& k = out[r[0]];
      k.count += std::stoll(r[1]);
      k.total += std::stoll(r[2]);
      k.min = std::min<std::int64_t>(k.min, std::stoll(r[3]));
      k.max = std::max<std::int64_t>(k.max, std::stoll(r[4]));
    }
    for (const auto& r : db.rows("SELECT name, duration FROM kernels ORDER BY duration")) {
      out[r[0]].durations.push_back(std::stoll(r[1]));
    }
  }
  for (auto& [name, k] : out) {
    std::sort(k.durations.begin(), k.durations.end());
  }
  return out;
}

class stages_rocpd_analysis : public ::testing::Test {
protected:
  temp_dir dir_;
  rpl::testing::two_process_trace trace_ = rpl::testing::write_two_process_trace(dir_.path());
};

TEST_F(stages_rocpd_analysis, per_kernel_figures_equal_sql_over_the_kernels_view) {
  const reader r = reader::open({trace_.dir});
  const runtime_summary s = summarize(r);
  const auto expected = sql_kernels({trace_.first, trace_.second});

  std::map<std::string, kernel_stats> actual;
  for (const auto& k : s.kernels) {
    actual[k.name] = k;
  }
  for (const auto& k : s.helper_kernels) {
    actual[k.name] = k;
  }
  ASSERT_EQ(actual.size(), expected.size());
  for (const auto& [name, e] : expected) {
    SCOPED_TRACE(name);
    ASSERT_EQ(actual.count(name), 1u);
    const kernel_stats& a = actual[name];
    EXPECT_EQ(a.count, static_cast<std::size_t>(e.count));
    EXPECT_DOUBLE_EQ(a.total_ns, static_cast<double>(e.total));
    EXPECT_DOUBLE_EQ(a.min_ns, static_cast<double>(e.min));
    EXPECT_DOUBLE_EQ(a.max_ns, static_cast<double>(e.max));
    EXPECT_DOUBLE_EQ(a.mean_ns, static_cast<double>(e.total) / static_cast<double>(e.count));
    const std::size_t n = e.durations.size();
    const double median = n % 2 == 1 ? static_cast<double>(e.durations[n / 2])
                                     : (static_cast<double>(e.durations[n / 2 - 1]) +
                                        static_cast<double>(e.durations[n / 2])) /
                                           2.0;
    EXPECT_DOUBLE_EQ(a.median_ns, median);
    const std::size_t rank = static_cast<std::size_t>(std::ceil(0.95 * static_cast<double>(n)));
    EXPECT_DOUBLE_EQ(a.p95_ns, static_cast<double>(e.durations[rank - 1]));
    EXPECT_EQ(a.runtime_helper, name.rfind("__amd_rocclr_", 0) == 0);
  }
  // AVG straight from SQL agrees too (single file, where SQL can compute it alone).
  sqlite_db first(trace_.first);
  const auto avg_rows =
      first.rows("SELECT name, AVG(duration) FROM kernels WHERE name = 'layernorm'");
  ASSERT_EQ(avg_rows.size(), 1u);
  EXPECT_NEAR(actual["layernorm"].mean_ns, std::stod(avg_rows[0][1]), 1e-9);
}

TEST_F(stages_rocpd_analysis, totals_span_and_groups_equal_sql_over_the_tables) {
  const reader r = reader::open({trace_.first, trace_.second});
  const runtime_summary s = summarize(r);

  std::int64_t user = 0;
  std::int64_t helper = 0;
  std::int64_t count = 0;
  std::int64_t first_start = INT64_MAX;
  std::int64_t last_end = INT64_MIN;
  std::map<std::string, std::int64_t> per_agent;
  std::map<std::string, std::int64_t> per_queue;
  std::map<std::string, std::int64_t> per_stream;
  std::map<std::string, std::int64_t> per_process;
  for (const auto& file : {trace_.first, trace_.second}) {
    sqlite_db db(file);
    user += db.integer("SELECT SUM(duration) FROM kernels WHERE name NOT LIKE "
                       "'\\_\\_amd\\_rocclr\\_%' ESCAPE '\\'");
    helper += db.integer(
        "SELECT SUM(duration) FROM kernels WHERE name LIKE '\\_\\_amd\\_rocclr\\_%' ESCAPE '\\'");
    count += db.integer("SELECT COUNT(*) FROM rocpd_kernel_dispatch");
    first_start = std::min(first_start, db.integer("SELECT MIN(start) FROM rocpd_kernel_dispatch"));
    last_end = std::max(last_end, db.integer("SELECT MAX(\"end\") FROM rocpd_kernel_dispatch"));
    for (const auto& row :
         db.rows("SELECT A.name || ' (agent ' || K.agent_id || ')', SUM(K.\"end\" - K.start) "
                 "FROM rocpd_kernel_dispatch K JOIN rocpd_info_agent A ON A.id = K.agent_id "
                 "GROUP BY K.agent_id")) {
      per_agent[row[0]] += std::stoll(row[1]);
    }
    for (const auto& row :
         db.rows("SELECT queue || ' (pid ' || pid || ')', SUM(duration) FROM kernels "
                 "GROUP BY queue_id")) {
      per_queue[row[0]] += std::stoll(row[1]);
    }
    for (const auto& row :
         db.rows("SELECT stream || ' (pid ' || pid || ')', SUM(duration) FROM kernels "
                 "GROUP BY stream_id")) {
      per_stream[row[0]] += std::stoll(row[1]);
    }
    for (const auto& row :
         db.rows("SELECT 'pid ' || pid, SUM(\"end\" - start) FROM rocpd_kernel_dispatch "
                 "GROUP BY pid")) {
      per_process[row[0]] += std::stoll(row[1]);
    }
  }
  EXPECT_DOUBLE_EQ(s.total_gpu_ns, static_cast<double>(user));
  EXPECT_DOUBLE_EQ(s.helper_gpu_ns, static_cast<double>(helper));
  EXPECT_EQ(s.dispatch_count, static_cast<std::size_t>(count));
  EXPECT_EQ(s.dispatch_count, r.dispatch_count());
  EXPECT_DOUBLE_EQ(s.wall_span_ns, static_cast<double>(last_end - first_start));

  auto as_map = [](const std::vector<group_total>& groups) {
    std::map<std::string, std::int64_t> out;
    for (const auto& g : groups) {
      out[g.name] = static_cast<std::int64_t>(g.total_ns);
    }
    return out;
  };
  EXPECT_EQ(as_map(s.per_agent), per_agent);
  EXPECT_EQ(s.per_agent.size(), 2u); // two GPUs, each seen by both processes
  EXPECT_EQ(as_map(s.per_queue), per_queue);
  EXPECT_EQ(s.per_queue.size(), 6u);
  EXPECT_EQ(as_map(s.per_stream), per_stream);
  EXPECT_EQ(as_map(s.per_process), per_process);
  EXPECT_EQ(s.per_process.size(), 2u);

  // The dominant kernel is the user kernel with the largest SUM(duration) in SQL.
  std::map<std::string, std::int64_t> totals;
  for (const auto& file : {trace_.first, trace_.second}) {
    sqlite_db db(file);
    for (const auto& row : db.rows("SELECT name, SUM(duration) FROM kernels GROUP BY name")) {
      if (row[0].rfind("__amd_rocclr_", 0) != 0) {
        totals[row[0]] += std::stoll(row[1]);
      }
    }
  }
  const auto top = std::max_element(totals.begin(), totals.end(), [](const auto& a, const auto& b) {
    return a.second < b.second;
  });
  EXPECT_EQ(s.dominant_kernel, top->first);
  EXPECT_EQ(s.dominant_kernel, "softmax"); // 110 dispatches of ~2.2 µs over both processes
}

TEST_F(stages_rocpd_analysis, rocprofv3_summary_views_agree_with_the_accounting) {
  const runtime_summary s = summarize(reader::open({trace_.first}));
  sqlite_db db(trace_.first);
  for (const auto& k : s.kernels) {
    SCOPED_TRACE(k.name);
    const auto rows = db.rows("SELECT calls, \"DURATION (nsec)\", \"MIN (nsec)\", \"MAX (nsec)\", "
                              "\"AVERAGE (nsec)\" FROM kernel_summary WHERE name = '" +
                              k.name + "'");
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(std::stoull(rows[0][0]), k.count);
    EXPECT_DOUBLE_EQ(std::stod(rows[0][1]), k.total_ns);
    EXPECT_DOUBLE_EQ(std::stod(rows[0][2]), k.min_ns);
    EXPECT_DOUBLE_EQ(std::stod(rows[0][3]), k.max_ns);
    EXPECT_NEAR(std::stod(rows[0][4]), k.mean_ns, 1e-9);
    EXPECT_EQ(db.integer("SELECT total_calls FROM top_kernels WHERE name = '" + k.name + "'"),
              static_cast<std::int64_t>(k.count));
  }
  EXPECT_EQ(
      db.scalar(
          "SELECT name FROM top_kernels WHERE name NOT LIKE '\\_\\_amd\\_rocclr\\_%' ESCAPE '\\' "
          "LIMIT 1"),
      s.kernels.front().name);
  EXPECT_EQ(db.integer("SELECT COUNT(*) FROM memory_copies"), 3);
  EXPECT_EQ(db.integer("SELECT COUNT(*) FROM regions WHERE name = 'hipLaunchKernel'"),
            static_cast<std::int64_t>(trace_.first_dispatches));
}

TEST_F(stages_rocpd_analysis, repeated_runs_of_the_same_trace_are_stable) {
  std::vector<runtime_summary> runs;
  for (int i = 0; i < 3; ++i) {
    runs.push_back(summarize(reader::open({trace_.dir})));
  }
  const run_stability st = across_runs(runs);
  EXPECT_EQ(st.per_run_total_ns.size(), 3u);
  EXPECT_DOUBLE_EQ(st.cv, 0.0);
  EXPECT_EQ(st.stability, stability_class::stable);
}

} // namespace
} // namespace rpl::stages::rocpd
