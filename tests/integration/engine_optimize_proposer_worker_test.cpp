// Proposers as processes: the engine's broker hands a proposer job to a real `rocm-perf worker
// propose --kind rule` process over its ipc:// socket, and the reply's proposals are diffs that
// apply to the source sent. A job of a kind no worker serves times out with the reason.

#include <chrono>
#include <future>
#include <string>

#include <gtest/gtest.h>

#include "engine/broker/broker.hpp"
#include "engine/broker/local_workers.hpp"
#include "stages/optimize/unified_diff.hpp"
#include "support/test_support.hpp"
#include "workers/source/clang_source.hpp"

namespace rpl::engine {
namespace {

using rpl::testing::source_dir;

messages::propose_reply ask(broker& b, const std::string& kind, messages::propose_request request) {
  auto promise = std::make_shared<std::promise<messages::propose_reply>>();
  auto future = promise->get_future();
  b.submit_proposal("t", kind, std::move(request),
                    [promise](const messages::propose_reply& reply) { promise->set_value(reply); });
  return future.get();
}

TEST(proposer_worker, a_rule_worker_process_answers_with_diffs_that_apply) {
  std::string why;
  if (!workers::libclang_available(why)) {
    GTEST_SKIP() << "the rule proposer needs libclang: " << why;
  }
  rpl::testing::temp_dir dir;
  broker_config config;
  config.bind_endpoints = {"ipc://" + (dir.path() / "b.ipc").string()};
  config.heartbeat = std::chrono::milliseconds(200);
  broker b(config);
  b.start();
  local_workers_config workers_config;
  workers_config.executable = rpl::testing::rocm_perf;
  workers_config.endpoint = config.bind_endpoints.front();
  workers_config.heartbeat = config.heartbeat;
  workers_config.command = {"worker", "propose", "--kind", "rule"};
  local_workers pool(workers_config);
  pool.start();

  messages::propose_request request;
  request.kernel = "rpl_sgemm_tiled";
  request.source_name = "gemm.cu";
  request.source = rpl::testing::read_text(source_dir / "examples/cuda/gemm.cu");
  request.language = "cuda";
  request.block_threads = 256;
  request.timeout_ms = 60000;
  const auto reply = ask(b, "rule", request);
  ASSERT_EQ(reply.status, messages::propose_status::ok) << reply.error;
  EXPECT_EQ(reply.proposer, "rule");
  EXPECT_FALSE(reply.worker_id.empty());
  ASSERT_FALSE(reply.proposals.empty());
  for (const auto& p : reply.proposals) {
    const auto patched = stages::optimize::apply_unified_diff(request.source, p.diff);
    EXPECT_TRUE(patched.ok) << p.id << ": " << patched.error;
    EXPECT_NE(patched.text, request.source) << p.id;
  }

  // History: what was tried is not proposed again.
  for (const auto& p : reply.proposals) {
    request.history.push_back({p.id, p.title, p.diff, "measurement", "slower", ""});
  }
  const auto again = ask(b, "rule", request);
  ASSERT_EQ(again.status, messages::propose_status::ok) << again.error;
  for (const auto& p : again.proposals) {
    for (const auto& h : request.history) {
      EXPECT_NE(p.id, h.proposal_id);
    }
  }
  pool.stop();
  b.stop();
}

TEST(proposer_worker, a_kind_nobody_serves_times_out_with_the_reason) {
  rpl::testing::temp_dir dir;
  broker_config config;
  config.bind_endpoints = {"ipc://" + (dir.path() / "b.ipc").string()};
  broker b(config);
  b.start();
  messages::propose_request request;
  request.kernel = "k";
  request.timeout_ms = 300;
  const auto started = std::chrono::steady_clock::now();
  const auto reply = ask(b, "llm", request);
  EXPECT_EQ(reply.status, messages::propose_status::timed_out);
  EXPECT_NE(reply.error.find("no proposer worker of that kind"), std::string::npos) << reply.error;
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
  b.stop();
}

} // namespace
} // namespace rpl::engine
