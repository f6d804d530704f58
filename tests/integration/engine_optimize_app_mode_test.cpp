// The application mode of `rocm-perf optimize` without a GPU: the CUDA tracer is replaced by a
// recorder that writes a rocpd fixture (or by the rocprofv3 stand-in, tests/tools/fake_rocprofv3),
// the capture library by a function that writes a marker. Ranking, mapping to the sources
// (libclang), skipping, the scratch build and its failure, and bad input. The real tracer and
// capture run only on an NVIDIA GPU and are not exercised here.
#include <gtest/gtest.h>

#include "engine/optimize/app_mode.hpp"
#include "engine/optimize/run_optimize.hpp"
#include "support/rocpd_fixtures.hpp"
#include "support/test_support.hpp"
#include "workers/source/clang_source.hpp"
#include "workers/tracers/cuda/cupti_recorder.hpp"
#include "workers/tracers/rocprofv3/rocprofv3_recorder.hpp"

namespace rpl {
namespace {

namespace fs = std::filesystem;
using engine::app_kernel;
using engine::app_profile;
using engine::app_run_error;
using engine::app_tools;
using engine::optimize_input_error;
using rpl::testing::read_text;
using rpl::testing::temp_dir;
using rpl::testing::write_file;

#define RPL_NEED_LIBCLANG()                                                                        \
  do {                                                                                             \
    std::string why;                                                                               \
    if (!workers::libclang_available(why))                                                         \
      GTEST_SKIP() << "libclang is needed to find kernels in sources: " << why;                    \
  } while (0)

/// What the stand-ins saw.
struct seen {
  std::vector<std::vector<std::string>> recorded; ///< argv of each profiled run
  std::vector<std::string> captured;              ///< symbols asked for
};

/// A recorder that writes one process's trace with `kernels` (kernel i lasts about i + 1 µs, so
/// the last ranks first) and a capture that writes a marker file, or fails for `refuse`.
app_tools stand_in_tools(seen& log,
                         std::vector<std::string> kernels = {"alpha", "beta", "delta"},
                         std::string refuse = {}) {
  app_tools tools;
  tools.backend = "rocpd";
  tools.record = [&log, kernels](const std::vector<std::string>& argv, const fs::path& folder) {
    log.recorded.push_back(argv);
    rpl::testing::write_process_trace(folder / "testhost" / "100_results.db", 100, kernels, 60, 7);
    workers::recorded_run run;
    run.databases = {folder / "testhost" / "100_results.db"};
    return run;
  };
  tools.capture = [&log, refuse](const std::vector<std::string>&, const std::string& symbol,
                                 const fs::path& out) {
    log.captured.push_back(symbol);
    if (symbol == refuse)
      return std::string("refused: managed memory is live");
    fs::create_directories(out);
    write_file(out / "dispatch.json", "{}");
    return std::string();
  };
  return tools;
}

/// Two sources: alpha in a.cu, delta in b.cu (beta is nowhere).
std::vector<fs::path> two_sources(const temp_dir& dir) {
  write_file(dir / "a.cu", "__global__ void alpha(float* x, int n) { if (n) x[0] = 1; }\n"
                           "int main() { return 0; }\n");
  write_file(dir / "b.cu", "__global__ void delta(float* x, int n) { x[n] += 2.0f; }\n");
  return {dir / "a.cu", dir / "b.cu"};
}

TEST(engine_optimize_app_mode, keeps_the_defined_kernels_and_names_the_one_it_skips) {
  RPL_NEED_LIBCLANG();
  temp_dir dir;
  seen log;
  std::vector<std::string> skipped;
  app_profile before;
  const auto chosen = engine::rank_app_kernels({"./app", "--size", "8"}, two_sources(dir), 3,
                                               dir / "out", skipped, before, stand_in_tools(log));
  ASSERT_EQ(chosen.size(), 2u);
  EXPECT_EQ(chosen[0].name, "delta"); // the longest kernel ranks first
  EXPECT_EQ(chosen[0].symbol, "_Z5deltaPfi");
  EXPECT_EQ(chosen[0].function, "delta");
  EXPECT_EQ(chosen[0].source, dir / "b.cu");
  EXPECT_EQ(chosen[1].name, "alpha");
  EXPECT_EQ(chosen[1].source, dir / "a.cu");
  for (const auto& k : chosen) {
    EXPECT_GT(k.critical_path_share, 0.0) << k.name;
    EXPECT_LE(k.critical_path_share, 1.0) << k.name;
    EXPECT_EQ(k.capture_dir, dir / "out" / "captures" / k.symbol);
    EXPECT_TRUE(fs::exists(k.capture_dir / "dispatch.json")) << k.name;
    EXPECT_NE(k.analysis_text.find("share: "), std::string::npos) << k.analysis_text;
    EXPECT_NE(k.analysis_text.find("counters: "), std::string::npos) << k.analysis_text;
    EXPECT_FALSE(k.bottleneck.empty());
  }
  EXPECT_GT(chosen[0].critical_path_share, chosen[1].critical_path_share);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0].rfind("beta: not defined in ", 0), 0u) << skipped[0];
  EXPECT_NE(skipped[0].find("_Z4betaPfi"), std::string::npos) << skipped[0];
  EXPECT_EQ(log.captured, (std::vector<std::string>{"_Z5deltaPfi", "_Z5alphaPfi"}));
  ASSERT_EQ(log.recorded.size(), 1u);
  EXPECT_EQ(log.recorded[0].front(), "./app");
  EXPECT_GT(before.gpu_time_ns, 0.0);
  EXPECT_GT(before.critical_path_ns, 0.0);
  EXPECT_EQ(before.trace, dir / "out" / "app-profile" / "trace");
  EXPECT_NE(before.summary.find("GPU time "), std::string::npos) << before.summary;
}

