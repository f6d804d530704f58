// The compile worker against a broker played by the test: a real ROUTER socket on ipc:// in a
// private temp dir, the worker in a thread of this process (docs/protocol.md is the contract).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>
#include <stdlib.h>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "messages/codec.hpp"
#include "support/fake_broker.hpp"
#include "workers/compile/compile_worker.hpp"
#include "workers/compilers/toolchain_identity.hpp"

namespace rpl::workers {
namespace {

using namespace std::chrono_literals;

/// How long a worker may take to say READY: it identifies every allow-listed compiler first
/// (`--version` of each; hipcc is a Python script), which takes seconds under ASan on a busy host.
constexpr auto ready_wait = std::chrono::seconds(30);
using messages::compile_status;
using messages::message_kind;
using rpl::testing::broker_message;
using rpl::testing::fake_broker;
using steady = std::chrono::steady_clock;

/// run_compile_worker in a thread; stopped and joined on destruction.
class worker_thread {
public:
  explicit worker_thread(compile_worker_options options) : options_(std::move(options)) {
    thread_ = std::thread([this] { result_ = run_compile_worker(options_, stop_); });
  }
  ~worker_thread() { stop(); }
  int stop() {
    stop_ = true;
    if (thread_.joinable())
      thread_.join();
    return result_;
  }

private:
  compile_worker_options options_;
  std::atomic<bool> stop_{false};
  std::atomic<int> result_{-1};
  std::thread thread_;
};

compile_worker_options fast_options(const fake_broker& broker) {
  compile_worker_options options;
  options.endpoint = broker.endpoint();
  options.heartbeat = 50ms;
  options.liveness = 3;
  options.reconnect_initial = 50ms;
  options.reconnect_max = 400ms;
  options.slots = 1; // one job at a time, as the busy tests expect; slots are tested on their own
  return options;
}

messages::compile_request gxx_request(const std::string& source) {
  messages::compile_request request;
  request.sources = {{"main.cpp", source}};
  request.argv = {"g++", "-O0", "-o", "{OUT}", "main.cpp"};
  request.toolchain_id = "g++";
  request.deadline_ms = 60000;
  return request;
}

messages::compile_reply decode_reply(const broker_message& message) {
  return messages::decode<messages::compile_reply>(message.body);
}

TEST(workers_compile_worker, ready_describes_the_worker) {
  fake_broker broker;
  worker_thread worker(fast_options(broker));
  const auto ready = broker.expect(message_kind::ready, ready_wait);
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->env.job_id, 0u);
  const auto body = messages::decode<messages::ready>(ready->body);
  EXPECT_EQ(body.service, "compile");
  EXPECT_EQ(body.pid, ::getpid());
  EXPECT_EQ(body.worker_id, body.host + ":" + std::to_string(body.pid));
  EXPECT_EQ(body.heartbeat_ms, 50u);
  EXPECT_EQ(body.compilers, compile_worker_options{}.allowed_compilers);
}

TEST(workers_compile_worker, streams_the_artifact_in_bounded_chunks_and_refuses_one_too_large) {
  fake_broker broker;
  worker_thread worker(fast_options(broker));
  ASSERT_TRUE(broker.expect(message_kind::ready, ready_wait));
  auto request = gxx_request("int main() { return 0; }\n");
  request.chunk_bytes = 4096;
  broker.send(broker.worker, 8, request, "run-c");
  std::vector<char> assembled;
  std::uint32_t chunks = 0;
  for (;;) {
    const auto next =
        broker.expect_any({message_kind::artifact_chunk, message_kind::compile_reply}, 30s);
    ASSERT_TRUE(next);
    EXPECT_EQ(next->env.job_id, 8u);
    if (next->env.kind == message_kind::compile_reply) {
      const auto body = decode_reply(*next);
      EXPECT_EQ(body.status, compile_status::ok) << body.error;
      EXPECT_TRUE(body.has_artifact);
      EXPECT_TRUE(body.artifact.empty()) << "the bytes came in the chunks";
      EXPECT_EQ(body.artifact_bytes, assembled.size());
      EXPECT_EQ(body.artifact_chunks, chunks);
      break;
    }
    const auto chunk = messages::decode<messages::artifact_chunk>(next->body);
    EXPECT_EQ(chunk.offset, assembled.size());
    EXPECT_LE(chunk.bytes.size(), 4096u);
    assembled.insert(assembled.end(), chunk.bytes.begin(), chunk.bytes.end());
    ++chunks;
  }
  EXPECT_GT(chunks, 1u);
  ASSERT_GT(assembled.size(), 4u);
  EXPECT_EQ(std::string(assembled.begin(), assembled.begin() + 4), "\x7f"
                                                                   "ELF");
  // Over the engine's limit: nothing is sent but the reason.
  request.max_artifact_bytes = 1000;
  broker.send(broker.worker, 9, request, "run-c");
  const auto refused = broker.expect(message_kind::compile_reply, 30s);
  ASSERT_TRUE(refused);
  const auto body = decode_reply(*refused);
  EXPECT_EQ(body.status, compile_status::too_large);
  EXPECT_FALSE(body.has_artifact);
  EXPECT_NE(body.error.find("exceeds the engine's limit of 1000 bytes"), std::string::npos)
      << body.error;
}

TEST(workers_compile_worker, removes_job_folders_that_killed_workers_left_and_keeps_the_others) {
  fake_broker broker;
  auto options = fast_options(broker);
  char pattern[] = "/tmp/rpl-work-root-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  const std::filesystem::path root(pattern);
  options.work_root = root;
  // A pid that has exited (a child reaped just now), and one that lives (this process's parent).
  const pid_t dead = ::fork();
  if (dead == 0)
    ::_exit(0);
  ASSERT_GT(dead, 0);
  ::waitpid(dead, nullptr, 0);
  const auto orphan = root / ("rpl-job-" + std::to_string(dead) + "-7-abcdef");
  const auto alive = root / ("rpl-job-" + std::to_string(::getppid()) + "-7-abcdef");
  const auto older = root / "rpl-job-7-abcdef"; // no pid: nothing tells whether it is in use
  for (const auto& dir : {orphan, alive, older}) {
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "partial.o") << "x";
  }
  {
    worker_thread worker(options);
    ASSERT_TRUE(broker.expect(message_kind::ready, ready_wait));
  }
  EXPECT_FALSE(std::filesystem::exists(orphan));
  EXPECT_TRUE(std::filesystem::exists(alive));
  EXPECT_TRUE(std::filesystem::exists(older));
  std::filesystem::remove_all(root);
}

