// A rogue engine against a real `rocm-perf worker compile` process (issue 28): the test plays the
// broker and sends what an attacker sent a worker: a script named g++ in a folder of its choosing,
// `-wrapper`, a shipped plugin, outputs and inputs outside the job folder, response files, a
// second program behind nvcc's -ccbin, shell syntax for nvcc and hipcc. Each is refused as
// `rejected` with the flag named, nothing runs, nothing is written outside the job folder (the
// trees of a watched folder and of the worker's work root are the same before and after), and no
// line of a file outside comes back. A plain compile still works afterwards.
#include <algorithm>
#include <filesystem>
#include <map>
#include <signal.h>
#include <string>
#include <sys/stat.h>
#include <vector>

#include <gtest/gtest.h>

#include "support/fake_broker.hpp"
#include "support/test_support.hpp"
#include "workers/process/child_process.hpp"
#include "workers/process/find_program.hpp"

namespace rpl {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using messages::compile_status;
using messages::message_kind;

/// Every path under `root` with its size (folders: -1), for comparing a tree before and after.
std::map<std::string, long long> tree_of(const fs::path& root) {
  std::map<std::string, long long> tree;
  std::error_code error;
  for (fs::recursive_directory_iterator it(root, error), end; !error && it != end;
       it.increment(error)) {
    const auto& entry = *it;
    tree[entry.path().lexically_relative(root).string()] =
        entry.is_regular_file() ? static_cast<long long>(entry.file_size()) : -1;
  }
  return tree;
}

struct rogue_case {
  std::vector<std::string> argv;
  std::string named; ///< what the error must name
};

class rogue_engine : public ::testing::Test {
protected:
  void SetUp() override {
    watched_ = dir_ / "watched";
    work_root_ = dir_ / "work";
    fs::create_directories(watched_ / "evil-bin");
    fs::create_directories(work_root_);
    // What the attacker would like to read back, and a program of its own named like a compiler.
    rpl::testing::write_file(watched_ / "secret.txt", "TOPSECRET-LINE\n");
    const auto fake = watched_ / "evil-bin" / "g++";
    rpl::testing::write_file(fake, "#!/bin/sh\ntouch " + (watched_ / "pwned-script").string() +
                                       "\nexit 0\n");
    ::chmod(fake.c_str(), 0755);
  }

  /// Starts the worker; false (with the reason) when it never says READY.
  bool start_worker() {
    workers::child_options options;
    options.argv = rpl::testing::remote_worker_argv(
        broker_.endpoint(), {"--slots", "1", "--work-dir", work_root_.string()});
    for (const std::string compiler : {"g++", "clang++", "nvcc", "hipcc"})
      options.argv.insert(options.argv.end(), {"--allow-compiler", compiler});
    options.max_output_bytes = 4u << 20;
    worker_.emplace(workers::child_process::spawn(options));
    return worker_->launched() && broker_.expect(message_kind::ready, 60s).has_value();
  }

  /// Sends one job; its reply.
  messages::compile_reply send(const std::vector<std::string>& argv) {
    messages::compile_request request;
    request.sources = {{"main.cpp", "int main() { return 0; }\n"},
                       {"shipped.so", "not really a plugin"}};
    request.argv = argv;
    request.deadline_ms = 60000;
    broker_.send(broker_.worker, ++job_, request);
    const auto reply = broker_.expect(message_kind::compile_reply, 60s);
    EXPECT_TRUE(reply.has_value()) << argv.front();
    if (!reply)
      return {};
    EXPECT_EQ(reply->env.job_id, job_);
    return messages::decode<messages::compile_reply>(reply->body);
  }

  std::string stop_worker() {
    ::kill(worker_->pid(), SIGTERM);
    const auto outcome = worker_->finish();
    EXPECT_EQ(outcome.exit_code, 0) << outcome.output;
    return outcome.output;
  }

