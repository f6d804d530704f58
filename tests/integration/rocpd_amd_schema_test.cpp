// analyze on databases made as rocprofv3 makes them: AMD's own schema SQL (bench/rocpd_amd/*.sql of
// ROCm 7.0, executed as-is with the UUID substituted), UUID-suffixed tables, AMD's views, no index,
// rows in completion order with the runtime's handles as queue and stream ids and every launch's
// arguments in rocpd_arg (bench/rocpd_amd/rocprofv3_trace.hpp). The report must agree with AMD's
// own kernel_summary view of the same files; the timeline must place every op on its GPU and
// stream and resolve the stream waits through the calls' arguments; a damaged file is bad input.

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "bench/rocpd_amd/rocprofv3_trace.hpp"
#include "stages/analysis/profile_report_builder.hpp"
#include "stages/trace/counter_values.hpp"
#include "stages/trace/rocpd_reader.hpp"
#include "stages/trace/rocpd_timeline.hpp"
#include "support/rocpd_fixtures.hpp"
#include "support/test_support.hpp"

namespace rpl {
namespace {

namespace rocpd = stages::rocpd;
namespace amd = bench::rocpd_amd;
using testing::run_rocm_perf;
using testing::sqlite_db;
using testing::temp_dir;

/// Two processes, one file each: 2 GPUs with 2 streams each, 6 kernels, copies, event records and
/// stream waits, host synchronizations.
amd::trace_shape shape(std::int64_t pid, std::size_t dispatches) {
  amd::trace_shape s;
  s.pid = pid;
  s.seed = static_cast<std::uint64_t>(pid);
  s.dispatches = dispatches;
  s.kernels = 6;
  s.copy_every = 50;
  s.wait_every = 100;
  s.sync_every = 400;
  return s;
}

class rocpd_amd_schema : public ::testing::Test {
protected:
  void SetUp() override {
    const auto sql = testing::source_dir / "bench" / "rocpd_amd";
    uuid_a_ = amd::write_rocprofv3_trace(sql, a_, shape(4242, 1500));
    amd::write_rocprofv3_trace(sql, b_, shape(4243, 1000));
  }

  /// AMD's kernel_summary over both files, merged by name: calls, total, min, max (ns).
  std::map<std::string, std::array<double, 4>> amd_summary() const {
    std::map<std::string, std::array<double, 4>> out;
    for (const auto& file : {a_, b_}) {
      sqlite_db db(file);
      for (const auto& r : db.rows("SELECT name, calls, \"DURATION (nsec)\", \"MIN (nsec)\", "
                                   "\"MAX (nsec)\" FROM kernel_summary")) {
        auto [it, added] = out.try_emplace(r[0], std::array<double, 4>{0, 0, 1e300, 0});
        it->second[0] += std::stod(r[1]);
        it->second[1] += std::stod(r[2]);
        it->second[2] = std::min(it->second[2], std::stod(r[3]));
        it->second[3] = std::max(it->second[3], std::stod(r[4]));
      }
    }
    return out;
  }