TEST(workers_compile_worker, compiles_a_tiny_program) {
  fake_broker broker;
  worker_thread worker(fast_options(broker));
  ASSERT_TRUE(broker.expect(message_kind::ready, ready_wait));
  // A malformed message first: the worker must drop it and carry on.
  broker.send_raw(broker.worker, {"NOTRPL", "x", "y"});
  broker.send(broker.worker, 7, gxx_request("int main() { return 0; }\n"), "run-a");
  const auto reply = broker.expect(message_kind::compile_reply, 30s);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->env.job_id, 7u);
  EXPECT_EQ(reply->env.run_id, "run-a");
  const auto body = decode_reply(*reply);
  EXPECT_EQ(body.status, compile_status::ok) << body.error << body.output;
  EXPECT_TRUE(body.has_artifact);
  ASSERT_GT(body.artifact.size(), 4u);
  EXPECT_EQ(std::string(body.artifact.begin(), body.artifact.begin() + 4), "\x7f"
                                                                           "ELF");
  EXPECT_EQ(body.exit_code, 0);
  EXPECT_GT(body.compile_ns, 0);
  EXPECT_FALSE(body.worker_id.empty());
}

TEST(workers_compile_worker, compile_error_is_failed_with_output) {
  fake_broker broker;
  worker_thread worker(fast_options(broker));
  ASSERT_TRUE(broker.expect(message_kind::ready, ready_wait));
  broker.send(broker.worker, 8, gxx_request("int main( { return 0; }\n"));
  const auto reply = broker.expect(message_kind::compile_reply, 30s);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->env.job_id, 8u);
  const auto body = decode_reply(*reply);
  EXPECT_EQ(body.status, compile_status::failed);
  EXPECT_EQ(body.exit_code, 1);
  EXPECT_EQ(body.error, "g++ exited with status 1");
  EXPECT_NE(body.output.find("error"), std::string::npos) << body.output;
  EXPECT_FALSE(body.has_artifact);
}