TEST(engine_optimize_app_mode, stops_at_k_kernels) {
  RPL_NEED_LIBCLANG();
  temp_dir dir;
  seen log;
  std::vector<std::string> skipped;
  app_profile before;
  const auto chosen = engine::rank_app_kernels({"./app"}, two_sources(dir), 1, dir / "out", skipped,
                                               before, stand_in_tools(log));
  ASSERT_EQ(chosen.size(), 1u);
  EXPECT_EQ(chosen[0].name, "delta");
  EXPECT_TRUE(skipped.empty());
  EXPECT_EQ(log.captured.size(), 1u);
}

TEST(engine_optimize_app_mode, a_refused_capture_is_skipped_with_its_reason) {
  RPL_NEED_LIBCLANG();
  temp_dir dir;
  seen log;
  std::vector<std::string> skipped;
  app_profile before;
  const auto chosen =
      engine::rank_app_kernels({"./app"}, two_sources(dir), 1, dir / "out", skipped, before,
                               stand_in_tools(log, {"alpha", "beta", "delta"}, "_Z5deltaPfi"));
  // delta's capture fails, beta is nowhere, so the walk goes on to alpha.
  ASSERT_EQ(chosen.size(), 1u);
  EXPECT_EQ(chosen[0].name, "alpha");
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_EQ(skipped[0].rfind("delta: defined in ", 0), 0u) << skipped[0];
  EXPECT_NE(skipped[0].find("refused: managed memory is live"), std::string::npos) << skipped[0];
  EXPECT_EQ(skipped[1].rfind("beta: ", 0), 0u) << skipped[1];
}

