#include <algorithm>
#include <signal.h>
#include <sys/socket.h>

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>

#include "support/json_schema.hpp"
#include "support/test_support.hpp"
#include "workers/devices/nvidia_gpu.hpp"

namespace rpl {
namespace {

using namespace std::chrono_literals;
using rpl::testing::fixture;
using rpl::testing::free_port;
using rpl::testing::query_int;
using rpl::testing::run_rocm_perf;
using rpl::testing::temp_dir;

std::vector<std::string> autotune_args(const std::filesystem::path& space,
                                       const std::filesystem::path& db) {
  return {"autotune",
          "--space",
          space.string(),
          "--source",
          fixture("candidate.cpp").string(),
          "--build-template",
          rpl::testing::fixture_build_template,
          "--cmd-template",
          "{BIN}",
          "--runs",
          "3",
          "--warmup",
          "1",
          "--timeout",
          "1",
          "--compile-workers",
          "2",
          "--heartbeat-ms",
          "100",
          "--db",
          db.string()};
}

std::vector<std::string> schema_errors(const nlohmann::json& document) {
  return rpl::testing::schema_errors(document, "autotune.schema.json");
}

TEST(cli, prints_its_version) {
  const auto out = run_rocm_perf({"--version"});
  EXPECT_EQ(out.exit_code, 0);
  EXPECT_NE(out.output.find("rocm-perf 0."), std::string::npos) << out.output;
}

TEST(cli, autotune_json_matches_its_schema_and_names_the_winner) {
  temp_dir dir;
  auto args = autotune_args(fixture("space-small.json"), dir / "r.db");
  args.push_back("--json");
  const auto out = run_rocm_perf(args);
  ASSERT_EQ(out.exit_code, 0) << out.output;
  // --json keeps stdout pure JSON; logs go to stderr, which run_rocm_perf merges: take the object.
  const auto start = out.output.find("{\n");
  ASSERT_NE(start, std::string::npos) << out.output;
  const auto doc = nlohmann::json::parse(out.output.substr(start));
  EXPECT_EQ(schema_errors(doc), std::vector<std::string>{});
  EXPECT_EQ(doc["schema_version"], "1.6");
  EXPECT_EQ(doc["status"], "finished");
  ASSERT_TRUE(doc["winner"].is_object());
  EXPECT_EQ(doc["winner"]["params"]["MODE"], 0);
  EXPECT_EQ(doc["winner"]["params"]["SLEEP_US"], 1000);
  EXPECT_EQ(doc["counts"]["failed"], 4);
  EXPECT_GE(doc["broker"]["workers_seen"], 1);
  EXPECT_EQ(doc["broker"]["unknown_replies"], 0);
  // The two valid candidates (1 ms and 20 ms) went through the final round; the winner leads its
  // tie set (a loaded machine may tie them: the noise decides, not this test).
  ASSERT_TRUE(doc["final_round"].is_object()) << doc["winner_note"];
  EXPECT_EQ(doc["final_round"]["finalists"].size(), 2u);
  EXPECT_EQ(doc["final_round"]["winner"], doc["winner"]["key"]);
  EXPECT_EQ(doc["final_round"]["tie_set"][0], doc["winner"]["key"]);
  EXPECT_EQ(doc["backend"], "timing");
  EXPECT_TRUE(doc["noise_target"].is_null());
  EXPECT_EQ(doc["candidates"].size(), 6u);
  // The pipeline report: one lane, busy for part of its window, and the wall against its bound.
  const auto& pipeline = doc["pipeline"];
  ASSERT_EQ(pipeline["lanes"].size(), 1u);
  EXPECT_GE(pipeline["lanes"][0]["measurements"], 2u + 2u * 10u) << "2 candidates, 10 rounds of 2";
  EXPECT_GT(pipeline["lanes"][0]["busy_fraction"], 0.0);
  EXPECT_LE(pipeline["lanes"][0]["busy_fraction"], 1.0);
  EXPECT_GT(pipeline["lane_bound_s"], 0.0);
  EXPECT_GE(pipeline["bound_ratio"], 1.0) << "the wall cannot beat the busiest resource";

  // A document that breaks the schema is caught (the check can fail).
  auto broken = doc;
  broken["counts"]["failed"] = "four";
  EXPECT_FALSE(schema_errors(broken).empty());
}

TEST(cli, a_re_tune_measures_the_earlier_runs_fastest_first) {
  // Space order puts the 40 ms configuration first; the second run in the same database starts
  // from the first run's fastest, and says which run ordered it. (The first run's stored
  // order is the order its compiles finished in; warm runs answer builds from the cache in the
  // order they were proposed.)
  temp_dir dir;
  rpl::testing::write_file(dir / "space.json",
                           R"({"params": {"MODE": [0], "SLEEP_US": [40000, 12000, 1000]}})");
  auto args = autotune_args(dir / "space.json", dir / "p.db");
  // One candidate in flight: the measured order is the proposed one (with more, whichever build
  // reaches an idle lane first goes first; engine_lane_worker tests the lane's own ordering).
  for (const char* extra : {"--json", "--finalists", "0", "--max-in-flight", "1"})
    args.emplace_back(extra);
  auto run = [&](const std::vector<std::string>& a) {
    const auto out = run_rocm_perf(a);
    EXPECT_EQ(out.exit_code, 0) << out.output;
    const auto start = out.output.find("{\n");
    return start == std::string::npos ? nlohmann::json()
                                      : nlohmann::json::parse(out.output.substr(start));
  };
  const auto first = run(args);
  ASSERT_TRUE(first.is_object());
  EXPECT_TRUE(first["order"]["prior_run"].is_null()) << "nothing earlier: space order";
  const auto second = run(args);
  ASSERT_TRUE(second.is_object());
  EXPECT_EQ(schema_errors(second), std::vector<std::string>{});
  EXPECT_EQ(second["order"]["prior_run"], first["run_id"]);
  EXPECT_EQ(second["order"]["prior_known"], 3);
  ASSERT_EQ(second["candidates"].size(), 3u);
  // In the first run's order of medians (its measurements, whatever the machine's noise made of
  // them), which the warm run keeps: its builds come from the cache in the order proposed.
  std::vector<std::pair<double, std::string>> by_median;
  for (const auto& c : first["candidates"])
    by_median.emplace_back(c["stats"]["median_ns"].get<double>(), c["key"].get<std::string>());
  std::sort(by_median.begin(), by_median.end());
  ASSERT_EQ(by_median.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_EQ(second["candidates"][i]["key"], by_median[i].second) << second["candidates"].dump();

  args.emplace_back("--no-prior-order");
  const auto third = run(args);
  ASSERT_TRUE(third.is_object());
  EXPECT_TRUE(third["order"]["prior_run"].is_null());
  EXPECT_EQ(third["candidates"][0]["params"]["SLEEP_US"], 40000);
}

TEST(cli, the_model_strategy_spends_its_whole_budget_through_the_graph) {
  // Past its seed sample the model holds proposals to lanes + 1 awaiting results (the graph then
  // holds fewer); failures (MODE 3 exits 3) come back as results too, so it never waits for
  // nothing and the whole budget is measured.
  temp_dir dir;
  rpl::testing::write_file(dir / "space.json",
                           R"({"params": {"MODE": [0, 3], "SLEEP_US": [1000, 2000, 4000, 8000,
                               16000], "X": [0, 1]}, "constraints": []})");
  auto args = autotune_args(dir / "space.json", dir / "m.db");
  for (const char* extra : {"--strategy", "model", "--budget", "14", "--seed", "1", "--json"})
    args.emplace_back(extra);
  const auto out = run_rocm_perf(args);
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const auto doc = nlohmann::json::parse(out.output.substr(out.output.find("{\n")));
  EXPECT_EQ(schema_errors(doc), std::vector<std::string>{});
  EXPECT_EQ(doc["status"], "finished");
  EXPECT_EQ(doc["counts"]["completed"], 14);
  EXPECT_EQ(doc["candidates"].size(), 14u);
  EXPECT_EQ(doc["model"]["seed_size"], 6); // twice the 3 linear features
  EXPECT_TRUE(doc["model"]["converged"].is_boolean());
  ASSERT_TRUE(doc["winner"].is_object());
  EXPECT_EQ(doc["winner"]["params"]["MODE"], 0);
}