  rpl::testing::temp_dir dir_;
  fs::path watched_;
  fs::path work_root_;
  rpl::testing::fake_broker broker_;
  std::optional<workers::child_process> worker_;
  std::uint64_t job_ = 0;
};

TEST_F(rogue_engine, every_attack_is_refused_by_name_and_nothing_is_written_or_read_outside) {
  const std::string w = watched_.string();
  std::vector<rogue_case> cases = {
      // argv[0]: a script named g++ in a folder the engine chose; a relative one; a shell.
      {{w + "/evil-bin/g++", "main.cpp"}, "is not the file of an allowed compiler"},
      {{"./evil-bin/g++", "main.cpp"}, "relative path"},
      {{"sh", "-c", "touch " + w + "/pwned-sh"}, "compiler 'sh' is not allowed"},
      {{"/bin/sh", "-c", "touch " + w + "/pwned-sh"}, "compiler '/bin/sh' is not allowed"},
      // The flags of the issue.
      {{"g++", "-wrapper", "/bin/sh,-c,touch " + w + "/pwned-wrapper", "main.cpp"},
       "refused flag -wrapper: runs another program"},
      {{"g++", "-fplugin=./shipped.so", "main.cpp"}, "refused flag -fplugin=./shipped.so"},
      {{"g++", "main.cpp", "-o", w + "/outside.bin"}, "refused flag -o " + w + "/outside.bin"},
      {{"g++", "-x", "c", "/etc/shadow"}, "refused flag /etc/shadow"},
      {{"g++", "-x", "c", w + "/secret.txt"}, "refused flag " + w + "/secret.txt"},
      {{"g++", "@/etc/passwd"}, "refused flag @/etc/passwd"},
      {{"g++", "@" + w + "/secret.txt"}, "refused flag @" + w + "/secret.txt"},
      // Their relatives.
      {{"g++", "-B" + w + "/evil-bin/", "main.cpp"}, "refused flag -B" + w + "/evil-bin/"},
      {{"g++", "-specs=" + w + "/secret.txt", "main.cpp"}, "refused flag -specs="},
      {{"g++", "--sysroot=" + w, "main.cpp"}, "refused flag --sysroot="},
      {{"g++", "-include", w + "/secret.txt", "main.cpp"}, "refused flag -include " + w},
      {{"g++", "-I" + w, "main.cpp"}, "refused flag -I" + w},
      {{"g++", "-MD", "-MF", w + "/dep.d", "main.cpp"}, "refused flag -MF " + w + "/dep.d"},
      {{"g++", "-dumpdir", w + "/", "main.cpp"}, "refused flag -dumpdir " + w + "/"},
      {{"g++", "main.cpp", "-o", "../escaped"}, "refused flag -o ../escaped"},
      {{"g++", "-Wl,-plugin,./shipped.so", "main.cpp"}, "refused flag -plugin"},
  };
  // Each compiler's own flags where this host has it (an allowed compiler that is missing is the
  // worker's failure, internal_error, before its flags are read).
  if (workers::find_on_path("clang++")) {
    cases.push_back({{"clang++", "-Xclang", "-load", "-Xclang", "./shipped.so", "main.cpp"},
                     "refused flag -load"});
    cases.push_back(
        {{"clang++", "-fpass-plugin=./shipped.so", "main.cpp"}, "refused flag -fpass-plugin="});
  }
  if (workers::find_on_path("nvcc")) {
    cases.push_back({{"nvcc", "-ccbin", w + "/evil-bin/g++", "main.cpp"}, "refused flag -ccbin"});
    cases.push_back({{"nvcc", "-DX=$(touch " + w + "/pwned-nvcc)", "-c", "main.cpp"},
                     "refused flag -DX=$(touch"});
    cases.push_back({{"nvcc", "-c", "main.cpp", "-odir", w}, "refused flag -odir " + w});
    cases.push_back(
        {{"nvcc", "-c", "main.cpp", "--keep", "--keep-dir", w}, "refused flag --keep-dir " + w});
    cases.push_back(
        {{"nvcc", "-Xcompiler", "-wrapper,/bin/sh", "main.cpp"}, "refused flag -wrapper"});
  }
  if (workers::find_on_path("hipcc")) {
    cases.push_back(
        {{"hipcc", "main.cpp", "-o", "a;touch " + w + "/pwned-hipcc"}, "refused flag a;touch"});
    cases.push_back({{"hipcc", "--hip-path=" + w, "main.cpp"}, "refused flag --hip-path="});
  }

  const auto watched_before = tree_of(watched_);
  const auto work_before = tree_of(work_root_);
  ASSERT_TRUE(start_worker());
  for (const auto& c : cases) {
    const auto reply = send(c.argv);
    std::string shown;
    for (const auto& word : c.argv)
      shown += word + " ";
    EXPECT_EQ(reply.status, compile_status::rejected) << shown << "\n" << reply.error;
    EXPECT_NE(reply.error.find(c.named), std::string::npos) << shown << "\n" << reply.error;
    EXPECT_NE(reply.error.find("fix: "), std::string::npos) << reply.error;
    EXPECT_EQ(reply.output.find("TOPSECRET"), std::string::npos) << shown;
    EXPECT_EQ(reply.output.find("root:"), std::string::npos) << shown;
    EXPECT_FALSE(reply.has_artifact) << shown;
  }
  // The worker still compiles what it should.
  const auto good = send({"g++", "-O0", "main.cpp", "-o", "{OUT}"});
  EXPECT_EQ(good.status, compile_status::ok) << good.error << good.output;
  EXPECT_TRUE(good.has_artifact);
  const auto log = stop_worker();

  EXPECT_EQ(tree_of(watched_), watched_before) << "something was written in " << watched_;
  EXPECT_EQ(tree_of(work_root_), work_before) << "the worker left something in " << work_root_;
  EXPECT_FALSE(fs::exists(watched_ / "pwned-script"));
  // Each refusal is in the worker's log too, by job.
  EXPECT_NE(log.find("rejected: refused flag -wrapper"), std::string::npos) << log;
}

TEST_F(rogue_engine, a_sandboxed_compiler_cannot_read_what_a_source_includes_from_tmp) {
  if (!rpl::testing::sandbox_works())
    GTEST_SKIP() << "bwrap cannot start a sandbox on this host (the worker runs --no-sandbox)";
  if (watched_.string().rfind("/tmp/", 0) != 0)
    GTEST_SKIP() << "the test's folder is not under /tmp, which the sandbox makes private";
  // A path the argv check cannot see: the source names it. In the sandbox /tmp is private.
  const auto watched_before = tree_of(watched_);
  ASSERT_TRUE(start_worker());
  messages::compile_request request;
  request.sources = {{"main.cpp", "#include \"" + (watched_ / "secret.txt").string() + "\"\n"}};
  request.argv = {"g++", "-E", "main.cpp"};
  broker_.send(broker_.worker, 1, request);
  const auto reply = broker_.expect(message_kind::compile_reply, 60s);
  ASSERT_TRUE(reply);
  const auto body = messages::decode<messages::compile_reply>(reply->body);
  EXPECT_EQ(body.status, compile_status::failed) << body.output;
  EXPECT_NE(body.output.find("secret.txt"), std::string::npos) << body.output;
  EXPECT_EQ(body.output.find("TOPSECRET"), std::string::npos) << body.output;
  stop_worker();
  EXPECT_EQ(tree_of(watched_), watched_before);
}

TEST(worker_sandbox, a_worker_that_cannot_sandbox_exits_2_naming_the_fix_unless_told_not_to) {
  rpl::testing::temp_dir dir;
  rpl::testing::fake_broker broker;
  workers::child_options options;
  options.argv = {rpl::testing::rocm_perf.string(),
                  "worker",
                  "compile",
                  "--connect",
                  broker.endpoint(),
                  "--allow-compiler",
                  "g++",
                  "--work-dir",
                  dir.path().string()};
  // As on a host without bubblewrap.
  options.environment = {{"RPL_BWRAP", (dir / "no-bwrap").string()}};
  auto refused = workers::run_child(options, 60s);
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("compilers cannot be sandboxed"), std::string::npos)
      << refused.output;
  EXPECT_NE(refused.output.find("fix: "), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("--no-sandbox"), std::string::npos) << refused.output;