TEST(engine_optimize_app_mode, demangled_trace_names_map_through_the_rocprofv3_stand_in) {
  RPL_NEED_LIBCLANG();
  const fs::path fake{RPL_FAKE_ROCPROFV3};
  if (!fs::exists(fake))
    GTEST_SKIP() << "the rocprofv3 stand-in is not built: " << fake;
  temp_dir dir;
  // The stand-in records only demangled names: the symbol comes from libclang's mangling.
  write_file(dir / "gemm.cu",
             "__global__ void gemm_tile(const float* a, const float* b, float* c, int n) {\n"
             "  c[n] = a[n] * b[n];\n}\n");
  seen unused;
  app_tools tools = stand_in_tools(unused); // record and backend replaced below
  tools.backend = "rocm";
  tools.record = [fake](const std::vector<std::string>& argv, const fs::path& folder) {
    workers::rocprofv3_options options;
    options.executable = fake;
    options.timeout = std::chrono::seconds(60);
    workers::rocprofv3_recorder recorder(options);
    return recorder.record(argv, folder, 1);
  };
  std::vector<std::string> skipped;
  app_profile before;
  const auto chosen =
      engine::rank_app_kernels({"true"}, {dir / "gemm.cu"}, 5, dir / "out", skipped, before, tools);
  ASSERT_EQ(chosen.size(), 1u);
  EXPECT_EQ(chosen[0].name, "gemm_tile(float const*, float const*, float*, int)");
  EXPECT_EQ(chosen[0].symbol, "_Z9gemm_tilePKfS0_Pfi");
  EXPECT_EQ(chosen[0].function, "gemm_tile");
  ASSERT_EQ(skipped.size(), 1u); // the runtime helper kernel is not ranked
  EXPECT_EQ(skipped[0].rfind("reduce_sum(float*, int): not defined in ", 0), 0u) << skipped[0];
  EXPECT_NE(skipped[0].find("named reduce_sum"), std::string::npos) << skipped[0];
}

/// A trace of one stream whose kernels have these (mangled, display) names; the later, longer.
void write_named_trace(const fs::path& db,
                       const std::vector<std::pair<std::string, std::string>>& names) {
  fs::create_directories(db.parent_path());
  rpl::testing::rocpd::writer w(db);
  rpl::testing::add_process_header(w, 100, 101);
  rpl::testing::rocpd::code_object_info code;
  code.id = 1;
  code.agent_id = 1;
  w.add_code_object(code);
  std::int64_t now = 1'000'000;
  for (std::size_t i = 0; i < names.size(); ++i) {
    rpl::testing::rocpd::kernel_symbol_info symbol;
    symbol.id = static_cast<std::int64_t>(i + 1);
    symbol.code_object_id = 1;
    symbol.kernel_name = names[i].first;
    symbol.display_name = names[i].second;
    w.add_kernel_symbol(symbol);
    for (int n = 0; n < 4; ++n) {
      rpl::testing::rocpd::dispatch_info d;
      d.agent_id = 1;
      d.kernel_id = symbol.id;
      d.start_ns = now;
      d.end_ns = now + static_cast<std::int64_t>(1000 * (i + 1));
      d.workgroup = {128, 1, 1};
      d.grid = {128 * 64, 1, 1};
      w.add_dispatch(d);
      now = d.end_ns + 100;
    }
  }
  w.commit();
}

