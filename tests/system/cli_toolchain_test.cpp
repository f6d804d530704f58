// Toolchain identity and load (issue 13, item 2), end to end with real worker processes on
// loopback: a worker whose g++ is another binary (a wrapper first on its PATH) gets none of the
// sweep's compiles, which wait until --local-fallback starts local workers; pinned with
// --toolchain, the same worker does them all. Bad --toolchain and --local-fallback values exit 2.
#include <algorithm>
#include <signal.h>
#include <sys/stat.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/test_support.hpp"
#include "workers/compilers/toolchain_identity.hpp"
#include "workers/process/child_process.hpp"

namespace rpl {
namespace {

using namespace std::chrono_literals;
using rpl::testing::query_int;
using rpl::testing::temp_dir;

/// A folder whose g++ is a wrapper script around the real one: the same results, another binary.
std::filesystem::path other_gxx(const std::filesystem::path& dir) {
  const auto bin = dir / "other-bin";
  std::filesystem::create_directories(bin);
  rpl::testing::write_file(bin / "g++",
                           "#!/bin/sh\n# another g++ (a wrapper)\nexec /usr/bin/g++ \"$@\"\n");
  ::chmod((bin / "g++").c_str(), 0755);
  return bin;
}

workers::child_process start_worker(const std::string& endpoint,
                                    const std::filesystem::path& bin,
                                    const std::vector<std::string>& also_allowed = {}) {
  workers::child_options options;
  // Only g++ (what the sweep builds with), so READY comes without identifying every default
  // compiler; and the paths a test's template names, which a worker runs only when allowed.
  options.argv = rpl::testing::remote_worker_argv(
      endpoint, {"--slots", "2", "--allow-compiler", "g++", "--insecure"});
  for (const auto& path : also_allowed)
    options.argv.insert(options.argv.end(), {"--allow-compiler", path});
  const char* path = std::getenv("PATH");
  options.environment = {{"PATH", bin.string() + ":" + (path != nullptr ? path : "/usr/bin:/bin")}};
  options.max_output_bytes = 1u << 20;
  return workers::child_process::spawn(options);
}

workers::child_process start_engine(std::vector<std::string> extra,
                                    const std::filesystem::path& db,
                                    const std::string& endpoint) {
  auto args = rpl::testing::remote_sweep_args(db);
  args.insert(args.begin(), rpl::testing::rocm_perf.string());
  args.insert(args.end(), {"--insecure", "--listen", endpoint, "--json"});
  args.insert(args.end(), extra.begin(), extra.end());
  workers::child_options options;
  options.argv = args;
  options.max_output_bytes = 4u << 20;
  return workers::child_process::spawn(options);
}

nlohmann::json json_of(const std::string& output) {
  const auto start = output.find("{\n");
  return start == std::string::npos ? nlohmann::json()
                                    : nlohmann::json::parse(output.substr(start));
}

TEST(toolchain_identity, a_worker_with_another_compiler_gets_no_job_and_local_fallback_goes_on) {
  temp_dir dir;
  const auto db = dir / "r.db";
  const auto endpoint = "tcp://127.0.0.1:" + std::to_string(rpl::testing::free_port());
  auto engine = start_engine({"--local-fallback", "2"}, db, endpoint);
  ASSERT_TRUE(engine.launched());
  auto other = start_worker(endpoint, other_gxx(dir.path()));
  ASSERT_TRUE(other.launched());

  const auto outcome = engine.finish();
  ASSERT_EQ(outcome.exit_code, 0) << outcome.output;
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM candidates WHERE status='ok'"), 4);
  // Every artifact came from a local fallback worker, none from the one with another g++.
  for (const auto& id : rpl::testing::query_texts(db, "SELECT DISTINCT worker_id FROM artifacts"))
    EXPECT_NE(std::stoi(id.substr(id.rfind(':') + 1)), other.pid()) << id;
  const auto doc = json_of(outcome.output);
  ASSERT_TRUE(doc.is_object()) << outcome.output;
  EXPECT_GE(doc["broker"]["toolchain_mismatches"].get<int>(), 1);
  EXPECT_GE(doc["broker"]["local_fallback_workers"].get<int>(), 1);
  EXPECT_NE(outcome.output.find("has another g++ than this run asks for"), std::string::npos);
  EXPECT_NE(outcome.output.find("--local-fallback starts"), std::string::npos);
  ::kill(other.pid(), SIGTERM);
  const auto worker_out = other.finish();
  EXPECT_EQ(worker_out.exit_code, 0);
  // It announced its toolchain: the wrapper, resolved, with its hash, and the pin that selects it.
  EXPECT_NE(worker_out.output.find("toolchain g++: " + (dir.path() / "other-bin" / "g++").string()),
            std::string::npos)
      << worker_out.output;
  const auto wrapper = workers::identify_toolchain((dir.path() / "other-bin" / "g++").string());
  ASSERT_TRUE(wrapper.has_value());
  EXPECT_NE(worker_out.output.find("pin it with --toolchain 'g++=" + wrapper->id + "'"),
            std::string::npos)
      << worker_out.output;
}

TEST(toolchain_identity, a_pinned_toolchain_sends_every_compile_to_the_worker_that_has_it) {
  temp_dir dir;
  const auto db = dir / "r.db";
  const auto endpoint = "tcp://127.0.0.1:" + std::to_string(rpl::testing::free_port());
  const auto bin = other_gxx(dir.path());
  const auto pinned = workers::identify_toolchain((bin / "g++").string());
  ASSERT_TRUE(pinned.has_value());
  auto engine = start_engine({"--toolchain", "g++=" + pinned->id}, db, endpoint);
  ASSERT_TRUE(engine.launched());
  auto other = start_worker(endpoint, bin);
  ASSERT_TRUE(other.launched());
  const auto outcome = engine.finish();
  ASSERT_EQ(outcome.exit_code, 0) << outcome.output;
  const auto ids = rpl::testing::query_texts(db, "SELECT DISTINCT worker_id FROM artifacts");
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(std::stoi(ids[0].substr(ids[0].rfind(':') + 1)), other.pid());
  EXPECT_EQ(json_of(outcome.output)["broker"]["toolchain_mismatches"].get<int>(), 0);
  ::kill(other.pid(), SIGTERM);
  EXPECT_EQ(other.finish().exit_code, 0);
}

/// The sweep's arguments with the build template's compiler named by path.
std::vector<std::string> with_compiler(std::vector<std::string> args, const std::string& gxx) {
  const auto at = std::find(args.begin(), args.end(), "--build-template");
  EXPECT_NE(at, args.end());
  std::string& build = *(at + 1);
  build = gxx + build.substr(build.find(' '));
  return args;
}

TEST(toolchain_identity, a_compiler_named_by_path_is_checked_at_that_path_not_on_path) {
  // The worker's PATH has another g++ (what READY describes), but the template runs /usr/bin/g++,
  // which is the engine's and which the worker allows by path: the worker builds everything.
  temp_dir dir;
  const auto db = dir / "r.db";
  const auto endpoint = "tcp://127.0.0.1:" + std::to_string(rpl::testing::free_port());
  auto args = with_compiler(rpl::testing::remote_sweep_args(db), "/usr/bin/g++");
  args.insert(args.begin(), rpl::testing::rocm_perf.string());
  args.insert(args.end(), {"--insecure", "--listen", endpoint, "--json", "--worker-wait", "60"});
  workers::child_options options;
  options.argv = args;
  options.max_output_bytes = 4u << 20;
  auto engine = workers::child_process::spawn(options);
  ASSERT_TRUE(engine.launched());
  auto other = start_worker(endpoint, other_gxx(dir.path()), {"/usr/bin/g++"});
  ASSERT_TRUE(other.launched());
  const auto outcome = engine.finish();
  ASSERT_EQ(outcome.exit_code, 0) << outcome.output;
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM candidates WHERE status='ok'"), 4);
  EXPECT_EQ(json_of(outcome.output)["broker"]["toolchain_mismatches"].get<int>(), 0);
  ::kill(other.pid(), SIGTERM);
  EXPECT_EQ(other.finish().exit_code, 0);
}

TEST(toolchain_identity, a_worker_with_another_binary_at_the_path_refuses_it_and_gets_no_more) {
  // The template names the wrapper by path (which the worker allows), but the run pins the real
  // g++'s identity: the worker finds the wrapper there, says so, and the compiles wait until
  // --worker-wait gives up.
  temp_dir dir;
  const auto db = dir / "r.db";
  const auto endpoint = "tcp://127.0.0.1:" + std::to_string(rpl::testing::free_port());
  const auto bin = other_gxx(dir.path());
  const auto real = workers::identify_toolchain("/usr/bin/g++");
  ASSERT_TRUE(real.has_value());
  auto args = with_compiler(rpl::testing::remote_sweep_args(db), (bin / "g++").string());
  args.insert(args.begin(), rpl::testing::rocm_perf.string());
  args.insert(args.end(), {"--insecure", "--listen", endpoint, "--json", "--worker-wait", "5",
                           "--toolchain", "g++=" + real->id});
  workers::child_options options;
  options.argv = args;
  options.max_output_bytes = 4u << 20;
  auto engine = workers::child_process::spawn(options);
  ASSERT_TRUE(engine.launched());
  auto worker = start_worker(endpoint, "/nonexistent", {(bin / "g++").string()});
  ASSERT_TRUE(worker.launched());
  const auto outcome = engine.finish();
  EXPECT_EQ(outcome.exit_code, 1) << outcome.output;
  EXPECT_NE(outcome.output.find("has " + (bin / "g++").string() + " as g++ | "), std::string::npos)
      << outcome.output;
  EXPECT_NE(outcome.output.find("the run asks for " + real->id), std::string::npos);
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM artifacts"), 0);
  ::kill(worker.pid(), SIGTERM);
  const auto worker_out = worker.finish();
  EXPECT_EQ(worker_out.exit_code, 0);
  // One refusal per slot at most: after the first, the broker sends it none of these jobs.
  std::size_t refusals = 0;
  for (auto at = worker_out.output.find("toolchain_mismatch"); at != std::string::npos;
       at = worker_out.output.find("toolchain_mismatch", at + 1))
    ++refusals;
  EXPECT_GE(refusals, 1u);
  EXPECT_LE(refusals, 2u) << worker_out.output;
}

TEST(toolchain_identity, the_version_is_what_the_compiler_prints_not_a_helpers_error) {
  // Debian's hipcc runs rocm_agent_enumerator, which prints a traceback on stderr on a host
  // without an AMD GPU: a compile host and the GPU host must still get one identity.
  temp_dir dir;
  const auto compiler = dir.path() / "hipcc";
  rpl::testing::write_file(compiler, "#!/bin/sh\necho 'Traceback (most recent call last):' >&2\n"
                                     "echo 'HIP version: 5.2.21153-0'\necho 'clang 15' \n");
  ::chmod(compiler.c_str(), 0755);
  const auto t = workers::identify_toolchain(compiler.string());
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->version, "HIP version: 5.2.21153-0; clang 15");
  EXPECT_NE(t->id.find("HIP version: 5.2.21153-0; clang 15"), std::string::npos) << t->id;
}

TEST(toolchain_identity, the_clang_a_wrapper_names_is_part_of_it_and_its_install_folder_is_not) {
  // One hipcc wrapper (the same bytes, so the same hash) in three folders, each running "its"
  // clang: two the same clang installed in different folders, one another clang release.
  temp_dir dir;
  auto install = [&](const std::string& folder, const std::string& clang) {
    const auto bin = dir.path() / folder;
    std::filesystem::create_directories(bin);
    rpl::testing::write_file(bin / "hipcc", "#!/bin/sh\necho 'HIP version: 5.2.21153-0'\n"
                                            "cat \"$(dirname \"$0\")/clang-version\"\n"
                                            "echo \"InstalledDir: $(dirname \"$0\")\"\n");
    ::chmod((bin / "hipcc").c_str(), 0755);
    rpl::testing::write_file(bin / "clang-version", clang + "\nTarget: x86_64-pc-linux-gnu\n");
    return workers::identify_toolchain((bin / "hipcc").string());
  };
  const auto a = install("a", "Debian clang version 15.0.6");
  const auto b = install("b", "Debian clang version 15.0.6");
  const auto c = install("c", "Debian clang version 15.0.7");
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a->hash, c->hash);
  EXPECT_EQ(a->version,
            "HIP version: 5.2.21153-0; Debian clang version 15.0.6; Target: x86_64-pc-linux-gnu");
  EXPECT_EQ(a->id, b->id) << "the install folder must not split one toolchain";
  EXPECT_NE(a->id, c->id) << "another clang behind the same wrapper is another toolchain";
  EXPECT_EQ(workers::version_banner("  g++ 12 \n\nInstalledDir: /x\r\nCopyright\n"),
            "g++ 12; Copyright");
  EXPECT_EQ(workers::version_banner(""), "");
}

TEST(toolchain_identity, bad_pins_and_fallbacks_are_bad_input) {
  temp_dir dir;
  auto args = rpl::testing::remote_sweep_args(dir / "r.db");
  auto with = [&](std::vector<std::string> extra) {
    auto all = args;
    all.insert(all.end(), extra.begin(), extra.end());
    return rpl::testing::run_rocm_perf(all);
  };
  auto out = with({"--toolchain", "g++"});
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("is not NAME=ID"), std::string::npos) << out.output;
  out = with({"--toolchain", "=x"});
  EXPECT_EQ(out.exit_code, 2) << out.output;
  out = with({"--local-fallback", "-1"});
  EXPECT_EQ(out.exit_code, 2) << out.output;
  out = rpl::testing::run_rocm_perf(
      {"worker", "compile", "--connect", "tcp://127.0.0.1:1", "--slots", "0"});
  EXPECT_EQ(out.exit_code, 2) << out.output;
}

} // namespace
} // namespace rpl
