// rocm-perf compare end to end: two small rocpd traces written with our writer, one where a kernel
// on the critical path is 10 % slower and one off it (on a second stream, in the shadow of a long
// kernel) is 10 % slower too; the real binary must call the first `slower` with a cost on the
// critical path and the second `slower` at ~nothing, validate against its schema, print Markdown,
// trip --fail-on, and refuse bad inputs with exit 2 and a named error.
#include <random>
#include <tuple>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "stages/trace/rocpd_writer.hpp"
#include "support/json_schema.hpp"
#include "support/rocpd_fixtures.hpp"
#include "support/test_support.hpp"

namespace rpl {
namespace {

namespace rocpd = stages::rocpd;
using rpl::testing::run_rocm_perf;
using rpl::testing::temp_dir;

/// A trace of 150 iterations: stream 1 runs long_k (50 us) then scale_k (10 us); stream 2 runs
/// side_k (10 us) beside long_k in the first 100, so side_k has 40 us of slack each time. `scale`
/// and `side` multiply those kernels' durations; `kernels` renames all three (no kernel in common).
void cmp_cli_trace(const std::filesystem::path& path,
                   double scale,
                   double side,
                   std::uint64_t seed,
                   const std::string& prefix = "") {
  std::filesystem::create_directories(path.parent_path());
  rocpd::writer w(path);
  const std::int64_t pid = 4242;
  rpl::testing::add_process_header(w, pid, pid + 1);
  w.add_queue(pid, "Queue 1", 0x10);
  w.add_queue(pid, "Queue 2", 0x20);
  w.add_stream(pid, "Stream 1", 0x100);
  w.add_stream(pid, "Stream 2", 0x200);
  rocpd::code_object_info code_object;
  code_object.id = 1;
  code_object.agent_id = 1;
  w.add_code_object(code_object);
  const char* names[] = {"long_k", "scale_k", "side_k"};
  for (int k = 0; k < 3; ++k)
    rpl::testing::add_symbol(w, k + 1, 1, prefix + names[k]);
  std::mt19937_64 random(seed);
  auto jitter = [&](double ns) {
    return static_cast<std::int64_t>(
        ns * (1.0 + 0.02 * (static_cast<double>(random() % 1001) / 500.0 - 1.0)));
  };
  std::int64_t now = 1'000'000;
  auto dispatch = [&](int kernel, std::int64_t stream, std::int64_t start, std::int64_t ns) {
    rocpd::dispatch_info d;
    d.agent_id = 1;
    d.kernel_id = kernel;
    d.queue_id = stream == 0x100 ? 0x10 : 0x20;
    d.stream_id = stream;
    d.start_ns = start;
    d.end_ns = start + ns;
    d.workgroup = {256, 1, 1};
    d.grid = {65536, 1, 1};
    w.add_dispatch(d);
    return d.end_ns;
  };
  for (int i = 0; i < 150; ++i) {
    const std::int64_t long_end = dispatch(1, 0x100, now, jitter(50'000));
    if (i < 100) // stream 2 ends early: shortening stream 1 shortens the whole path
      dispatch(3, 0x200, now + 100, jitter(10'000 * side));
    now = dispatch(2, 0x100, long_end + 200, jitter(10'000 * scale)) + 200;
  }
  w.commit();
}

struct cmp_cli_files {
  temp_dir dir;
  std::filesystem::path base = dir.path() / "base.db";
  std::filesystem::path next = dir.path() / "new.db";
  cmp_cli_files() {
    cmp_cli_trace(base, 1.0, 1.0, 1);
    cmp_cli_trace(next, 1.1, 1.1, 2);
  }
};

const nlohmann::json* cmp_cli_kernel(const nlohmann::json& doc, const std::string& name) {
  for (const auto& k : doc["kernels"])
    if (k["name"] == name)
      return &k;
  return nullptr;
}

TEST(cli_compare, slower_kernels_on_and_off_the_critical_path) {
  cmp_cli_files files;
  const auto out = run_rocm_perf({"compare", files.base.string(), files.next.string(), "--json"});
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const auto doc = nlohmann::json::parse(out.output);
  EXPECT_EQ(rpl::testing::schema_errors(doc, "compare.schema.json"), std::vector<std::string>{});
  const auto* scale = cmp_cli_kernel(doc, "scale_k");
  const auto* side = cmp_cli_kernel(doc, "side_k");
  const auto* steady = cmp_cli_kernel(doc, "long_k");
  ASSERT_TRUE(scale && side && steady) << doc.dump(1);
  EXPECT_EQ((*scale)["verdict"], "slower") << scale->dump(1);
  EXPECT_GT((*scale)["interval"]["low"].get<double>(), 1.0);
  EXPECT_NEAR((*scale)["ratio"].get<double>(), 1.1, 0.02);
  // On the critical path: 150 launches 1 us longer each.
  EXPECT_NEAR((*scale)["critical_path_effect_ns"].get<double>(), 150'000, 20'000);
  EXPECT_EQ((*side)["verdict"], "slower") << side->dump(1);
  EXPECT_LT((*side)["critical_path_effect_ns"].get<double>(), 1'000);
  EXPECT_NE((*side)["critical_path_note"].get<std::string>().find("~nothing"), std::string::npos);
  EXPECT_EQ((*steady)["verdict"], "same") << steady->dump(1);
  EXPECT_EQ(doc["summary"]["slower"], 2);
  EXPECT_EQ(doc["base"]["runs"], 1);

  // A broken document fails the schema.
  auto broken = doc;
  broken["kernels"][0]["verdict"] = "worse";
  EXPECT_FALSE(rpl::testing::schema_errors(broken, "compare.schema.json").empty());
}

TEST(cli_compare, table_markdown_and_fail_on) {
  cmp_cli_files files;
  const std::string a = files.base.string(), b = files.next.string();
  const auto text = run_rocm_perf({"compare", a, b});
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("slower    scale_k"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("critical path"), std::string::npos) << text.output;
  const auto md = run_rocm_perf({"compare", "--markdown", a, b});
  ASSERT_EQ(md.exit_code, 0) << md.output;
  EXPECT_NE(md.output.find("| **slower** | `scale_k` |"), std::string::npos) << md.output;
  // Slower by more than 5 % at the interval's low end: exit 1, the kernel named.
  const auto tripped = run_rocm_perf({"compare", a, b, "--fail-on", "slower:5%"});
  EXPECT_EQ(tripped.exit_code, 1) << tripped.output;
  EXPECT_NE(tripped.output.find("--fail-on slower:5%: scale_k"), std::string::npos)
      << tripped.output;
  EXPECT_EQ(run_rocm_perf({"compare", a, b, "--fail-on", "slower:25%"}).exit_code, 0);
  // The critical path grew by about 150 us of 9 ms: 1.7 %.
  EXPECT_EQ(run_rocm_perf({"compare", a, b, "--fail-on", "critical-path:1%"}).exit_code, 1);
  EXPECT_EQ(run_rocm_perf({"compare", a, b, "--fail-on", "critical-path:5%"}).exit_code, 0);
  // Two runs per side, as --base/--new: the measured noise joins the band.
  const auto runs =
      run_rocm_perf({"compare", "--base", a, "--base", a, "--new", b, "--new", b, "--json"});
  ASSERT_EQ(runs.exit_code, 0) << runs.output;
  EXPECT_EQ(nlohmann::json::parse(runs.output)["new"]["runs"], 2);
}

TEST(cli_compare, a_profile_out_folder_is_a_side_with_its_runs) {
  cmp_cli_files files;
  const auto dir = files.dir.path() / "profile-out";
  for (int run = 1; run <= 2; ++run)
    cmp_cli_trace(dir / "traces" / ("run-" + std::to_string(run)) / "host" / "4242_results.db", 1.0,
                  1.0, 10 + static_cast<std::uint64_t>(run));
  rpl::testing::write_file(dir / "profile.json", "{}");
  const auto out = run_rocm_perf({"compare", dir.string(), files.next.string(), "--json"});
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const auto doc = nlohmann::json::parse(out.output);
  EXPECT_EQ(doc["base"]["runs"], 2);
  EXPECT_EQ((*cmp_cli_kernel(doc, "scale_k"))["verdict"], "slower");
  EXPECT_EQ((*cmp_cli_kernel(doc, "side_k"))["base_dispatches"], 200); // two runs, pooled
}

TEST(cli_compare, bad_inputs_exit_2_naming_the_input_and_a_fix) {
  cmp_cli_files files;
  const std::string b = files.next.string();
  auto expect_refused = [&](const std::vector<std::string>& args, const std::string& says) {
    const auto out = run_rocm_perf(args);
    EXPECT_EQ(out.exit_code, 2) << out.output;
    EXPECT_NE(out.output.find(says), std::string::npos) << out.output;
    EXPECT_NE(out.output.find("fix:"), std::string::npos) << out.output;
  };
  const auto missing = files.dir.path() / "nope.db";
  expect_refused({"compare", missing.string(), b}, "BASE: " + missing.string() + ": no such file");
  const auto corrupt = files.dir.path() / "corrupt.db";
  rpl::testing::write_file(corrupt, std::string(4096, 'x'));
  expect_refused({"compare", b, corrupt.string()}, "NEW: " + corrupt.string());
  const auto foreign = files.dir.path() / "foreign.db";
  rpl::testing::sqlite_db(foreign).exec("CREATE TABLE t(x)");
  expect_refused({"compare", foreign.string(), b}, "BASE: " + foreign.string());
  const auto store = files.dir.path() / "store.db";
  rpl::testing::sqlite_db(store).exec(
      "CREATE TABLE candidates(x); CREATE TABLE runs(x); CREATE TABLE candidate_intervals(x)");
  expect_refused({"compare", store.string(), b}, "cannot read the results store");
  const auto optimize_out = files.dir.path() / "opt";
  std::filesystem::create_directories(optimize_out / "app-profile");
  rpl::testing::sqlite_db(optimize_out / "optimize.sqlite")
      .exec("CREATE TABLE optimize_targets(x)");
  expect_refused({"compare", optimize_out.string(), b}, "app-profile");
  expect_refused({"compare", b, (optimize_out / "optimize.sqlite").string()}, "an optimize --out");
  const auto other = files.dir.path() / "other.db";
  cmp_cli_trace(other, 1.0, 1.0, 3, "other_");
  expect_refused({"compare", other.string(), b}, "no kernel in common");
  expect_refused({"compare", b, b, "--noise", "lots"}, "--noise lots");
  expect_refused({"compare", b, b, "--fail-on", "worse:5%"}, "--fail-on worse:5%");
  expect_refused({"compare", "--base", b}, "no NEW given");
}

/// tests/fixtures/landscapes/toy.json with 30 samples per configuration (jitter within 0.3 %),
/// one configuration made `slow` times slower: a Kernel Tuner cache file for autotune --recorded.
void landscape_with_samples(const std::filesystem::path& path, double slow, unsigned seed) {
  auto doc = nlohmann::json::parse(
      rpl::testing::read_text(rpl::testing::source_dir / "tests/fixtures/landscapes/toy.json"));
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> jitter(-0.003, 0.003);
  for (auto& [key, entry] : doc["cache"].items()) {
    if (!entry["time"].is_number())
      continue; // a failed configuration stays failed
    const double time = entry["time"].get<double>() * (key == "64,2,1.0" ? slow : 1.0);
    entry["times"] = nlohmann::json::array();
    for (int i = 0; i < 30; ++i)
      entry["times"].push_back(time * (1.0 + jitter(random)));
    entry["time"] = time;
  }
  rpl::testing::write_file(path, doc.dump());
}

TEST(cli_compare, two_autotune_stores_compare_configuration_by_configuration) {
  // Each side the --db of a real autotune run (recorded landscapes: nothing compiled or run).
  temp_dir dir;
  for (const auto& [name, slow, seed] :
       {std::tuple{"base", 1.0, 1u}, std::tuple{"new", 1.10, 2u}}) {
    landscape_with_samples(dir / (std::string(name) + ".json"), slow, seed);
    const auto tuned = run_rocm_perf(
        {"autotune", "--recorded", (dir / (std::string(name) + ".json")).string(), "--db",
         (dir / (std::string(name) + ".db")).string(), "--strategy", "exhaustive", "--json"});
    ASSERT_EQ(tuned.exit_code, 0) << tuned.output;
  }
  const std::string base = (dir / "base.db").string(), next = (dir / "new.db").string();
  const auto out = run_rocm_perf({"compare", base, next, "--json"});
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const auto doc = nlohmann::json::parse(out.output.substr(out.output.find('{')));
  EXPECT_EQ(rpl::testing::schema_errors(doc, "compare.schema.json"), std::vector<std::string>{});
  EXPECT_TRUE(doc["base"]["store_run"].is_string());
  EXPECT_EQ(doc["base"]["dispatches"], 300); // 10 measured configurations x 30 samples
  EXPECT_EQ(doc["summary"]["slower"], 1);
  EXPECT_EQ(doc["summary"]["same"], 9);
  const auto* slow = cmp_cli_kernel(doc, "block_size_x=64 tile=2 unroll=1.0");
  ASSERT_NE(slow, nullptr) << doc.dump(2);
  EXPECT_EQ((*slow)["verdict"], "slower");
  EXPECT_GT((*slow)["interval"]["low"].get<double>(), 1.05);
  EXPECT_LT((*slow)["interval"]["high"].get<double>(), 1.15);
  EXPECT_TRUE(doc["application"]["critical_path_ratio"].is_null());
  EXPECT_NE(doc["notes"].dump().find("NEW's fastest configuration: block_size_x=64 tile=2 "
                                     "unroll=2.5"),
            std::string::npos)
      << doc["notes"].dump();
  // The table names what the rows are; --fail-on slower trips, critical-path is refused.
  const auto table = run_rocm_perf({"compare", base, next});
  EXPECT_NE(table.output.find("(results store, run "), std::string::npos) << table.output;
  EXPECT_EQ(table.output.find("critical path    "), std::string::npos) << table.output;
  EXPECT_EQ(run_rocm_perf({"compare", base, next, "--fail-on", "slower:5%"}).exit_code, 1);
  const auto path_rule = run_rocm_perf({"compare", base, next, "--fail-on", "critical-path:2%"});
  EXPECT_EQ(path_rule.exit_code, 2) << path_rule.output;
  EXPECT_NE(path_rule.output.find("no critical path"), std::string::npos) << path_rule.output;
  // A store against a trace, and a store beside another input on one side: exit 2, named.
  cmp_cli_files files;
  const auto mixed = run_rocm_perf({"compare", base, files.next.string()});
  EXPECT_EQ(mixed.exit_code, 2) << mixed.output;
  EXPECT_NE(mixed.output.find("BASE is a results store and NEW is a trace"), std::string::npos)
      << mixed.output;
  const auto two = run_rocm_perf({"compare", "--base", base, "--base", next, "--new", next});
  EXPECT_EQ(two.exit_code, 2) << two.output;
  EXPECT_NE(two.output.find("a store is a side on its own"), std::string::npos) << two.output;
}

} // namespace
} // namespace rpl