  temp_dir dir_;
  std::filesystem::path a_ = dir_ / "a.db", b_ = dir_ / "b.db";
  std::string uuid_a_;
};

TEST_F(rocpd_amd_schema, files_carry_amds_schema_as_rocprofv3_writes_it) {
  sqlite_db db(a_);
  std::string suffix = "_" + uuid_a_;
  std::replace(suffix.begin(), suffix.end(), '-', '_');
  // The tables carry the suffix, the pass-through views do not; no index but the tables' own.
  EXPECT_EQ(db.integer("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = "
                       "'rocpd_kernel_dispatch" +
                       suffix + "'"),
            1);
  EXPECT_EQ(db.integer("SELECT COUNT(*) FROM sqlite_master WHERE type = 'view' AND name = "
                       "'rocpd_kernel_dispatch'"),
            1);
  EXPECT_EQ(db.integer("SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND sql IS NOT "
                       "NULL"),
            0);
  EXPECT_EQ(db.scalar("SELECT value FROM rocpd_metadata WHERE tag = 'uuid'"), suffix);
  EXPECT_EQ(db.scalar("SELECT value FROM rocpd_metadata WHERE tag = 'guid'"), uuid_a_);
  EXPECT_EQ(db.scalar("SELECT DISTINCT guid FROM rocpd_kernel_dispatch"), uuid_a_);
  // AMD's views join every dispatch: its event, region name, symbol, queue, process and thread.
  EXPECT_EQ(db.integer("SELECT COUNT(*) FROM kernels"), 1500);
  EXPECT_EQ(db.integer("SELECT SUM(calls) FROM kernel_summary"), 1500);
  EXPECT_GT(db.integer("SELECT COUNT(*) FROM memory_copies"), 0);
  // Each launch's six arguments, as the HIP API trace records them.
  EXPECT_EQ(db.integer("SELECT COUNT(*) FROM region_args WHERE id IN (SELECT R.id FROM "
                       "rocpd_region R JOIN rocpd_string S ON S.id = R.name_id WHERE S.string "
                       "= 'hipLaunchKernel')"),
            6 * 1500);
  // Queue and stream ids are the runtime's handles; the table is not in start order.
  EXPECT_GT(db.integer("SELECT MIN(stream_id) FROM rocpd_kernel_dispatch WHERE stream_id > 0"),
            1LL << 40);
  EXPECT_GT(db.integer("SELECT COUNT(*) FROM rocpd_kernel_dispatch K JOIN rocpd_kernel_dispatch "
                       "N ON N.id = K.id + 1 WHERE N.start < K.start"),
            0);
}

TEST_F(rocpd_amd_schema, analyze_json_agrees_with_amds_kernel_summary) {
  const auto run = run_rocm_perf({"analyze", a_.string(), b_.string(), "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto report = nlohmann::json::parse(run.output);
  const auto expected = amd_summary();
  std::map<std::string, nlohmann::json> actual;
  for (const char* list : {"kernels", "helper_kernels"})
    for (const auto& k : report[list])
      actual[k["name"].get<std::string>()] = k;
  ASSERT_EQ(actual.size(), expected.size());
  double calls = 0;
  for (const auto& [name, e] : expected) {
    SCOPED_TRACE(name);
    ASSERT_EQ(actual.count(name), 1u);
    const auto& k = actual[name];
    EXPECT_EQ(k["dispatches"].get<double>(), e[0]);
    EXPECT_NEAR(k["total_ms"].get<double>() * 1e6, e[1], 1e-3);
    EXPECT_NEAR(k["min_ms"].get<double>() * 1e6, e[2], 1e-6);
    EXPECT_NEAR(k["max_ms"].get<double>() * 1e6, e[3], 1e-6);
    EXPECT_NEAR(k["mean_ms"].get<double>() * 1e6, e[1] / e[0], 1e-6);
    // The symbol's resources, kernel arguments included (24 bytes of kernarg segment).
    EXPECT_EQ(k["resources"]["kernarg_bytes"], 24);
    EXPECT_EQ(k["occupancy"]["target"], "gfx942");
    calls += e[0];
  }
  EXPECT_EQ(report["totals"]["dispatches"].get<double>(), calls);
  EXPECT_EQ(calls, 2500);
  EXPECT_EQ(report["per_agent"].size(), 2u); // the two GPUs, both files merged
}

TEST_F(rocpd_amd_schema, timeline_places_ops_per_gpu_and_stream_and_resolves_waits) {
  const rocpd::reader files = rocpd::reader::open({a_, b_});
  const rocpd::timeline t = rocpd::read_timeline(files);
  sqlite_db a(a_), b(b_);
  const auto copies = a.integer("SELECT COUNT(*) FROM rocpd_memory_copy") +
                      b.integer("SELECT COUNT(*) FROM rocpd_memory_copy");
  EXPECT_EQ(t.ops.size(), static_cast<std::size_t>(2500 + copies));
  // Per file, 2 GPUs x 2 streams.
  ASSERT_EQ(t.tracks.size(), 8u);
  std::map<std::string, std::size_t> per_track;
  for (const auto& op : t.ops)
    ++per_track[t.tracks[static_cast<std::size_t>(op.track)].name];
  EXPECT_GT(per_track.count("a.db: GPU 1 (gfx942) / Stream 1"), 0u);
  EXPECT_GT(per_track.count("b.db: GPU 2 (gfx942) / Stream 4"), 0u);
  // Event records and stream waits: their streams come from the calls' `stream` arguments
  // (rocpd_arg, handles as text), their place from the launches' enqueue order.
  std::size_t records = 0, waits = 0;
  for (const auto& s : t.syncs) {
    if (s.kind != rocpd::sync_kind::event_record && s.kind != rocpd::sync_kind::stream_wait_event)
      continue;
    (s.kind == rocpd::sync_kind::event_record ? records : waits)++;
    EXPECT_GE(s.stream_id, 1LL << 40);
    EXPECT_FALSE(s.event.empty());
    EXPECT_TRUE(s.ordered);
  }
  const char* recorded = "SELECT COUNT(*) FROM rocpd_region R JOIN rocpd_string S ON S.id = "
                         "R.name_id WHERE S.string = 'hipEventRecord'";
  EXPECT_EQ(records, static_cast<std::size_t>(a.integer(recorded) + b.integer(recorded)));
  EXPECT_EQ(waits, records);
  EXPECT_GT(records, 20u); // every 100 launches of each GPU's host thread
  EXPECT_EQ(t.by_start.size(), t.ops.size());

  // The report's scan builds the same timeline in the same pass as the accounting, with the
  // copies and synchronization read on the same thread or on a second one.
  for (const bool side_thread : {false, true}) {
    SCOPED_TRACE(side_thread ? "side thread" : "one thread");
    const auto built =
        stages::build_profile_report_and_timeline({{a_, b_}}, {.backend = "rocpd"}, side_thread);
    ASSERT_EQ(built.timeline.ops.size(), t.ops.size());
    for (std::size_t i = 0; i < t.ops.size(); ++i) {
      EXPECT_EQ(built.timeline.ops[i].start_ns, t.ops[i].start_ns);
      EXPECT_EQ(built.timeline.ops[i].track, t.ops[i].track);
      EXPECT_EQ(built.timeline.names[static_cast<std::size_t>(built.timeline.ops[i].name)],
                t.names[static_cast<std::size_t>(t.ops[i].name)]);
    }
    EXPECT_EQ(built.timeline.by_start, t.by_start);
    ASSERT_EQ(built.timeline.syncs.size(), t.syncs.size());
    for (std::size_t i = 0; i < t.syncs.size(); ++i)
      EXPECT_EQ(built.timeline.syncs[i].op, t.syncs[i].op);
  }
}

TEST_F(rocpd_amd_schema, analyze_out_writes_the_four_files_with_the_waits_as_edges) {
  const auto run =
      run_rocm_perf({"analyze", a_.string(), b_.string(), "--out", (dir_ / "out").string()});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  for (const char* file : {"profile.json", "analysis.json", "dag.json", "roofline.json"})
    EXPECT_TRUE(std::filesystem::exists(dir_ / "out" / file)) << file;
  const auto dag = nlohmann::json::parse(testing::read_text(dir_ / "out" / "dag.json"));
  EXPECT_NE(dag["notes"].dump().find("from the event record they wait for"), std::string::npos)
      << dag["notes"].dump();
  EXPECT_GT(dag["edges"].size(), 0u);
}

TEST_F(rocpd_amd_schema, counters_read_in_the_report_scan_agree_with_amds_counters_collection) {
  // Counter passes as rocprofv3 --pmc writes them: 9 counters, the L2 ones a row per instance (4),
  // on every dispatch of one file and every 3rd of the other.
  const auto sql = testing::source_dir / "bench" / "rocpd_amd";
  const auto c = dir_ / "c.db", d = dir_ / "d.db";
  amd::trace_shape every = shape(4244, 600), third = shape(4245, 400);
  every.counter_every = 1;
  third.counter_every = 3;
  amd::write_rocprofv3_trace(sql, c, every);
  amd::write_rocprofv3_trace(sql, d, third);
  // AMD's view: a row per dispatch and counter, its instances summed; per kernel and counter here.
  std::map<std::pair<std::string, std::string>, std::pair<double, double>> expected;
  for (const auto& file : {c, d}) {
    sqlite_db db(file);
    for (const auto& r : db.rows("SELECT kernel_name, counter_name, SUM(value), COUNT(*) FROM "
                                 "counters_collection GROUP BY kernel_name, counter_name")) {
      auto& e = expected[{rocpd::kernel_key(r[0]), r[1]}];
      e.first += std::stod(r[2]);
      e.second += std::stod(r[3]);
    }
  }
  ASSERT_EQ(expected.size(), 6u * 9);
  stages::report_context context;
  context.counter_files = {c, d};
  const auto built = stages::build_profile_report_and_timeline({{c, d}}, context, true);
  ASSERT_TRUE(built.counters);
  std::size_t pairs = 0;
  for (const auto& [key, k] : *built.counters) {
    for (const auto& [name, total] : k.counters) {
      SCOPED_TRACE(key + " " + name);
      ++pairs;
      const auto e = expected.at({key, name});
      EXPECT_EQ(total.sum, e.first);
      EXPECT_EQ(static_cast<double>(total.dispatches), e.second);
    }
  }
  EXPECT_EQ(pairs, expected.size());
  ASSERT_TRUE(built.report.totals);
  EXPECT_EQ(built.report.totals->dispatches, 1000u);
  // compare's entry point reads the same, dispatch by dispatch.
  const auto direct = rocpd::read_kernel_counters({c, d});
  ASSERT_EQ(direct.size(), built.counters->size());
  for (const auto& [key, k] : direct) {
    const auto& scanned = built.counters->at(key);
    EXPECT_EQ(k.dispatches, scanned.dispatches);
    EXPECT_EQ(k.duration_sum_ns, scanned.duration_sum_ns);
    ASSERT_EQ(k.dispatches_by_ordinal.size(), scanned.dispatches_by_ordinal.size());
    for (std::size_t n = 0; n < k.dispatches_by_ordinal.size(); ++n)
      EXPECT_EQ(k.dispatches_by_ordinal[n].counters, scanned.dispatches_by_ordinal[n].counters);
  }
  // Counter files in another order than the scan's: not read there, left to read_kernel_counters.
  context.counter_files = {d, c};
  EXPECT_FALSE(stages::build_profile_report_and_timeline({{c, d}}, context, true).counters);
  // analyze: both files counter passes, their counters from the same pass; all four files.
  const auto run =
      run_rocm_perf({"analyze", c.string(), d.string(), "--out", (dir_ / "out").string()});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  for (const char* file : {"profile.json", "analysis.json", "dag.json", "roofline.json"})
    EXPECT_TRUE(std::filesystem::exists(dir_ / "out" / file)) << file;
}

TEST_F(rocpd_amd_schema, a_damaged_file_is_bad_input_named_with_a_fix) {
  // The last third of the file (the dispatch and copy rows) overwritten with garbage.
  const auto size = std::filesystem::file_size(a_);
  {
    std::fstream f(a_, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size - size / 3));
    const std::string garbage(size / 3, '\xA5');
    f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }
  const auto run = run_rocm_perf({"analyze", a_.string(), b_.string(), "--json"});
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find(a_.string()), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("fix:"), std::string::npos) << run.output;
}

} // namespace
} // namespace rpl
