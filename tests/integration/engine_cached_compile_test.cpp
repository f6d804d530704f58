// The artifact cache in front of a compile service (engine/autotune/cached_compile_service.hpp),
// with a real results store and artifact folder and the fake compile service.
#include <fstream>
#include <future>

#include <gtest/gtest.h>

#include "engine/autotune/cached_compile_service.hpp"
#include "support/fake_compile_service.hpp"
#include "support/test_support.hpp"

namespace rpl::engine {
namespace {

using rpl::testing::temp_dir;

messages::compile_request request(const std::string& source, const std::string& flag) {
  messages::compile_request r;
  r.sources = {{"k.cpp", source}};
  r.argv = {"g++", flag, "k.cpp", "-o", "{OUT}"};
  r.toolchain_id = "g++ 12.2.0";
  return r;
}

TEST(build_key, covers_sources_argv_and_toolchain_and_nothing_else) {
  const auto base = build_key(request("int main(){}", "-O2"));
  EXPECT_EQ(base, build_key(request("int main(){}", "-O2")));
  EXPECT_NE(base, build_key(request("int main(){return 0;}", "-O2")));
  EXPECT_NE(base, build_key(request("int main(){}", "-O3")));
  auto renamed = request("int main(){}", "-O2");
  renamed.sources[0].name = "j.cpp";
  EXPECT_NE(base, build_key(renamed));
  auto other_compiler = request("int main(){}", "-O2");
  other_compiler.toolchain_id = "g++ 13.1.0";
  EXPECT_NE(base, build_key(other_compiler));
  // Field boundaries count: "ab"+"c" is not "a"+"bc".
  auto split = request("int main(){}", "-O2");
  split.argv = {"g++", "-O", "2k.cpp", "-o", "{OUT}"};
  EXPECT_NE(build_key(split), build_key(request("int main(){}", "-O2")));
  auto later = request("int main(){}", "-O2");
  later.deadline_ms = 1;
  later.max_output_bytes = 1;
  EXPECT_EQ(base, build_key(later));
}

class cached_compile : public ::testing::Test {
protected:
  /// Submits and waits for the one reply.
  messages::compile_reply compile(cached_compile_service& service,
                                  const messages::compile_request& r) {
    std::promise<messages::compile_reply> got;
    auto future = got.get_future();
    service.submit(r, [&got](const messages::compile_reply& reply) { got.set_value(reply); });
    return future.get();
  }
  temp_dir dir_;
  results_store store_{dir_ / "r.db"};
  artifact_store artifacts_{dir_ / "r.db.artifacts"};
  /// Builds the source's bytes (with a warning); a source "fail" does not build.
  rpl::testing::fake_compile_service inner_{[](const messages::compile_request& r) {
    auto reply = rpl::testing::fake_compile_service::ok_with_argv_artifact(r);
    reply.output = "warning: " + r.sources.at(0).content;
    reply.artifact.insert(reply.artifact.end(), r.sources.at(0).content.begin(),
                          r.sources.at(0).content.end());
    if (r.sources.at(0).content == "fail") {
      reply.status = messages::compile_status::failed;
      reply.has_artifact = false;
      reply.artifact.clear();
    }
    return reply;
  }};
};

TEST_F(cached_compile, a_second_request_for_a_build_compiles_nothing) {
  cached_compile_service service(inner_, store_, artifacts_, true);
  const auto first = compile(service, request("a", "-O2"));
  ASSERT_EQ(first.status, messages::compile_status::ok);
  EXPECT_EQ(inner_.submitted(), 1u);
  const auto second = compile(service, request("a", "-O2"));
  EXPECT_EQ(inner_.submitted(), 1u);
  EXPECT_EQ(second.status, messages::compile_status::ok);
  EXPECT_TRUE(second.has_artifact);
  EXPECT_EQ(second.artifact, first.artifact);
  EXPECT_EQ(second.output, first.output);
  EXPECT_EQ(second.worker_id, "cache:" + first.worker_id);
  EXPECT_EQ(service.hits(), 1u);
  EXPECT_EQ(service.misses(), 1u);
  // Another build, and a service over the same store (a later run), which still hits.
  compile(service, request("b", "-O2"));
  EXPECT_EQ(inner_.submitted(), 2u);
  cached_compile_service later(inner_, store_, artifacts_, true);
  compile(later, request("b", "-O2"));
  EXPECT_EQ(inner_.submitted(), 2u);
  // Disabled: compiled again.
  cached_compile_service disabled(inner_, store_, artifacts_, false);
  compile(disabled, request("b", "-O2"));
  EXPECT_EQ(inner_.submitted(), 3u);
}

TEST_F(cached_compile, a_changed_or_missing_artifact_is_built_again) {
  cached_compile_service service(inner_, store_, artifacts_, true);
  const auto first = compile(service, request("a", "-O2"));
  ASSERT_TRUE(first.has_artifact);
  const auto entry = store_.find_compile(build_key(request("a", "-O2")));
  ASSERT_TRUE(entry);
  const auto path = artifacts_.dir() / entry->artifact_hash;
  {
    std::ofstream out(path, std::ios::app | std::ios::binary);
    out << "tampered";
  }
  const auto rebuilt = compile(service, request("a", "-O2"));
  EXPECT_EQ(inner_.submitted(), 2u);
  // The changed file is gone and the rebuilt artifact is under its name again.
  EXPECT_EQ(rpl::testing::read_text(path),
            std::string(rebuilt.artifact.begin(), rebuilt.artifact.end()));
  std::filesystem::remove(path);
  compile(service, request("a", "-O2"));
  EXPECT_EQ(inner_.submitted(), 3u);
  EXPECT_EQ(service.hits(), 0u);
}

TEST_F(cached_compile, failed_builds_are_not_cached) {
  cached_compile_service service(inner_, store_, artifacts_, true);
  const auto first = compile(service, request("fail", "-O2"));
  ASSERT_EQ(first.status, messages::compile_status::failed);
  EXPECT_FALSE(store_.find_compile(build_key(request("fail", "-O2"))));
  compile(service, request("fail", "-O2"));
  EXPECT_EQ(inner_.submitted(), 2u);
}

} // namespace
} // namespace rpl::engine
