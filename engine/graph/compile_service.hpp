#pragma once
/// The compile seam as the graph sees it: queue a request, get exactly one reply later on another
/// thread. The broker (engine/broker/) serves it with worker processes; tests use a fake
/// (tests/support/fake_compile_service.hpp).

#include <functional>
#include <string>

#include "messages/wire.hpp"

namespace rpl::engine {

class compile_service {
public:
  using reply_fn = std::function<void(const messages::compile_reply&)>;
  virtual ~compile_service() = default;
  /// Thread-safe. `on_reply` runs exactly once, on a thread of the service, with the reply or a
  /// failure status (worker lost, engine stopping). Throws only when the request cannot be queued.
  virtual void submit(messages::compile_request request, reply_fn on_reply) = 0;
};

} // namespace rpl::engine