TEST(workers_compile_worker, disallowed_compiler_is_rejected) {
  fake_broker broker;
  worker_thread worker(fast_options(broker));
  ASSERT_TRUE(broker.expect(message_kind::ready, ready_wait));
  messages::compile_request request;
  request.argv = {"sh", "-c", "echo pwned"};
  broker.send(broker.worker, 9, request);
  const auto reply = broker.expect(message_kind::compile_reply, 3s);
  ASSERT_TRUE(reply);
  const auto body = decode_reply(*reply);
  EXPECT_EQ(body.status, compile_status::rejected);
  EXPECT_NE(body.error.find("'sh'"), std::string::npos) << body.error;
  EXPECT_NE(body.error.find("g++"), std::string::npos) << body.error;
  EXPECT_NE(body.error.find("--allow-compiler"), std::string::npos) << body.error;
}

TEST(workers_compile_worker, a_program_named_like_a_compiler_elsewhere_is_refused_unrun) {
  // The first probe: a script named g++ in a folder the engine chose.
  char pattern[] = "/tmp/rpl-rogue-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  const std::filesystem::path dir(pattern);
  const auto marker = dir / "ran";
  std::ofstream(dir / "g++") << "#!/bin/sh\ntouch " << marker.string() << "\n";
  std::filesystem::permissions(dir / "g++", std::filesystem::perms::owner_all);
  fake_broker broker;
  worker_thread worker(fast_options(broker));
  ASSERT_TRUE(broker.expect(message_kind::ready, ready_wait));
  auto request = gxx_request("int main() {}");
  request.argv.front() = (dir / "g++").string();
  request.match_toolchain = true; // identifying it would run it: it must not be identified either
  broker.send(broker.worker, 90, request);
  const auto reply = broker.expect(message_kind::compile_reply, 30s);
  ASSERT_TRUE(reply);
  const auto body = decode_reply(*reply);
  EXPECT_EQ(body.status, compile_status::rejected) << body.error;
  EXPECT_NE(body.error.find("is not the file of an allowed compiler"), std::string::npos)
      << body.error;
  EXPECT_NE(body.error.find("--allow-compiler " + (dir / "g++").string()), std::string::npos)
      << body.error;
  EXPECT_FALSE(std::filesystem::exists(marker));
  // The same compiler by its real path is this worker's g++: it compiles.
  request.argv.front() = "/usr/bin/g++";
  request.match_toolchain = false;
  broker.send(broker.worker, 91, request);
  const auto real = broker.expect(message_kind::compile_reply, 30s);
  ASSERT_TRUE(real);
  EXPECT_EQ(decode_reply(*real).status, compile_status::ok) << decode_reply(*real).error;
  std::filesystem::remove_all(dir);
}

TEST(workers_compile_worker, a_refused_flag_is_rejected_by_name_before_anything_runs) {
  char pattern[] = "/tmp/rpl-rogue-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  const std::filesystem::path dir(pattern);
  fake_broker broker;
  worker_thread worker(fast_options(broker));
  ASSERT_TRUE(broker.expect(message_kind::ready, ready_wait));
  std::uint64_t job = 100;
  for (const auto& [argv, named] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"g++", "-wrapper", "/bin/sh,-c,touch " + (dir / "ran").string(), "main.cpp"},
            "refused flag -wrapper: runs another program"},
           {{"g++", "main.cpp", "-o", (dir / "out").string()},
            "refused flag -o " + (dir / "out").string() + ": "},
           {{"g++", "@/etc/passwd"}, "refused flag @/etc/passwd: is a response file"}}) {
    auto request = gxx_request("int main() {}");
    request.argv = argv;
    broker.send(broker.worker, ++job, request);
    const auto reply = broker.expect(message_kind::compile_reply, 30s);
    ASSERT_TRUE(reply);
    const auto body = decode_reply(*reply);
    EXPECT_EQ(body.status, compile_status::rejected) << body.error;
    EXPECT_EQ(body.error.rfind(named, 0), 0u) << body.error;
    EXPECT_TRUE(body.output.empty()) << body.output;
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir));
  std::filesystem::remove_all(dir);
}