  options.argv.push_back("--no-sandbox");
  auto worker = workers::child_process::spawn(options);
  ASSERT_TRUE(worker.launched());
  EXPECT_TRUE(broker.expect(messages::message_kind::ready, 60s).has_value());
  ::kill(worker.pid(), SIGTERM);
  EXPECT_EQ(worker.finish().exit_code, 0);
}

TEST(worker_sandbox, local_workers_without_a_sandbox_warn_once_and_the_run_goes_on) {
  rpl::testing::temp_dir dir;
  const auto db = dir / "r.db";
  workers::child_options options;
  options.argv = {rpl::testing::rocm_perf.string(),
                  "autotune",
                  "--space",
                  rpl::testing::fixture("space-ok.json").string(),
                  "--source",
                  rpl::testing::fixture("candidate.cpp").string(),
                  "--build-template",
                  rpl::testing::fixture_build_template,
                  "--cmd-template",
                  "{BIN}",
                  "--runs",
                  "1",
                  "--warmup",
                  "0",
                  "--compile-workers",
                  "2",
                  "--db",
                  db.string()};
  options.environment = {{"RPL_BWRAP", (dir / "no-bwrap").string()}};
  options.max_output_bytes = 4u << 20;
  const auto outcome = workers::run_child(options, std::chrono::minutes(5));
  ASSERT_EQ(outcome.exit_code, 0) << outcome.output;
  EXPECT_EQ(rpl::testing::query_int(db, "SELECT COUNT(*) FROM candidates WHERE status='ok'"), 4);
  std::size_t warnings = 0;
  for (auto at = outcome.output.find("without a sandbox"); at != std::string::npos;
       at = outcome.output.find("without a sandbox", at + 1))
    ++warnings;
  EXPECT_EQ(warnings, 1u) << outcome.output;
}

