// CurveZMQ on --listen (issue 13, item 1): `rocm-perf keys generate`, an engine that admits only
// the worker keys in its allow-list, and the refusals: an unlisted key, a plain (unauthenticated)
// client, TCP beyond loopback with no keys; a remote `worker propose` missing what it needs.
// Every socket here is loopback.
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>

#include "support/test_support.hpp"
#include "workers/process/child_process.hpp"

namespace rpl {
namespace {

using namespace std::chrono_literals;
using rpl::testing::fixture;
using rpl::testing::free_port;
using rpl::testing::query_int;
using rpl::testing::run_rocm_perf;
using rpl::testing::temp_dir;

/// `rocm-perf keys generate DIR`; returns the public key it printed.
std::string generate(const std::filesystem::path& dir) {
  const auto out = run_rocm_perf({"keys", "generate", dir.string()});
  EXPECT_EQ(out.exit_code, 0) << out.output;
  return rpl::testing::read_text(dir / "public.key").substr(0, 40);
}

workers::child_process start_worker(const std::string& endpoint,
                                    const std::vector<std::string>& extra) {
  workers::child_options options;
  options.argv = rpl::testing::remote_worker_argv(endpoint, {"--reconnect-ms", "100"});
  options.argv.insert(options.argv.end(), extra.begin(), extra.end());
  options.capture_output = false;
  return workers::child_process::spawn(options);
}

unsigned mode_of(const std::filesystem::path& file) {
  struct stat info {};
  ::stat(file.c_str(), &info);
  return info.st_mode & 0777;
}

TEST(remote_auth, keys_generate_writes_a_private_pair_and_never_overwrites) {
  temp_dir dir;
  const auto keys = dir / "engine";
  const auto out = run_rocm_perf({"keys", "generate", keys.string()});
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_EQ(mode_of(keys), 0700u);
  EXPECT_EQ(mode_of(keys / "secret.key"), 0600u);
  EXPECT_EQ(mode_of(keys / "public.key"), 0600u);
  const auto public_key = rpl::testing::read_text(keys / "public.key");
  EXPECT_EQ(public_key.size(), 41u); // 40 Z85 characters and a newline
  // The public key is printed on its own line (stdout), for the other side's configuration.
  EXPECT_NE(out.output.find(public_key), std::string::npos) << out.output;
  EXPECT_NE(rpl::testing::read_text(keys / "secret.key"), public_key);

  const auto again = run_rocm_perf({"keys", "generate", keys.string()});
  EXPECT_EQ(again.exit_code, 2) << again.output;
  EXPECT_NE(again.output.find("never overwritten"), std::string::npos) << again.output;
  EXPECT_EQ(rpl::testing::read_text(keys / "public.key"), public_key);
}

TEST(remote_auth, a_listed_worker_compiles_and_unlisted_or_plain_peers_are_refused) {
  temp_dir dir;
  generate(dir / "engine");
  const auto listed = generate(dir / "listed");
  generate(dir / "unlisted");
  rpl::testing::write_file(dir / "allow", "# workers admitted\n" + listed + " build-host-1\n");
  const auto db = dir / "r.db";
  const auto endpoint = "tcp://127.0.0.1:" + std::to_string(free_port());
  auto args = rpl::testing::remote_sweep_args(db);
  args.insert(args.end(), {"--listen", endpoint, "--curve-keys", (dir / "engine").string(),
                           "--allow-keys", (dir / "allow").string(), "--json"});
  workers::child_options engine_options;
  engine_options.argv = {rpl::testing::rocm_perf.string()};
  engine_options.argv.insert(engine_options.argv.end(), args.begin(), args.end());
  engine_options.max_output_bytes = 4u << 20;
  auto engine = workers::child_process::spawn(engine_options);
  ASSERT_TRUE(engine.launched());

  const auto server_key = (dir / "engine" / "public.key").string();
  // The intruders come first: a worker whose key is not listed, and one with no CURVE at all.
  auto unlisted = start_worker(
      endpoint, {"--curve-keys", (dir / "unlisted").string(), "--server-key", server_key});
  auto plain = start_worker(endpoint, {"--insecure"}); // an attacker's client has no keys
  ASSERT_TRUE(unlisted.launched());
  ASSERT_TRUE(plain.launched());
  std::this_thread::sleep_for(1500ms);
  auto good = start_worker(endpoint,
                           {"--curve-keys", (dir / "listed").string(), "--server-key", server_key});
  ASSERT_TRUE(good.launched());

  const auto outcome = engine.finish();
  ASSERT_EQ(outcome.exit_code, 0) << outcome.output;
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM candidates WHERE status='ok'"), 4);
  // Every artifact came from the listed worker (named host:pid).
  const auto worker_ids = rpl::testing::query_texts(db, "SELECT DISTINCT worker_id FROM artifacts");
  ASSERT_EQ(worker_ids.size(), 1u);
  EXPECT_EQ(std::stoi(worker_ids[0].substr(worker_ids[0].rfind(':') + 1)), good.pid());

  const auto start = outcome.output.find("{\n");
  ASSERT_NE(start, std::string::npos) << outcome.output;
  const auto doc = nlohmann::json::parse(outcome.output.substr(start));
  EXPECT_GE(doc["broker"]["peers_admitted"].get<int>(), 1);
  // The unlisted key is refused by the ZAP handler, the plain client by the handshake; each
  // retries, so at least two refusals.
  EXPECT_GE(doc["broker"]["peers_refused"].get<int>(), 2);
  EXPECT_EQ(doc["broker"]["workers_seen"].get<int>(), 1);
  EXPECT_NE(outcome.output.find("not in the allow-list"), std::string::npos);
  EXPECT_NE(outcome.output.find("handshake failed"), std::string::npos);

  for (auto* worker : {&unlisted, &plain, &good}) {
    ::kill(worker->pid(), SIGTERM);
    EXPECT_EQ(worker->finish().exit_code, 0);
  }
}

TEST(remote_auth, tcp_beyond_loopback_needs_keys_or_insecure) {
  temp_dir dir;
  auto args = rpl::testing::remote_sweep_args(dir / "r.db");
  args.insert(args.end(), {"--listen", "tcp://0.0.0.0:" + std::to_string(free_port())});
  const auto out = run_rocm_perf(args);
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("without CURVE keys"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("--curve-keys"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("--insecure"), std::string::npos) << out.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "r.db"));
}

TEST(remote_auth, bad_key_arguments_are_bad_input) {
  temp_dir dir;
  generate(dir / "engine");
  rpl::testing::write_file(dir / "allow", "not-a-key\n");
  const auto endpoint = "tcp://127.0.0.1:" + std::to_string(free_port());
  auto base = rpl::testing::remote_sweep_args(dir / "r.db");
  base.insert(base.end(), {"--listen", endpoint});

  auto half = base;
  half.insert(half.end(), {"--curve-keys", (dir / "engine").string()});
  auto out = run_rocm_perf(half);
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("--allow-keys"), std::string::npos) << out.output;