TEST(workers_compile_worker, unsafe_source_names_are_rejected) {
  fake_broker broker;
  worker_thread worker(fast_options(broker));
  ASSERT_TRUE(broker.expect(message_kind::ready, ready_wait));
  std::uint64_t job = 20;
  for (const std::string name : {"../evil.cpp", "/etc/evil.cpp", "", "a/../../b.cpp"}) {
    auto request = gxx_request("int main() {}");
    request.sources.push_back({name, "x"});
    broker.send(broker.worker, ++job, request);
    const auto reply = broker.expect(message_kind::compile_reply, 3s);
    ASSERT_TRUE(reply) << name;
    EXPECT_EQ(reply->env.job_id, job);
    const auto body = decode_reply(*reply);
    EXPECT_EQ(body.status, compile_status::rejected) << name;
    EXPECT_NE(body.error.find("source name"), std::string::npos) << body.error;
  }
}

TEST(workers_compile_worker, artifact_is_optional_without_out) {
  fake_broker broker;
  auto options = fast_options(broker);
  options.allowed_compilers = {"true"};
  worker_thread worker(options);
  ASSERT_TRUE(broker.expect(message_kind::ready, ready_wait));

  messages::compile_request request;
  request.sources = {{"sub/dir/file.txt", "hello"}};
  request.argv = {"true"};
  broker.send(broker.worker, 30, request);
  auto reply = broker.expect(message_kind::compile_reply, 3s);
  ASSERT_TRUE(reply);
  auto body = decode_reply(*reply);
  EXPECT_EQ(body.status, compile_status::ok) << body.error;
  EXPECT_FALSE(body.has_artifact);

  request.argv = {"true", "-o", "{OUT}"};
  broker.send(broker.worker, 31, request);
  reply = broker.expect(message_kind::compile_reply, 3s);
  ASSERT_TRUE(reply);
  body = decode_reply(*reply);
  EXPECT_EQ(body.status, compile_status::no_artifact);
  EXPECT_NE(body.error.find("{OUT}"), std::string::npos) << body.error;
}

TEST(workers_compile_worker, missing_compiler_is_an_internal_error) {
  fake_broker broker;
  auto options = fast_options(broker);
  options.allowed_compilers = {"rpl-no-such-compiler"};
  worker_thread worker(options);
  ASSERT_TRUE(broker.expect(message_kind::ready, ready_wait));
  messages::compile_request request;
  request.argv = {"rpl-no-such-compiler"};
  broker.send(broker.worker, 32, request);
  const auto reply = broker.expect(message_kind::compile_reply, 3s);
  ASSERT_TRUE(reply);
  const auto body = decode_reply(*reply);
  EXPECT_EQ(body.status, compile_status::internal_error);
  EXPECT_NE(body.error.find("execvp rpl-no-such-compiler"), std::string::npos) << body.error;
}

TEST(workers_compile_worker, deadline_kills_the_compiler_while_heartbeats_continue) {
  fake_broker broker;
  auto options = fast_options(broker);
  options.allowed_compilers = {"sleep"};
  worker_thread worker(options);
  ASSERT_TRUE(broker.expect(message_kind::ready, ready_wait));
  messages::compile_request request;
  request.argv = {"sleep", "30"};
  request.deadline_ms = 500;
  const auto sent = steady::now();
  broker.send(broker.worker, 40, request);
  const auto reply = broker.expect(message_kind::compile_reply, 5s);
  ASSERT_TRUE(reply);
  EXPECT_LT(reply->at - sent, 2s);
  const auto body = decode_reply(*reply);
  EXPECT_EQ(body.status, compile_status::timed_out);
  EXPECT_EQ(body.term_signal, SIGKILL);
  EXPECT_NE(body.error.find("compiler exceeded its deadline of 500 ms"), std::string::npos)
      << body.error;
  // 500 ms at one heartbeat per 50 ms: the worker stayed visibly alive throughout the job.
  EXPECT_GE(broker.count(message_kind::heartbeat, sent, reply->at), 5u);
  // It kept the same connection (no reconnect) and is ready for the next job.
  EXPECT_EQ(reply->identity, broker.worker);
  EXPECT_EQ(broker.count(message_kind::ready, sent, reply->at), 0u);
}

