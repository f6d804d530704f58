#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <stdlib.h>

#include "stages/sqlite/sqlite_statement.hpp"
#include "support/hip_code_object.hpp"
#include "support/json_schema.hpp"
#include "support/rocpd_fixtures.hpp"
#include "support/scoped_env.hpp"
#include "support/test_support.hpp"

namespace rpl {
namespace {

using namespace std::chrono_literals;
using rpl::testing::run_rocm_perf;
using rpl::testing::scoped_env;
using rpl::testing::temp_dir;

const std::string fake_rocprofv3 = RPL_FAKE_ROCPROFV3;

std::vector<std::string> validate(const nlohmann::json& document, const std::string& schema_file) {
  return rpl::testing::schema_errors(document, schema_file);
}

nlohmann::json parse_json_output(const std::string& output) {
  const auto start = output.find("{\n");
  if (start == std::string::npos) {
    ADD_FAILURE() << "no JSON in:\n" << output;
    return {};
  }
  return nlohmann::json::parse(output.substr(start));
}

const nlohmann::json& kernel_named(const nlohmann::json& kernels, const std::string& prefix) {
  for (const auto& k : kernels) {
    if (k["name"].get<std::string>().rfind(prefix, 0) == 0) {
      return k;
    }
  }
  throw std::runtime_error("no kernel " + prefix);
}

TEST(cli_profile, rocm_backend_json_has_every_kernel_with_stability_resources_and_occupancy) {
  temp_dir dir;
  const auto out = run_rocm_perf({"profile", "--rocprofv3", fake_rocprofv3, "--runs", "3", "--json",
                                  "--out", (dir / "out").string(), "--", "/bin/true"});
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const auto doc = parse_json_output(out.output);
  EXPECT_EQ(validate(doc, "profile.schema.json"), std::vector<std::string>{});
  EXPECT_EQ(doc["backend"], "rocm");
  EXPECT_EQ(doc["stability"]["runs"], 3);
  EXPECT_EQ(doc["stability"]["per_run_ms"].size(), 3u);
  ASSERT_EQ(doc["kernels"].size(), 2u);
  ASSERT_EQ(doc["helper_kernels"].size(), 1u);
  const auto& gemm = kernel_named(doc["kernels"], "gemm_tile");
  EXPECT_EQ(gemm["dispatches"], 30);
  EXPECT_EQ(gemm["block"], nlohmann::json({256, 1, 1}));
  EXPECT_EQ(gemm["resources"]["vgpr"], 128);
  EXPECT_EQ(gemm["resources"]["lds_bytes"], 16384);
  // gfx90a: 128 VGPRs → 512/128 = 4 waves per SIMD of 8; but the dispatches carry 16 KiB static +
  // 16 KiB dynamic LDS per 4-wave workgroup → 64 KiB / 32 KiB = 2 workgroups per CU = 8 waves per
  // CU = 2 waves per SIMD: LDS limits, and only the dispatch's LDS (not the symbol's) shows it.
  EXPECT_EQ(gemm["occupancy"]["target"], "gfx90a");
  EXPECT_EQ(gemm["occupancy"]["active"], 2);
  EXPECT_EQ(gemm["occupancy"]["max"], 8);
  EXPECT_EQ(gemm["occupancy"]["limiter"], "lds");
  EXPECT_DOUBLE_EQ(gemm["occupancy"]["theoretical"].get<double>(), 0.25);
  EXPECT_EQ(doc["dominant_kernel"], gemm["name"]);
  EXPECT_EQ(doc["kernel"]["name"], gemm["name"]);
  EXPECT_EQ(doc["helper_kernels"][0]["name"], "__amd_rocclr_fillBufferAligned");
  // runtime_ms is the median per-run total of user kernels; each run is about 4.5 ms here.
  EXPECT_NEAR(doc["runtime_ms"].get<double>(), 4.5, 0.2);
  EXPECT_TRUE(std::filesystem::exists(dir / "out" / "profile.json"));
  EXPECT_EQ(nlohmann::json::parse(rpl::testing::read_text(dir / "out" / "profile.json")), doc);

  // A broken document fails the schema (the check can fail).
  auto broken = doc;
  broken["stability"]["classification"] = "fine";
  EXPECT_FALSE(validate(broken, "profile.schema.json").empty());
}

TEST(cli_profile, analyze_on_the_recorded_databases_matches_sql_over_the_same_files) {
  temp_dir dir;
  const auto profiled = run_rocm_perf({"profile", "--rocprofv3", fake_rocprofv3, "--runs", "2",
                                       "--out", (dir / "out").string(), "--", "/bin/true"});
  ASSERT_EQ(profiled.exit_code, 0) << profiled.output;
  const auto traces = dir / "out" / "traces";
  const auto out = run_rocm_perf({"analyze", "--json", traces.string()});
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const auto doc = parse_json_output(out.output);
  EXPECT_EQ(validate(doc, "profile.schema.json"), std::vector<std::string>{});
  EXPECT_EQ(doc["backend"], "rocpd");
  ASSERT_EQ(doc["databases"].size(), 2u);
  // The same aggregates, in SQL, over the same files.
  std::map<std::string, std::pair<long long, long long>> expected; // name → count, sum
  for (const auto& db : doc["databases"]) {
    const stages::sqlite::connection connection(db.get<std::string>(), SQLITE_OPEN_READONLY);
    stages::sqlite::statement query(
        connection, "SELECT name, COUNT(*), SUM(\"end\" - start) FROM kernels GROUP BY name");
    while (query.step()) {
      auto& e = expected[query.column_text(0)];
      e.first += query.column_int64(1);
      e.second += query.column_int64(2);
    }
  }
  ASSERT_EQ(expected.size(), 3u);
  for (const auto* list : {&doc["kernels"], &doc["helper_kernels"]}) {
    for (const auto& k : *list) {
      const auto& e = expected.at(k["name"].get<std::string>());
      EXPECT_EQ(k["dispatches"].get<long long>(), e.first) << k["name"];
      EXPECT_NEAR(k["total_ms"].get<double>(), static_cast<double>(e.second) / 1e6, 1e-9)
          << k["name"];
    }
  }
  // --per-run: each folder is one run.
  const auto per_run = run_rocm_perf(
      {"analyze", "--per-run", "--json", (traces / "run-1").string(), (traces / "run-2").string()});
  ASSERT_EQ(per_run.exit_code, 0) << per_run.output;
  EXPECT_EQ(parse_json_output(per_run.output)["stability"]["runs"], 2);
}

TEST(cli_profile, quiet_prints_only_the_runtime) {
  workers::child_options options;
  options.argv = {rpl::testing::rocm_perf.string(),
                  "profile",
                  "--rocprofv3",
                  fake_rocprofv3,
                  "--runs",
                  "2",
                  "--quiet",
                  "--",
                  "/bin/true"};
  options.max_output_bytes = 1 << 20;
  const auto out = workers::run_child(options, 2min);
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_EQ(out.output.find_first_not_of("0123456789.\n"), std::string::npos) << out.output;
  EXPECT_NEAR(std::stod(out.output), 4.5, 0.2);
}

TEST(cli_profile, a_missing_rocprofv3_is_named_with_the_no_rocprof_fix) {
  scoped_env path("PATH", "/usr/bin:/bin");
  scoped_env tool("ROCPROFV3", nullptr);
  const auto out = run_rocm_perf({"profile", "--", "/bin/true"});
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_NE(out.output.find("rocprofv3 not found"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("--no-rocprof"), std::string::npos) << out.output;
}

TEST(cli_profile, no_rocprof_times_whole_processes_and_says_so) {
  const auto out =
      run_rocm_perf({"profile", "--no-rocprof", "--runs", "3", "--json", "--", "/bin/true"});
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const auto doc = parse_json_output(out.output);
  EXPECT_EQ(validate(doc, "profile.schema.json"), std::vector<std::string>{});
  EXPECT_EQ(doc["backend"], "timing");
  EXPECT_NE(doc["note"].get<std::string>().find("whole-process"), std::string::npos);
  EXPECT_EQ(doc["stability"]["per_run_ms"].size(), 3u);
  EXPECT_TRUE(doc["kernels"].empty());
}

TEST(cli_profile, a_failing_tracer_or_application_is_an_error_naming_the_run) {
  {
    scoped_env fail("FAKE_ROCPROF_FAIL", "1");
    const auto out = run_rocm_perf({"profile", "--rocprofv3", fake_rocprofv3, "--", "/bin/true"});
    EXPECT_EQ(out.exit_code, 1);
    EXPECT_NE(out.output.find("run 1: rocprofv3 exited with status 1"), std::string::npos)
        << out.output;
    EXPECT_NE(out.output.find("--debug"), std::string::npos) << out.output;
  }
  const auto out = run_rocm_perf({"profile", "--rocprofv3", fake_rocprofv3, "--", "/bin/false"});
  EXPECT_EQ(out.exit_code, 1) << out.output;
}

/// A tracer's database marked with `state` (and `signal`), as the CUPTI tracer leaves it when its
/// process dies: `path` holds 30 dispatches of two kernels.
void write_marked_trace(const std::filesystem::path& path,
                        const std::string& state,
                        const std::string& signal = {}) {
  const std::string guid = "0197abcd-1234-7abc-8def-0123456789ab";
  rpl::testing::write_process_trace(path, 42, {"gemm_tile", "reduce"}, 30, 7, 1'000'000'000, guid);
  rpl::testing::sqlite_db db(path);
  std::string rows = "('rpl_trace_state', '" + state + "'), ('rpl_checkpoint_period_ms', '500')";
  if (!signal.empty()) {
    rows += ", ('rpl_trace_signal', '" + signal + "')";
  }
  db.exec("INSERT INTO rocpd_metadata_0197abcd_1234_7abc_8def_0123456789ab (tag, value) VALUES " +
          rows);
}

TEST(cli_profile, cuda_backend_reports_what_a_crashed_application_left_as_partial) {
  // A stand-in for a CUDA program under the tracer: it leaves the database the tracer's signal
  // handler writes, then aborts. No GPU or tracer is involved (--tracer only names the library).
  temp_dir dir;
  write_marked_trace(dir / "left.db", "signal", "SIGABRT");
  const std::string script = "mkdir -p \"$RPL_TRACE_DIR/host\" && cp " +
                             (dir / "left.db").string() +
                             " \"$RPL_TRACE_DIR/host/42_results.db\" && kill -ABRT $$";
  const auto out = run_rocm_perf({"profile", "--backend", "cuda", "--tracer",
                                  "/nonexistent/librpl_cupti.so", "--runs", "3", "--json", "--out",
                                  (dir / "out").string(), "--", "/bin/sh", "-c", script});
  EXPECT_EQ(out.exit_code, 1) << out.output;
  EXPECT_NE(out.output.find("rocm-perf profile: error: run 1: /bin/sh -c"), std::string::npos)
      << out.output;
  EXPECT_NE(out.output.find("the report is partial: it holds what the tracer wrote before the "
                            "application ended (later runs were not started)"),
            std::string::npos)
      << out.output;
  const auto doc = nlohmann::json::parse(rpl::testing::read_text(dir / "out" / "profile.json"));
  EXPECT_EQ(validate(doc, "profile.schema.json"), std::vector<std::string>{});
  EXPECT_EQ(doc["schema_version"], "1.1");
  EXPECT_EQ(doc["partial"], true);
  ASSERT_EQ(doc["partial_reasons"].size(), 2u) << doc["partial_reasons"].dump(2);
  EXPECT_EQ(doc["partial_reasons"][0],
            "run 1: the application ended abnormally: /bin/sh -c " + script +
                " was killed by SIGABRT (Aborted) under the CUPTI tracer");
  EXPECT_EQ(doc["partial_reasons"][1],
            (dir / "out" / "traces" / "run-1" / "host" / "42_results.db").string() +
                ": written when the process received SIGABRT, before it ended: kernels still "
                "running then are missing");
  EXPECT_EQ(doc["stability"]["runs"], 1);
  EXPECT_EQ(doc["totals"]["dispatches"], 30);
  // The text report says it under the summary line.
  const auto text = run_rocm_perf({"profile", "--backend", "cuda", "--tracer", "/nonexistent/t.so",
                                   "--", "/bin/sh", "-c", script});
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_NE(text.output.find("\npartial trace: run 1: the application ended abnormally: "),
            std::string::npos)
      << text.output;
}

TEST(cli_profile, cuda_backend_a_successful_run_with_a_checkpoint_only_trace_is_partial) {
  // As after _exit(0): the exit status says success, the database says it is not the final write.
  temp_dir dir;
  write_marked_trace(dir / "left.db", "checkpoint");
  const std::string script = "mkdir -p \"$RPL_TRACE_DIR/host\" && cp " +
                             (dir / "left.db").string() + " \"$RPL_TRACE_DIR/host/42_results.db\"";
  const auto out = run_rocm_perf({"profile", "--backend", "cuda", "--tracer",
                                  "/nonexistent/librpl_cupti.so", "--runs", "2", "--json", "--out",
                                  (dir / "out").string(), "--", "/bin/sh", "-c", script});
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const auto doc = nlohmann::json::parse(rpl::testing::read_text(dir / "out" / "profile.json"));
  EXPECT_EQ(doc["partial"], true);
  ASSERT_EQ(doc["partial_reasons"].size(), 2u); // one per run's database
  EXPECT_NE(doc["partial_reasons"][0].get<std::string>().find(
                "the tracer's last checkpoint: the process ended without a final write"),
            std::string::npos)
      << doc["partial_reasons"].dump(2);
  EXPECT_NE(doc["partial_reasons"][0].get<std::string>().find("within the last 500 ms"),
            std::string::npos);
  // analyze says the same of the same files.
  const auto analyzed = run_rocm_perf({"analyze", "--json", (dir / "out" / "traces").string()});
  ASSERT_EQ(analyzed.exit_code, 0) << analyzed.output;
  EXPECT_EQ(parse_json_output(analyzed.output)["partial"], true);
}

TEST(cli_profile, cuda_backend_a_crash_that_left_no_trace_is_an_error_naming_the_run) {
  const auto out = run_rocm_perf({"profile", "--backend", "cuda", "--tracer", "/nonexistent/t.so",
                                  "--", "/bin/sh", "-c", "kill -SEGV $$"});
  EXPECT_EQ(out.exit_code, 1) << out.output;
  EXPECT_NE(out.output.find("run 1: /bin/sh -c kill -SEGV $$ was killed by SIGSEGV"),
            std::string::npos)
      << out.output;
  EXPECT_EQ(out.output.find("partial"), std::string::npos) << out.output;
}

void make_legacy_rpd(const std::filesystem::path& path) {
  stages::sqlite::connection db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  db.exec("CREATE TABLE rocpd_string(id INTEGER PRIMARY KEY, string TEXT);"
          "CREATE TABLE rocpd_op(id INTEGER PRIMARY KEY, gpuId INTEGER, queueId INTEGER, "
          "sequenceId INTEGER, start INTEGER, end INTEGER, description_id INTEGER, opType_id "
          "INTEGER);"
          "CREATE TABLE rocpd_api(id INTEGER PRIMARY KEY, pid INTEGER, tid INTEGER, start INTEGER, "
          "end INTEGER, apiName_id INTEGER, args_id INTEGER);"
          "CREATE TABLE rocpd_metadata(id INTEGER PRIMARY KEY, tag TEXT, value TEXT);"
          "INSERT INTO rocpd_metadata(tag, value) VALUES ('schema_version', '2');");
}

TEST(cli_profile, analyze_refuses_bad_inputs_with_the_file_and_a_fix) {
  temp_dir dir;
  rpl::testing::write_file(dir / "random.db",
                           std::string("\x01\x02not sqlite at all", 19) + std::string(5000, 'z'));
  make_legacy_rpd(dir / "legacy.rpd");
  std::filesystem::create_directories(dir / "empty");
  {
    scoped_env none("FAKE_ROCPROF_NO_DISPATCHES", "1");
    ASSERT_EQ(run_rocm_perf({"profile", "--rocprofv3", fake_rocprofv3, "--runs", "1", "--out",
                             (dir / "nodispatch").string(), "--", "/bin/true"})
                  .exit_code,
              2);
  }
  struct bad {
    std::filesystem::path input;
    std::string expected;
  };
  const std::vector<bad> cases = {
      {dir / "random.db", "random.db"},   {dir / "legacy.rpd", "legacy.rpd"},
      {dir / "empty", "empty"},           {dir / "nodispatch" / "traces", "no kernel dispatches"},
      {dir / "missing.db", "missing.db"},
  };
  for (const auto& c : cases) {
    const auto out = run_rocm_perf({"analyze", c.input.string()});
    EXPECT_EQ(out.exit_code, 2) << c.input << "\n" << out.output;
    EXPECT_NE(out.output.find(c.expected), std::string::npos) << out.output;
    EXPECT_NE(out.output.find("fix"), std::string::npos) << out.output;
  }
}

TEST(cli_inspect, a_file_without_device_code_says_so_and_bad_input_is_refused) {
  temp_dir dir;
  const auto none = run_rocm_perf({"inspect", "/bin/true"});
  EXPECT_EQ(none.exit_code, 3) << none.output;
  EXPECT_NE(none.output.find("no device code"), std::string::npos) << none.output;

  rpl::testing::write_file(dir / "junk.hsaco", std::string("\x7f"
                                                           "ELF",
                                                           4) +
                                                   std::string(100, '\xff'));
  const auto junk = run_rocm_perf({"inspect", (dir / "junk.hsaco").string()});
  EXPECT_EQ(junk.exit_code, 2) << junk.output;
  EXPECT_NE(junk.output.find("junk.hsaco"), std::string::npos) << junk.output;

  const auto arch = run_rocm_perf({"inspect", "--arch", "gfx1201", "/bin/true"});
  EXPECT_EQ(arch.exit_code, 2) << arch.output;
  EXPECT_NE(arch.output.find("gfx90a"), std::string::npos) << arch.output; // lists known targets
}

TEST(cli_inspect, reports_resources_and_occupancy_of_real_hip_kernels) {
  if (!std::filesystem::exists("/usr/bin/hipcc")) {
    GTEST_SKIP() << "hipcc is not installed (scripts/install-deps installs Debian's hipcc)";
  }
  temp_dir dir;
  rpl::testing::write_file(dir / "k.hip", R"(#include <hip/hip_runtime.h>
__global__ void __launch_bounds__(256) scale(float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
__global__ void tile(const float* in, float* out) {
  __shared__ float buffer[4096];
  buffer[threadIdx.x] = in[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = buffer[(threadIdx.x * 7) % 4096];
}
)");
  const auto built = rpl::testing::compile_hsaco(dir.path(), 2min);
  ASSERT_TRUE(std::filesystem::exists(dir / "k.hsaco")) << built.output;

  const auto out =
      run_rocm_perf({"inspect", "--json", "--block", "128", (dir / "k.hsaco").string()});
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const auto doc = parse_json_output(out.output);
  const auto& object = doc["files"][0]["code_objects"][0];
  EXPECT_EQ(object["processor"], "gfx90a");
  ASSERT_EQ(object["kernels"].size(), 2u);
  for (const auto& k : object["kernels"]) {
    ASSERT_FALSE(k["occupancy"].empty());
    if (k["name"].get<std::string>().find("tile") != std::string::npos) {
      EXPECT_EQ(k["group_segment_fixed_size"], 16384);
      // 16 KiB per workgroup of 1024 threads (16 waves) on a 64 KiB CU: 4 workgroups → 64 waves
      // per CU would need 16 per SIMD; the 8 wave slots of a SIMD cap it.
      EXPECT_EQ(k["occupancy"][0]["threads_per_block"], 1024);
    } else {
      EXPECT_EQ(k["occupancy"][0]["threads_per_block"], 256);
      EXPECT_EQ(k["occupancy"][1]["threads_per_block"], 128);
    }
  }
  const auto text = run_rocm_perf({"inspect", (dir / "k.hsaco").string()});
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.output.find("waves per SIMD"), std::string::npos) << text.output;
}

} // namespace
} // namespace rpl