TEST(cli, plain_output_has_a_table_and_the_winner_and_quiet_prints_only_the_runtime) {
  temp_dir dir;
  // Differences far outside any plausible noise band (tests run in parallel on 2 cores): the
  // acceptance rule rightly refuses to name a winner inside the noise.
  rpl::testing::write_file(dir / "space.json",
                           R"({"params": {"MODE": [0], "SLEEP_US": [30000, 1000, 60000]}})");
  const auto out = run_rocm_perf(autotune_args(dir / "space.json", dir / "r.db"));
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_NE(out.output.find("median ms"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("winner: MODE=0 SLEEP_US=1000"), std::string::npos) << out.output;

  auto args = autotune_args(dir / "space.json", dir / "q.db");
  args.push_back("--quiet");
  workers::child_options options;
  options.argv = {rpl::testing::rocm_perf.string()};
  options.argv.insert(options.argv.end(), args.begin(), args.end());
  // Standard output alone: warnings still go to stderr (on a loaded host, "waiting for a compile
  // worker" while the local workers start).
  options.capture_stderr = false;
  const auto quiet = workers::run_child(options, 5min);
  ASSERT_EQ(quiet.exit_code, 0) << quiet.output;
  const double ms = std::stod(quiet.output);
  EXPECT_GT(ms, 1.0);
  EXPECT_LT(ms, 1000.0);
  EXPECT_EQ(quiet.output.find_first_not_of("0123456789.\n"), std::string::npos) << quiet.output;
}

struct bad_input {
  std::string name;
  std::vector<std::string> replace;  // flag, value
  std::vector<std::string> expected; // substrings of the error
};

void PrintTo(const bad_input& input, std::ostream* out) {
  *out << input.name;
}

class cli_bad_input : public ::testing::TestWithParam<bad_input> {};

TEST_P(cli_bad_input, exits_2_naming_the_input_and_a_fix_and_writes_no_run) {
  temp_dir dir;
  const auto db = dir / "r.db";
  auto args = autotune_args(fixture("space-ok.json"), db);
  const auto& p = GetParam();
  for (std::size_t i = 0; i + 1 < p.replace.size(); i += 2) {
    auto it = std::find(args.begin(), args.end(), p.replace[i]);
    ASSERT_NE(it, args.end());
    *(it + 1) = p.replace[i + 1];
  }
  const auto out = run_rocm_perf(args);
  EXPECT_EQ(out.exit_code, 2) << out.output;
  for (const auto& text : p.expected) {
    EXPECT_NE(out.output.find(text), std::string::npos) << "missing '" << text << "' in:\n"
                                                        << out.output;
  }
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM runs"), 0);
}

INSTANTIATE_TEST_SUITE_P(
    inputs,
    cli_bad_input,
    ::testing::Values(
        bad_input{"json_syntax",
                  {"--space", fixture("bad/syntax.json").string()},
                  {"syntax.json", "fix"}},
        bad_input{"unknown_parameter",
                  {"--space", fixture("bad/unknown-param.json").string()},
                  {"unknown-param.json", "constraints[", "fix"}},
        bad_input{"constraint_syntax",
                  {"--space", fixture("bad/constraint-syntax.json").string()},
                  {"constraint-syntax.json", "column", "fix"}},
        bad_input{"empty_after_constraints",
                  {"--space", fixture("bad/empty-after-constraints.json").string()},
                  {"empty-after-constraints.json", "fix"}},
        bad_input{"empty_params",
                  {"--space", fixture("bad/empty-params.json").string()},
                  {"empty-params.json", "fix"}},
        bad_input{
            "missing_space", {"--space", "/nonexistent/space.json"}, {"/nonexistent/space.json"}},
        bad_input{"missing_source",
                  {"--source", "/nonexistent/k.cpp"},
                  {"--source", "/nonexistent/k.cpp", "fix"}},
        bad_input{"unknown_placeholder",
                  {"--cmd-template", "{BIN} --tile {TILEX}"},
                  {"--cmd-template", "{TILEX}", "fix"}},
        bad_input{"compiler_not_allowed",
                  {"--build-template", "sh -c 'cc candidate.cpp -o {OUT}' {MODE} {SLEEP_US}"},
                  {"'sh' is not allow-listed", "--allow-compiler"}},
        bad_input{"zero_runs", {"--runs", "0"}, {"--runs", "fix"}}),
    [](const auto& test_info) { return test_info.param.name; });

TEST(cli, an_engine_killed_mid_sweep_resumes_without_remeasuring_and_leaves_no_worker) {
  temp_dir dir;
  const auto db = dir / "r.db";
  std::string space = R"({"params": {"MODE": [0], "SLEEP_US": [)";
  for (int i = 0; i < 12; ++i) {
    space += (i ? ", " : "") + std::to_string(20000 + i);
  }
  space += "]}}";
  rpl::testing::write_file(dir / "space.json", space);
  auto args = autotune_args(dir / "space.json", db);

  workers::child_options options;
  options.argv = {rpl::testing::rocm_perf.string()};
  options.argv.insert(options.argv.end(), args.begin(), args.end());
  options.capture_output = false;
  auto engine = workers::child_process::spawn(options);
  ASSERT_TRUE(engine.launched());
  ASSERT_TRUE(rpl::testing::wait_until(
      [&] { return query_int(db, "SELECT COUNT(*) FROM candidates") >= 3; }, 60s));
  const auto workers = rpl::testing::children_of(engine.pid(), "worker compile");
  ASSERT_FALSE(workers.empty());
  ::kill(engine.pid(), SIGKILL);
  const auto outcome = engine.finish();
  EXPECT_EQ(outcome.term_signal, SIGKILL);

  // The parent-death signal takes the workers down with the engine.
  EXPECT_TRUE(rpl::testing::wait_until(
      [&] { return std::none_of(workers.begin(), workers.end(), rpl::testing::process_alive); },
      5s));

  const auto done_before = query_int(db, "SELECT COUNT(*) FROM candidates");
  ASSERT_GE(done_before, 3);
  ASSERT_LT(done_before, 12) << "the sweep finished before the kill; the test proves nothing";
  const auto samples_before = rpl::testing::query_texts(
      db, "SELECT key || ':' || sample_index || ':' || duration_ns FROM measurements ORDER BY 1");

  args.push_back("--resume");
  args.push_back("--json");
  const auto resumed = run_rocm_perf(args);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const auto doc = nlohmann::json::parse(resumed.output.substr(resumed.output.find("{\n")));
  EXPECT_EQ(doc["counts"]["resumed"], done_before);
  EXPECT_EQ(doc["counts"]["completed"], 12 - done_before);
  EXPECT_EQ(doc["candidates"].size(), 12u);
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM runs"), 1);
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM measurements"), 36);
  // Every sample of the first session is still there, unchanged.
  const auto samples_after = rpl::testing::query_texts(
      db, "SELECT key || ':' || sample_index || ':' || duration_ns FROM measurements ORDER BY 1");
  for (const auto& sample : samples_before) {
    EXPECT_NE(std::find(samples_after.begin(), samples_after.end(), sample), samples_after.end())
        << sample;
  }
}

TEST(cli, workers_on_other_hosts_connect_over_tcp_and_do_every_compile) {
  temp_dir dir;
  const auto db = dir / "r.db";
  const auto endpoint = "tcp://127.0.0.1:" + std::to_string(free_port());
  auto args = autotune_args(fixture("space-ok.json"), db);
  *(std::find(args.begin(), args.end(), "--compile-workers") + 1) = "0";
  args.insert(args.end(), {"--insecure", "--listen", endpoint});

  workers::child_options engine_options;
  engine_options.argv = {rpl::testing::rocm_perf.string()};
  engine_options.argv.insert(engine_options.argv.end(), args.begin(), args.end());
  auto engine = workers::child_process::spawn(engine_options);
  ASSERT_TRUE(engine.launched());

  std::vector<workers::child_process> remote;
  for (int i = 0; i < 2; ++i) {
    workers::child_options worker_options;
    worker_options.argv = {rpl::testing::rocm_perf.string(),
                           "worker",
                           "compile",
                           "--connect",
                           endpoint,
                           "--heartbeat-ms",
                           "100",
                           "--insecure"};
    worker_options.capture_output = false;
    remote.push_back(workers::child_process::spawn(worker_options));
    ASSERT_TRUE(remote.back().launched());
  }
  const auto outcome = engine.finish();
  ASSERT_EQ(outcome.exit_code, 0) << outcome.output;
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM candidates WHERE status='ok'"), 4);
  // Every compile was done by one of the two remote workers, named host:pid.
  const auto worker_ids = rpl::testing::query_texts(db, "SELECT DISTINCT worker_id FROM artifacts");
  ASSERT_FALSE(worker_ids.empty());
  for (const auto& id : worker_ids) {
    const auto pid = std::stoi(id.substr(id.rfind(':') + 1));
    EXPECT_TRUE(pid == remote[0].pid() || pid == remote[1].pid()) << id;
  }
  // Remote workers outlive the engine (they wait for the next one) and stop cleanly on SIGTERM.
  for (auto& worker : remote) {
    EXPECT_TRUE(rpl::testing::process_alive(worker.pid()));
    ::kill(worker.pid(), SIGTERM);
    const auto stopped = worker.finish();
    EXPECT_EQ(stopped.exit_code, 0);
  }
}

TEST(cli, resume_without_a_matching_run_is_an_error) {
  temp_dir dir;
  auto args = autotune_args(fixture("space-ok.json"), dir / "r.db");
  args.push_back("--resume");
  const auto out = run_rocm_perf(args);
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_NE(out.output.find("--resume"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("fix:"), std::string::npos) << out.output;
}

TEST(cli, a_timing_run_without_a_cmd_template_exits_2_naming_it_with_a_fix) {
  temp_dir dir;
  const auto db = dir / "r.db";
  auto args = autotune_args(fixture("space-ok.json"), db);
  const auto flag = std::find(args.begin(), args.end(), "--cmd-template");
  args.erase(flag, flag + 2);
  const auto out = run_rocm_perf(args);
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("--cmd-template is required: the timing backend runs each built "
                            "candidate as a command; fix: pass --cmd-template '{BIN} ARGS'"),
            std::string::npos)
      << out.output;
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM runs"), 0);
}

// examples/cuda/README.md's kernel-lane command as printed, with no --cmd-template: every input is
// read and checked (templates, sources, compilers, strategy, launch file), and only then does the
// lane find no GPU here: exit 2 naming --launch, never --cmd-template; nothing is built or stored.
TEST(cli, a_launch_run_needs_no_cmd_template) {
  if (workers::nvidia_gpu_present())
    GTEST_SKIP() << "this host has an NVIDIA GPU: the command would sweep 183 GEMM candidates "
                    "(tests/gpu/ cover the kernel lane)";
  temp_dir dir;
  const auto db = dir / "r.db";
  const auto cuda = rpl::testing::source_dir / "examples" / "cuda";
  const auto out = run_rocm_perf(
      {"autotune", "--space", (cuda / "space.json").string(), "--source",
       (cuda / "gemm.cu").string(), "--launch", (cuda / "gemm.launch.json").string(),
       "--build-template",
       "nvcc -cubin -arch=sm_90 -DTILE_M={TILE_M} -DTILE_N={TILE_N} -DTILE_K={TILE_K} "
       "-DTHREAD_M={THREAD_M} -DTHREAD_N={THREAD_N} gemm.cu -o {OUT}",
       "--db", db.string()});
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("rocm-perf autotune: error: --launch: no NVIDIA GPU found (no "
                            "/dev/nvidia0, or nvidia-smi lists none); fix: run on a GPU host"),
            std::string::npos)
      << out.output;
  EXPECT_EQ(out.output.find("--cmd-template"), std::string::npos) << out.output;
  EXPECT_FALSE(std::filesystem::exists(db));
}

} // namespace
} // namespace rpl