TEST(workers_compile_worker, second_request_while_busy_is_refused) {
  fake_broker broker;
  auto options = fast_options(broker);
  options.allowed_compilers = {"sleep"};
  worker_thread worker(options);
  ASSERT_TRUE(broker.expect(message_kind::ready, ready_wait));
  messages::compile_request request;
  request.argv = {"sleep", "0.3"};
  broker.send(broker.worker, 50, request);
  broker.send(broker.worker, 51, request);
  auto reply = broker.expect(message_kind::compile_reply, 3s);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->env.job_id, 51u);
  auto body = decode_reply(*reply);
  EXPECT_EQ(body.status, compile_status::internal_error);
  EXPECT_NE(body.error.find("worker busy"), std::string::npos);
  reply = broker.expect(message_kind::compile_reply, 3s);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->env.job_id, 50u);
  EXPECT_EQ(decode_reply(*reply).status, compile_status::ok);
}

TEST(workers_compile_worker, ready_names_slots_cores_memory_and_toolchains_and_slots_run_at_once) {
  fake_broker broker;
  auto options = fast_options(broker);
  options.allowed_compilers = {"sleep", "no-such-compiler-here"};
  options.slots = 2;
  worker_thread worker(options);
  const auto ready = broker.expect(message_kind::ready, ready_wait);
  ASSERT_TRUE(ready);
  const auto hello = messages::decode<messages::ready>(ready->body);
  EXPECT_EQ(hello.slots, 2u);
  EXPECT_GE(hello.cores, 1u);
  EXPECT_GT(hello.memory_available_bytes, 0u);
  // Only the compilers this host has, each with its resolved path, hash and id.
  ASSERT_EQ(hello.toolchains.size(), 1u);
  const auto& sleep = hello.toolchains.front();
  EXPECT_EQ(sleep.name, "sleep");
  EXPECT_TRUE(std::filesystem::path(sleep.path).is_absolute()) << sleep.path;
  EXPECT_EQ(sleep.hash.size(), 32u);
  EXPECT_EQ(sleep.id, workers::toolchain_id_of("sleep", sleep.version, sleep.hash));
  // Two slots: two 0.4 s jobs finish together, not one after the other.
  messages::compile_request request;
  request.argv = {"sleep", "0.4"};
  const auto sent = std::chrono::steady_clock::now();
  broker.send(broker.worker, 70, request);
  broker.send(broker.worker, 71, request);
  std::set<std::uint64_t> answered;
  for (int i = 0; i < 2; ++i) {
    const auto reply = broker.expect(message_kind::compile_reply, 3s);
    ASSERT_TRUE(reply);
    EXPECT_EQ(decode_reply(*reply).status, compile_status::ok);
    answered.insert(reply->env.job_id);
    if (i == 1) {
      EXPECT_LT(reply->at - sent, 750ms);
    }
  }
  EXPECT_EQ(answered, (std::set<std::uint64_t>{70, 71}));
}

TEST(workers_compile_worker, disconnect_makes_it_reconnect_on_a_new_socket) {
  fake_broker broker;
  auto options = fast_options(broker);
  options.allowed_compilers = {"sleep"};
  worker_thread worker(options);
  const auto first = broker.expect(message_kind::ready, ready_wait);
  ASSERT_TRUE(first);
  // A job in flight is killed, not answered: the broker re-queues it.
  messages::compile_request request;
  request.argv = {"sleep", "30"};
  broker.send(first->identity, 60, request);
  std::this_thread::sleep_for(50ms);
  broker.send(first->identity, 0, messages::disconnect{"test says go away"});
  const auto second = broker.expect(message_kind::ready, ready_wait);
  ASSERT_TRUE(second);
  EXPECT_NE(second->identity, first->identity);
  EXPECT_GE(second->at - first->at, 50ms);
  EXPECT_EQ(broker.count(message_kind::compile_reply, first->at, second->at), 0u);
  // The new connection works.
  broker.send(second->identity, 61, messages::compile_request{{}, {"sleep", "0"}, "", 5000, 1024});
  const auto reply = broker.expect(message_kind::compile_reply, 3s);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->env.job_id, 61u);
  EXPECT_EQ(decode_reply(*reply).status, compile_status::ok);
}