TEST(engine_optimize_app_mode, namespaced_and_extern_c_kernels_match_their_symbols) {
  RPL_NEED_LIBCLANG();
  temp_dir dir;
  write_file(dir / "k.cu", "namespace ns {\n"
                           "__global__ void scan(float* x, int n) { x[n] = 0; }\n"
                           "}\n"
                           "extern \"C\" __global__ void plain_k(float* x) { x[0] = 1; }\n"
                           "template <int N> __global__ void tiled(float* x) { x[N] = 2; }\n"
                           "template __global__ void tiled<4>(float*);\n");
  seen log;
  app_tools tools = stand_in_tools(log);
  tools.record = [](const std::vector<std::string>&, const fs::path& folder) {
    write_named_trace(folder / "testhost" / "100_results.db",
                      {{"_ZN2ns4scanEPfi", "ns::scan(float*, int)"},
                       {"plain_k", "plain_k"},
                       {"_Z5tiledILi4EEvPf", "void tiled<4>(float*)"}});
    return workers::recorded_run{};
  };
  std::vector<std::string> skipped;
  app_profile before;
  const auto chosen =
      engine::rank_app_kernels({"./app"}, {dir / "k.cu"}, 3, dir / "out", skipped, before, tools);
  ASSERT_EQ(chosen.size(), 3u) << (skipped.empty() ? "" : skipped[0]);
  EXPECT_EQ(chosen[0].symbol, "_Z5tiledILi4EEvPf");
  EXPECT_EQ(chosen[0].function, "tiled");
  EXPECT_EQ(chosen[1].symbol, "plain_k");
  EXPECT_EQ(chosen[1].function, "plain_k");
  EXPECT_EQ(chosen[2].symbol, "_ZN2ns4scanEPfi");
  EXPECT_EQ(chosen[2].function, "scan");
  EXPECT_TRUE(skipped.empty());
}