TEST(worker_sandbox, local_workers_read_the_folders_the_users_own_template_names) {
  // A header library outside the job folder: remote workers need --allow-path for it; the
  // engine's own workers allow what its user's template names.
  rpl::testing::temp_dir dir;
  const auto include = dir / "vendor" / "include";
  fs::create_directories(include);
  rpl::testing::write_file(include / "vendor.h", "#define VENDOR_OK 1\n");
  rpl::testing::write_file(dir / "prelude.h", "#define PRELUDE_OK 1\n");
  rpl::testing::write_file(dir / "k.cpp", "#include <vendor.h>\n#if !VENDOR_OK || !PRELUDE_OK\n"
                                          "#error headers not read\n#endif\n"
                                          "int main() { return 0; }\n");
  rpl::testing::write_file(dir / "space.json", R"({"params": {"N": [1, 2]}})");
  const auto db = dir / "r.db";
  const auto outcome = rpl::testing::run_rocm_perf(
      {"autotune", "--space", (dir / "space.json").string(), "--source", (dir / "k.cpp").string(),
       "--build-template",
       "g++ -DN={N} -I" + include.string() + " -include " + (dir / "prelude.h").string() +
           " k.cpp -o {OUT}",
       "--cmd-template", "{BIN}", "--runs", "1", "--warmup", "0", "--db", db.string()});
  ASSERT_EQ(outcome.exit_code, 0) << outcome.output;
  EXPECT_EQ(rpl::testing::query_int(db, "SELECT COUNT(*) FROM candidates WHERE status='ok'"), 2);
}

} // namespace
} // namespace rpl
