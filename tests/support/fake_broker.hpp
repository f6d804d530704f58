#pragma once
/// The broker side of docs/protocol.md, just enough to drive one worker: a real ROUTER socket on
/// ipc:// in a private temp folder, played by the test (integration and system tests only: it
/// opens a socket). The worker may be a thread of the test (run_compile_worker) or a
/// `rocm-perf worker compile --connect endpoint()` process.

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <stdlib.h>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "messages/codec.hpp"

namespace rpl::testing {

using steady = std::chrono::steady_clock;

struct broker_message {
  std::string identity;
  messages::envelope env;
  std::string body;
  steady::time_point at;
};

/// The broker side of the protocol, just enough to drive one worker.
class fake_broker {
public:
  fake_broker() : router_(context_, zmq::socket_type::router) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "rpl-broker-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("mkdtemp failed");
    dir_ = pattern;
    endpoint_ = "ipc://" + (dir_ / "broker.ipc").string();
    router_.set(zmq::sockopt::linger, 0);
    router_.bind(endpoint_);
  }
  ~fake_broker() {
    router_.close();
    std::error_code error;
    std::filesystem::remove_all(dir_, error);
  }

  const std::string& endpoint() const { return endpoint_; }

  /// Sends HEARTBEAT to the worker every `heartbeat_every` while waiting, like a real broker.
  bool heartbeating = true;
  std::chrono::milliseconds heartbeat_every{50};
  /// Every message received so far, in order.
  std::vector<broker_message> seen;
  /// The identity of the worker's latest READY.
  std::string worker;

  /// Waits up to `timeout` for a message of `kind`; returns nullopt on timeout.
  std::optional<broker_message> expect(messages::message_kind kind,
                                       std::chrono::milliseconds timeout) {
    return expect_any({kind}, timeout);
  }
  /// The next message of any of these kinds.
  std::optional<broker_message> expect_any(std::vector<messages::message_kind> kinds,
                                           std::chrono::milliseconds timeout) {
    const auto until = steady::now() + timeout;
    for (;;) {
      const auto now = steady::now();
      if (now >= until)
        return std::nullopt;
      if (heartbeating && !worker.empty() && now - last_sent_ >= heartbeat_every) {
        send(worker, 0, messages::heartbeat{beat_++});
      }
      auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(until - now);
      wait = std::min(wait, std::chrono::milliseconds(10));
      zmq::pollitem_t items[] = {{static_cast<void*>(router_), 0, ZMQ_POLLIN, 0}};
      zmq::poll(items, 1, wait);
      if (!(items[0].revents & ZMQ_POLLIN))
        continue;
      std::vector<zmq::message_t> parts;
      if (!zmq::recv_multipart(router_, std::back_inserter(parts)))
        continue;
      EXPECT_EQ(parts.size(), 4u);
      if (parts.size() != 4)
        continue;
      const auto frames = messages::parse_frames(
          parts[1].to_string_view(), parts[2].to_string_view(), parts[3].to_string_view());
      broker_message message{parts[0].to_string(), frames.env, frames.body, steady::now()};
      seen.push_back(message);
      if (message.env.kind == messages::message_kind::ready)
        worker = message.identity;
      if (std::find(kinds.begin(), kinds.end(), message.env.kind) != kinds.end())
        return message;
    }
  }

  template <class T>
  void send(const std::string& identity,
            std::uint64_t job_id,
            const T& body,
            const std::string& run_id = "") {
    messages::envelope env;
    env.kind = T::kind;
    env.job_id = job_id;
    env.run_id = run_id;
    send_raw(identity, {messages::protocol_header, messages::encode(env), messages::encode(body)});
  }

  void send_raw(const std::string& identity, const std::vector<std::string>& frames) {
    router_.send(zmq::buffer(identity), zmq::send_flags::sndmore);
    for (std::size_t i = 0; i < frames.size(); ++i) {
      router_.send(zmq::buffer(frames[i]),
                   i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
    last_sent_ = steady::now();
  }

  std::size_t
  count(messages::message_kind kind, steady::time_point from, steady::time_point to) const {
    std::size_t n = 0;
    for (const auto& message : seen) {
      if (message.env.kind == kind && message.at >= from && message.at <= to)
        ++n;
    }
    return n;
  }

private:
  zmq::context_t context_{1};
  zmq::socket_t router_;
  std::filesystem::path dir_;
  std::string endpoint_;
  steady::time_point last_sent_{};
  std::uint64_t beat_ = 0;
};

} // namespace rpl::testing