TEST(engine_optimize_app_mode, bad_input_is_an_input_error_with_a_fix) {
  temp_dir dir;
  seen log;
  const auto tools = stand_in_tools(log);
  write_file(dir / "a.cu", "__global__ void alpha(float* x, int n) {}\n");
  std::vector<std::string> skipped;
  app_profile before;
  const auto message = [&](const std::vector<std::string>& app, std::vector<fs::path> sources,
                           std::size_t k) {
    try {
      engine::rank_app_kernels(app, sources, k, dir / "out", skipped, before, tools);
    } catch (const optimize_input_error& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({"./app"}, {dir / "a.cu"}, 0).find("--top 0"), std::string::npos);
  EXPECT_NE(message({}, {dir / "a.cu"}, 2).find("no application given; fix:"), std::string::npos);
  EXPECT_NE(message({"./app"}, {}, 2).find("no --source given; fix:"), std::string::npos);
  const auto missing = message({"./app"}, {dir / "a.cu", dir / "nope.cu"}, 2);
  EXPECT_NE(missing.find("--source " + (dir / "nope.cu").string() + ": no such file; fix:"),
            std::string::npos)
      << missing;
  EXPECT_TRUE(log.recorded.empty()); // nothing ran
}

TEST(engine_optimize_app_mode, a_failed_application_run_is_a_run_error) {
  RPL_NEED_LIBCLANG();
  temp_dir dir;
  app_tools tools;
  tools.record = [](const std::vector<std::string>&, const fs::path&) {
    workers::recorded_run run;
    run.status = workers::record_status::run_failed;
    run.reason = "./app exited with status 3 under the CUPTI tracer";
    return run;
  };
  std::vector<std::string> skipped;
  app_profile before;
  try {
    engine::rank_app_kernels({"./app"}, two_sources(dir), 2, dir / "out", skipped, before, tools);
    FAIL() << "no error";
  } catch (const app_run_error& error) {
    EXPECT_NE(std::string(error.what()).find("profiling `./app`: ./app exited with status 3"),
              std::string::npos)
        << error.what();
  }
}

TEST(engine_optimize_app_mode, default_tools_without_the_tracer_say_how_to_get_it) {
  if (workers::find_cupti_tracer({}))
    GTEST_SKIP() << "the CUPTI tracer is built here: the default tools would run it";
  RPL_NEED_LIBCLANG();
  temp_dir dir;
  std::vector<std::string> skipped;
  app_profile before;
  try {
    engine::rank_app_kernels({"true"}, two_sources(dir), 1, dir / "out", skipped, before);
    FAIL() << "no error";
  } catch (const optimize_input_error& error) {
    EXPECT_NE(std::string(error.what()).find("librpl_cupti_tracer.so"), std::string::npos);
  }
}

TEST(engine_optimize_app_mode, reprofile_builds_a_patched_scratch_copy_and_runs_what_it_built) {
  temp_dir dir;
  seen log;
  const auto sources = two_sources(dir);
  const std::string original_b = read_text(dir / "b.cu");
  // The build "compiles" a.cu into the program: a copy the test can recognise.
  const auto profile =
      engine::reprofile_app("cp {SRC_DIR}/a.cu '{SRC_DIR}/my app'", sources,
                            {{"a.cu", "__global__ void alpha(float* x, int n) { x[0] = 3; }\n"}},
                            {"./my app", "--size", "8"}, dir / "out", stand_in_tools(log));
  const fs::path scratch = fs::absolute(dir / "out" / "app-build");
  EXPECT_EQ(read_text(scratch / "a.cu"), "__global__ void alpha(float* x, int n) { x[0] = 3; }\n");
  EXPECT_EQ(read_text(scratch / "b.cu"), original_b);
  EXPECT_EQ(read_text(scratch / "my app"), read_text(scratch / "a.cu"));
  EXPECT_NE(read_text(dir / "a.cu").find("x[0] = 1"), std::string::npos); // the user's file
  ASSERT_EQ(log.recorded.size(), 1u);
  EXPECT_EQ(log.recorded[0],
            (std::vector<std::string>{(scratch / "my app").string(), "--size", "8"}));
  EXPECT_GT(profile.gpu_time_ns, 0.0);
  EXPECT_GT(profile.critical_path_ns, 0.0);
  EXPECT_EQ(profile.trace, dir / "out" / "app-reprofile" / "trace");
  EXPECT_TRUE(fs::exists(dir / "out" / "app-build.log"));
}

TEST(engine_optimize_app_mode, reprofile_keeps_a_program_the_build_did_not_make) {
  temp_dir dir;
  seen log;
  engine::reprofile_app("true", two_sources(dir), {}, {"a.cu"}, dir / "out", stand_in_tools(log));
  ASSERT_EQ(log.recorded.size(), 1u);
  EXPECT_EQ(log.recorded[0].front(), "a.cu"); // a copied source is not something the build made
}

TEST(engine_optimize_app_mode, a_failed_build_names_its_log) {
  temp_dir dir;
  seen log;
  try {
    engine::reprofile_app("sh -c 'echo nvcc: error in a.cu; exit 1'", two_sources(dir), {},
                          {"./app"}, dir / "out", stand_in_tools(log));
    FAIL() << "no error";
  } catch (const app_run_error& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("exited with status 1"), std::string::npos) << what;
    EXPECT_NE(what.find("its output is in " + (dir / "out" / "app-build.log").string()),
              std::string::npos)
        << what;
  }
  EXPECT_NE(read_text(dir / "out" / "app-build.log").find("nvcc: error in a.cu"),
            std::string::npos);
  EXPECT_TRUE(log.recorded.empty());
}

TEST(engine_optimize_app_mode, reprofile_bad_input_is_an_input_error) {
  temp_dir dir;
  seen log;
  const auto tools = stand_in_tools(log);
  const auto sources = two_sources(dir);
  fs::create_directories(dir / "other");
  write_file(dir / "other" / "a.cu", "\n");
  const auto message = [&](const std::string& build, std::vector<fs::path> files,
                           std::map<std::string, std::string> patched) {
    try {
      engine::reprofile_app(build, files, patched, {"./app"}, dir / "out", tools);
    } catch (const optimize_input_error& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("make -C {OUT}", sources, {}).find("OUT"), std::string::npos);
  EXPECT_NE(message("", sources, {}).find("--app-build"), std::string::npos);
  EXPECT_NE(message("make", {sources[0], dir / "other" / "a.cu"}, {}).find("same file name"),
            std::string::npos);
  EXPECT_NE(message("make", sources, {{"c.cu", "x"}}).find("'c.cu' is none of the --source"),
            std::string::npos);
  EXPECT_TRUE(log.recorded.empty());
}

} // namespace
} // namespace rpl
