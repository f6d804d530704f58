#pragma once
/// The artifact cache in front of a compile service (issue 13): a request whose build key
/// (source names and contents, build argv after the space's substitution, toolchain identity) was
/// built before into this results database is answered from `<db>.artifacts/` with the stored
/// reply, and compiles nothing; a miss goes to the inner service (the broker), and its artifact is
/// remembered when the build succeeds. Only successful builds are cached (a failure may be
/// transient). A cached artifact whose file is missing or whose bytes no longer hash to its name is
/// a miss, logged, and rebuilt. Hits are answered on the service's own thread, as the
/// compile_service contract asks.

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "engine/graph/compile_service.hpp"
#include "engine/store/artifact_store.hpp"
#include "engine/store/results_store.hpp"

namespace rpl::engine {

/// The cache's key for one request: content_hash of a length-prefixed serialization of the
/// sources (name, bytes), the argv and the toolchain identity. Deadlines and output limits are not
/// part of it: they do not change what is built.
std::string build_key(const messages::compile_request& request);

class cached_compile_service final : public compile_service {
public:
  /// `enabled` false: every request is compiled (--no-compile-cache); successes are still
  /// remembered, so a later run can use them.
  cached_compile_service(compile_service& inner,
                         results_store& store,
                         const artifact_store& artifacts,
                         bool enabled);
  ~cached_compile_service() override; ///< answers every pending hit first
  cached_compile_service(const cached_compile_service&) = delete;
  cached_compile_service& operator=(const cached_compile_service&) = delete;

  void submit(messages::compile_request request, reply_fn on_reply) override;
  /// The artifact of a hit, or of a successful build, is in the artifact store already: the reply
  /// says where.
  void submit_storing(messages::compile_request request, stored_reply_fn on_reply) override;

  std::uint64_t hits() const { return hits_; }     ///< requests answered from the cache
  std::uint64_t misses() const { return misses_; } ///< requests sent to the inner service

private:
  void answer_hits();

  compile_service& inner_;
  results_store& store_;
  const artifact_store& artifacts_;
  bool enabled_;
  std::atomic<std::uint64_t> hits_{0};
  std::atomic<std::uint64_t> misses_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
  struct hit {
    messages::compile_reply reply;
    artifact_store::stored stored;
    stored_reply_fn on_reply;
  };
  std::deque<hit> pending_;
  bool stopping_ = false;
  std::thread thread_;
};

} // namespace rpl::engine