  auto bad_list = base;
  bad_list.insert(bad_list.end(), {"--curve-keys", (dir / "engine").string(), "--allow-keys",
                                   (dir / "allow").string()});
  out = run_rocm_perf(bad_list);
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("allow:1"), std::string::npos) << out.output;

  rpl::testing::write_file(dir / "allow", "# nobody\n");
  out = run_rocm_perf(bad_list);
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("lists no key"), std::string::npos) << out.output;

  ::chmod((dir / "engine" / "secret.key").c_str(), 0644);
  rpl::testing::write_file(dir / "allow", generate(dir / "w") + "\n");
  out = run_rocm_perf(bad_list);
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("chmod 600"), std::string::npos) << out.output;

  out = run_rocm_perf(
      {"worker", "compile", "--connect", endpoint, "--curve-keys", (dir / "w").string()});
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("--server-key"), std::string::npos) << out.output;
}

TEST(remote_auth, a_remote_proposer_with_missing_arguments_is_bad_input_at_once) {
  // A proposer started by hand on another host must not connect and then fail every job: what it
  // lacks is named before it connects.
  temp_dir dir;
  generate(dir / "p");
  const auto endpoint = "tcp://127.0.0.1:" + std::to_string(free_port());
  const std::vector<std::string> llm = {"--llm-endpoint", "http://127.0.0.1:9/v1", "--llm-model",
                                        "m"};
  auto half =
      std::vector<std::string>{"worker",    "propose", "--kind",       "llm",
                               "--connect", endpoint,  "--curve-keys", (dir / "p").string()};
  half.insert(half.end(), llm.begin(), llm.end());
  auto out = run_rocm_perf(half, 20s);
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("--server-key"), std::string::npos) << out.output;

  out = run_rocm_perf(
      {"worker", "propose", "--kind", "llm", "--connect", endpoint, "--llm-model", "m"}, 20s);
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("--kind llm needs --llm-endpoint URL and --llm-model NAME"),
            std::string::npos)
      << out.output;

  out = run_rocm_perf({"worker", "propose", "--kind", "llm", "--connect", endpoint, "--server-key",
                       (dir / "p" / "public.key").string(), "--curve-keys",
                       (dir / "nowhere").string(), "--llm-endpoint", "http://127.0.0.1:9/v1",
                       "--llm-model", "m"},
                      20s);
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("nowhere"), std::string::npos) << out.output;
}

} // namespace
} // namespace rpl