TEST(workers_compile_worker, silent_broker_is_presumed_dead_and_back_off_doubles) {
  fake_broker broker;
  broker.heartbeating = false;
  worker_thread worker(fast_options(broker));
  const auto first = broker.expect(message_kind::ready, ready_wait);
  ASSERT_TRUE(first);
  const auto second = broker.expect(message_kind::ready, ready_wait);
  ASSERT_TRUE(second);
  const auto third = broker.expect(message_kind::ready, ready_wait);
  ASSERT_TRUE(third);
  EXPECT_NE(second->identity, first->identity);
  EXPECT_NE(third->identity, second->identity);
  // liveness 3 x 50 ms of silence, then 50 ms back-off, then 100 ms.
  EXPECT_GE(second->at - first->at, 170ms); // 200 ms less receive jitter
  EXPECT_GE(third->at - second->at, 220ms); // 250 ms less receive jitter
  // The worker heartbeated while it waited.
  EXPECT_GE(broker.count(message_kind::heartbeat, first->at, second->at), 2u);
}

TEST(workers_compile_worker, heartbeats_keep_the_connection) {
  fake_broker broker;
  worker_thread worker(fast_options(broker));
  const auto first = broker.expect(message_kind::ready, ready_wait);
  ASSERT_TRUE(first);
  // Ten liveness windows with the broker heartbeating: no reconnect.
  EXPECT_FALSE(broker.expect(message_kind::ready, 1500ms));
  EXPECT_GE(broker.count(message_kind::heartbeat, first->at, steady::now()), 15u);
}

TEST(workers_compile_worker, stop_sends_disconnect_and_returns_zero) {
  fake_broker broker;
  auto options = fast_options(broker);
  options.allowed_compilers = {"sleep"};
  worker_thread worker(options);
  ASSERT_TRUE(broker.expect(message_kind::ready, ready_wait));
  messages::compile_request request;
  request.argv = {"sleep", "30"};
  broker.send(broker.worker, 70, request);
  std::this_thread::sleep_for(50ms);
  const auto stopping = steady::now();
  EXPECT_EQ(worker.stop(), 0);
  EXPECT_LT(steady::now() - stopping, 1s);
  const auto bye = broker.expect(message_kind::disconnect, 2s);
  ASSERT_TRUE(bye);
  EXPECT_EQ(messages::decode<messages::disconnect>(bye->body).reason, "worker stopping");
}

TEST(workers_compile_worker, bad_endpoint_is_a_startup_error) {
  std::atomic<bool> stop{false};
  compile_worker_options options;
  options.endpoint = "localhost:5555";
  EXPECT_THROW(run_compile_worker(options, stop), std::invalid_argument);
}

TEST(workers_compile_worker, compiler_allow_list_matches_basenames) {
  const std::vector<std::string> allowed = compile_worker_options{}.allowed_compilers;
  EXPECT_TRUE(compiler_allowed("g++", allowed));
  EXPECT_TRUE(compiler_allowed("/usr/bin/g++", allowed));
  EXPECT_TRUE(compiler_allowed("hipcc", allowed));
  EXPECT_FALSE(compiler_allowed("g++-12", allowed));
  EXPECT_FALSE(compiler_allowed("/usr/bin/g++/", allowed));
  EXPECT_FALSE(compiler_allowed("", allowed));
  EXPECT_TRUE(compiler_allowed("g++-12", {"g++-12"}));
  for (const std::string never : {"sh", "bash", "env", "/bin/sh", "/usr/bin/env"}) {
    EXPECT_FALSE(compiler_allowed(never, {"sh", "bash", "env"})) << never;
  }
}

} // namespace
} // namespace rpl::workers
