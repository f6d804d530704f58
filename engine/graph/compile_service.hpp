#pragma once
/// The compile seam as the graph sees it: queue a request, get exactly one reply later on another
/// thread. The broker (engine/broker/) serves it with worker processes; tests use a fake
/// (tests/support/fake_compile_service.hpp).

#include <functional>
#include <string>
#include <utility>

#include "engine/store/artifact_store.hpp"
#include "messages/wire.hpp"

namespace rpl::engine {

class compile_service {
public:
  using reply_fn = std::function<void(const messages::compile_reply&)>;
  /// A reply, and where the service stored its artifact already (nullptr when it did not).
  using stored_reply_fn =
      std::function<void(const messages::compile_reply&, const artifact_store::stored*)>;
  virtual ~compile_service() = default;
  /// Thread-safe. `on_reply` runs exactly once, on a thread of the service, with the reply or a
  /// failure status (worker lost, engine stopping). Throws only when the request cannot be queued.
  virtual void submit(messages::compile_request request, reply_fn on_reply) = 0;
  /// submit() for a caller that stores artifacts (the tuning graph's compile room): a service that
  /// stores them itself (the artifact cache) says where, so that nothing is stored twice. By
  /// default the service stored nothing.
  virtual void submit_storing(messages::compile_request request, stored_reply_fn on_reply) {
    submit(std::move(request),
           [on_reply = std::move(on_reply)](const messages::compile_reply& reply) {
             on_reply(reply, nullptr);
           });
  }
};

} // namespace rpl::engine
