// The NVIDIA counter pass with a stand-in for ncu (a shell script written here) that runs the
// application for --export and prints a real ncu capture (tests/fixtures/ncu/) for --import: the
// recorder's command lines, its database and its failures, without a GPU. The real ncu is run by
// the gpu tests.
#include <algorithm>

#include <gtest/gtest.h>

#include "stages/trace/rocpd_reader.hpp"
#include "support/test_support.hpp"
#include "workers/tracers/ncu/ncu_counter_recorder.hpp"

namespace rpl::workers {
namespace {

using rpl::testing::temp_dir;

/// A fake ncu: logs its argv, runs the application after the options on --export (writing the
/// report file), and cats `csv` on --import. `export_status` is its exit status for --export.
std::filesystem::path
fake_ncu(const temp_dir& dir, const std::filesystem::path& csv, int export_status = 0) {
  const auto path = dir / "ncu";
  rpl::testing::write_file(path, "#!/bin/sh\necho \"$@\" >> " + (dir / "ncu.log").string() +
                                     "\nif [ \"$1\" = --import ]; then cat '" + csv.string() +
                                     "'; exit 0; fi\n"
                                     "report=''\nwhile [ $# -gt 0 ]; do case \"$1\" in\n"
                                     "  --export) report=$2; shift 2;;\n"
                                     "  --clock-control|--metrics|--launch-count) shift 2;;\n"
                                     "  --force-overwrite) shift;;\n"
                                     "  *) break;;\nesac; done\n"
                                     "\"$@\" || exit $?\necho report > \"$report\"\nexit " +
                                     std::to_string(export_status) + "\n");
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path;
}

const std::filesystem::path capture =
    rpl::testing::source_dir / "tests/fixtures/ncu/gemm_1024_h200_raw.csv";

TEST(workers_ncu_counter_recorder, a_counter_pass_becomes_a_rocpd_database_of_its_launches) {
  temp_dir dir;
  ncu_options options;
  options.executable = fake_ncu(dir, capture);
  options.launch_count = 50;
  ncu_counter_recorder recorder(options);
  const auto run = recorder.record({"true"}, dir / "counters", 1);
  ASSERT_TRUE(run.recorded()) << run.reason;
  ASSERT_EQ(run.databases.size(), 1u);
  EXPECT_EQ(run.databases[0].filename(), "ncu_counters.db");
  const auto reader = stages::rocpd::reader::open(run.databases);
  EXPECT_EQ(reader.dispatch_count(), 4u);
  const std::string log = rpl::testing::read_text(dir / "ncu.log");
  // Clocks left alone, the roofline metrics asked for, the launch limit passed, the report read
  // back as the raw CSV page.
  EXPECT_NE(log.find("--clock-control none --export " + (dir / "counters").string() +
                     "/ncu_counters.ncu-rep --force-overwrite --metrics gpu__time_duration.sum,"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("--launch-count 50 true"), std::string::npos) << log;
  EXPECT_NE(log.find("--import " + (dir / "counters").string() +
                     "/ncu_counters.ncu-rep --csv --page raw --print-units base"),
            std::string::npos)
      << log;
}

TEST(workers_ncu_counter_recorder, a_failing_ncu_or_an_empty_report_says_so) {
  temp_dir dir;
  ncu_options options;
  options.executable = fake_ncu(dir, capture, 3);
  const auto failed = ncu_counter_recorder(options).record({"true"}, dir / "a", 1);
  EXPECT_EQ(failed.status, record_status::run_failed);
  EXPECT_NE(failed.reason.find("ncu exited with status 3; fix: run with --debug"),
            std::string::npos)
      << failed.reason;

  rpl::testing::write_file(dir / "empty.csv", "\"ID\",\"Kernel Name\"\n\"\",\"\"\n");
  options.executable = fake_ncu(dir, dir / "empty.csv");
  const auto none = ncu_counter_recorder(options).record({"true"}, dir / "b", 1);
  EXPECT_EQ(none.status, record_status::no_trace);
  EXPECT_NE(none.reason.find("ncu profiled no kernel launch"), std::string::npos);

  rpl::testing::write_file(dir / "garbage.csv", "not a csv at all\n");
  options.executable = fake_ncu(dir, dir / "garbage.csv");
  const auto garbage = ncu_counter_recorder(options).record({"true"}, dir / "c", 1);
  EXPECT_EQ(garbage.status, record_status::run_failed);
  EXPECT_NE(garbage.reason.find("no ncu raw CSV header"), std::string::npos) << garbage.reason;

  // The application's own failure is the run's failure.
  options.executable = fake_ncu(dir, capture);
  const auto app = ncu_counter_recorder(options).record({"false"}, dir / "d", 1);
  EXPECT_EQ(app.status, record_status::run_failed);
}

TEST(workers_ncu_counter_recorder, asks_for_hoppers_wgmma_paths_only_on_sm_90) {
  auto has_hgmma = [](const std::vector<std::string>& metrics) {
    return std::any_of(metrics.begin(), metrics.end(),
                       [](const std::string& m) { return m.find("_hgmma_") != m.npos; });
  };
  EXPECT_TRUE(has_hgmma(ncu_roofline_metrics("sm_90")));
  EXPECT_FALSE(has_hgmma(ncu_roofline_metrics("sm_80")));
  EXPECT_EQ(ncu_roofline_metrics("sm_80").size() + 3, ncu_roofline_metrics("sm_90").size());
}

TEST(workers_ncu_counter_recorder, finds_ncu_by_option_then_environment) {
  EXPECT_EQ(find_ncu("/opt/x/ncu"), std::filesystem::path("/opt/x/ncu"));
  ::setenv("NCU", "/opt/y/ncu", 1);
  EXPECT_EQ(find_ncu(""), std::filesystem::path("/opt/y/ncu"));
  ::unsetenv("NCU");
}

} // namespace
} // namespace rpl::workers
