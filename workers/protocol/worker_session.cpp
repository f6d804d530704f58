#include "workers/protocol/worker_session.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <iterator>
#include <stdexcept>
#include <sys/resource.h>
#include <thread>
#include <utility>

#include <zmq_addon.hpp>

#include "messages/codec.hpp"
#include "workers/protocol/host_resources.hpp"
#include "workers/protocol/worker_log.hpp"

namespace rpl::workers {

namespace {

/// Upper bound on one poll, so that the stop flag is seen promptly.
constexpr std::chrono::milliseconds max_poll_wait{100};

std::string job_tag(std::uint64_t job_id) {
  return job_id ? "[job " + std::to_string(job_id) + "] " : "";
}

std::string join(const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& word : words)
    text += (text.empty() ? "" : " ") + word;
  return text;
}

void validate(const worker_session_options& options) {
  const std::string who = options.service + " worker";
  const std::string& endpoint = options.endpoint;
  if (endpoint.rfind("ipc://", 0) != 0 && endpoint.rfind("tcp://", 0) != 0) {
    throw std::invalid_argument(
        who + " endpoint '" + endpoint +
        "' must start with ipc:// or tcp://; fix: e.g. --connect tcp://ENGINE_HOST:5555");
  }
  if (options.heartbeat.count() <= 0) {
    throw std::invalid_argument(
        who + " heartbeat interval must be positive; fix: e.g. --heartbeat-ms 1000");
  }
  if (options.liveness < 1) {
    throw std::invalid_argument(who + " liveness must be >= 1; fix: e.g. --liveness 3");
  }
  if (options.reconnect_initial.count() <= 0 || options.reconnect_max < options.reconnect_initial) {
    throw std::invalid_argument(who +
                                " reconnect back-off must satisfy 0 < initial <= max; fix: e.g. "
                                "1000 ms doubling to 32000 ms");
  }
}

} // namespace

worker_session::worker_session(worker_session_options options, std::atomic<bool>& stop_requested)
    : options_(std::move(options)), stop_(stop_requested),
      identity_(worker_identity::of_this_process()) {
  validate(options_);
  backoff_ = options_.reconnect_initial;
}

int worker_session::run(job_handler& handler) {
  return run(std::vector<job_handler*>{&handler});
}

void worker_session::abandon_all(std::string_view why) {
  for (auto* handler : handlers_)
    handler->abandon(why);
}

int worker_session::run(const std::vector<job_handler*>& handlers) {
  if (handlers.empty())
    throw std::invalid_argument(options_.service + " worker: no job handler; fix: pass one");
  handlers_ = handlers;
  auto log = worker_log();
  messages::ready hello;
  handlers_.front()->describe(hello);
  log->info("{} worker {} connecting to {} (compilers: {}; {} slots; heartbeat {} ms, liveness {})",
            options_.service, identity_.worker_id, options_.endpoint, join(hello.compilers),
            handlers_.size(), options_.heartbeat.count(), options_.liveness);
  for (const auto& t : hello.toolchains)
    log->info("toolchain {}: {} ({}), hash {}; pin it with --toolchain '{}={}'", t.name, t.path,
              t.version.empty() ? "no --version" : t.version, t.hash, t.name, t.id);
  open_socket();
  while (!stop_.load()) {
    poll_once();
    if (stop_.load() || engine_gone_)
      break;
    if (reconnect_delay_) {
      const auto delay = *reconnect_delay_;
      reconnect_delay_.reset();
      reconnect(delay);
      continue;
    }
    const auto now = steady::now();
    if (now - last_heard_ >= options_.heartbeat * options_.liveness) {
      if (options_.once && served_) {
        log->info("the engine went silent and this worker serves one engine (--once): leaving");
        engine_gone_ = true;
        break;
      }
      const std::string dropped = full_queue_ ? " (" + end_full_queue() + ")" : "";
      log->warn(
          "broker silent for {} heartbeat intervals; presuming it dead, reconnecting in {} ms{}",
          options_.liveness, backoff_.count(), dropped);
      const auto delay = backoff_;
      backoff_ = std::min(backoff_ * 2, options_.reconnect_max);
      reconnect(delay);
      continue;
    }
    if (now - last_send_try_ >= options_.heartbeat)
      send_heartbeat();
  }
  abandon_all("worker stopping");
  if (socket_) {
    send(messages::message_kind::disconnect, 0, {},
         messages::encode(messages::disconnect{"worker stopping"}));
    close_socket();
  }
  if (full_queue_)
    log->info("stopped sending to {}: {}", options_.endpoint, end_full_queue());
  // The worker's own cost (its compilers' CPU is theirs): what a host gives up to run one.
  struct rusage self {};
  ::getrusage(RUSAGE_SELF, &self);
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  log->info("{} worker {} stopped after {} job(s); its own CPU {:.3f} s (user + system, its "
            "children not counted)",
            options_.service, identity_.worker_id, jobs_started_,
            seconds(self.ru_utime) + seconds(self.ru_stime));
  return 0;
}

// ---- socket ----------------------------------------------------------------------------------

void worker_session::open_socket() {
  socket_.emplace(context_, zmq::socket_type::dealer);
  socket_->set(zmq::sockopt::linger, 0); // a dead broker must not make close() hang
  socket_->set(zmq::sockopt::maxmsgsize, static_cast<std::int64_t>(options_.max_message_bytes));
  if (options_.curve) {
    // The engine is the CURVE server; an engine whose ZAP handler does not list our public key
    // drops the handshake, and we keep reconnecting (and saying so) as for an engine that is down.
    socket_->set(zmq::sockopt::curve_serverkey, options_.curve->server_public);
    socket_->set(zmq::sockopt::curve_publickey, options_.curve->own.public_key);
    socket_->set(zmq::sockopt::curve_secretkey, options_.curve->own.secret_key);
  }
  socket_->connect(options_.endpoint);
  last_heard_ = steady::now(); // the broker gets a full liveness window from the moment we connect
  messages::ready hello;
  handlers_.front()->describe(hello);
  hello.service = options_.service;
  hello.slots = static_cast<std::uint32_t>(handlers_.size());
  hello.cores = usable_cores();
  hello.memory_available_bytes = memory_available_bytes();
  hello.worker_id = identity_.worker_id;
  hello.host = identity_.host;
  hello.pid = identity_.pid;
  hello.heartbeat_ms = static_cast<std::uint32_t>(options_.heartbeat.count());
  if (send(messages::message_kind::ready, 0, {}, messages::encode(hello)))
    worker_log()->info("sent READY to {}", options_.endpoint);
}

void worker_session::close_socket() {
  if (socket_) {
    socket_->close();
    socket_.reset();
  }
}

/// Closes the socket, waits `delay` (returning early on stop) and opens a new socket; a new socket
/// means a new ROUTER identity, so the broker cannot confuse us with our old self.
void worker_session::reconnect(std::chrono::milliseconds delay) {
  abandon_all("the broker connection is being reset");
  close_socket();
  if (full_queue_) // the new socket starts with an empty queue
    worker_log()->info("closed the socket to {}: {}", options_.endpoint, end_full_queue());
  const auto until = steady::now() + delay;
  while (!stop_.load()) {
    const auto now = steady::now();
    if (now >= until)
      break;
    std::this_thread::sleep_for(
        std::min<steady::duration>(until - now, std::chrono::milliseconds(20)));
  }
  if (stop_.load())
    return;
  open_socket();
}

bool worker_session::send(messages::message_kind kind,
                          std::uint64_t job_id,
                          const std::string& run_id,
                          const std::string& body) {
  if (!socket_)
    return false;
  messages::envelope env;
  env.kind = kind;
  env.job_id = job_id;
  env.run_id = run_id;
  const std::string env_bytes = messages::encode(env);
  try {
    // dontwait: a full queue towards a dead broker must never block the loop (heartbeats and the
    // job's deadline depend on it). A message that does not fit is dropped and counted.
    const std::string_view header(messages::protocol_header);
    if (!socket_->send(zmq::buffer(header), zmq::send_flags::sndmore | zmq::send_flags::dontwait)) {
      // A peer that refused the handshake leaves the queue full for good: the next heartbeat waits
      // a full interval (not a loop that retries at once), and the episode is logged when it
      // begins and when it ends, with the count of what it dropped.
      const auto now = steady::now();
      last_send_try_ = now;
      if (!full_queue_) {
        full_queue_ = full_queue{now, 0};
        worker_log()->warn("{}send queue to {} is full: the broker takes no messages (it refused "
                           "the handshake, or stopped reading); dropped {} and dropping what "
                           "follows, with one heartbeat try per {} ms",
                           job_tag(job_id), options_.endpoint, messages::to_string(kind),
                           options_.heartbeat.count());
      }
      ++full_queue_->dropped;
      return false;
    }
    socket_->send(zmq::buffer(env_bytes), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    socket_->send(zmq::buffer(body), zmq::send_flags::dontwait);
  } catch (const zmq::error_t& error) {
    worker_log()->warn("{}could not send {}: {}", job_tag(job_id), messages::to_string(kind),
                       error.what());
    return false;
  }
  last_send_try_ = steady::now();
  if (full_queue_)
    worker_log()->info("sending to {} again: {}", options_.endpoint, end_full_queue());
  return true;
}

std::string worker_session::end_full_queue() {
  const auto lasted = std::chrono::duration<double>(steady::now() - full_queue_->since).count();
  const auto dropped = full_queue_->dropped;
  full_queue_.reset();
  char text[128];
  std::snprintf(text, sizeof text, "dropped %llu message%s in %.1f s while the send queue was full",
                static_cast<unsigned long long>(dropped), dropped == 1 ? "" : "s", lasted);
  return text;
}

void worker_session::send_reply(const job_reply& reply) {
  if (reply.body.size() > options_.max_message_bytes) {
    // The broker applies the same cap and would drop it silently; say so here, where it is known.
    worker_log()->error(
        "{}{} of {} bytes exceeds the message limit of {} bytes; the broker will drop it",
        job_tag(reply.job_id), messages::to_string(reply.kind), reply.body.size(),
        options_.max_message_bytes);
  }
  for (const auto& [kind, body] : reply.before)
    send(kind, reply.job_id, reply.run_id, body);
  send(reply.kind, reply.job_id, reply.run_id, reply.body);
}

void worker_session::send_heartbeat() {
  send(messages::message_kind::heartbeat, 0, {},
       messages::encode(messages::heartbeat{heartbeat_sequence_++}));
}

// ---- poll loop -------------------------------------------------------------------------------

void worker_session::poll_once() {
  if (!socket_)
    return;
  const auto now = steady::now();
  steady::time_point wake = now + max_poll_wait;
  wake = std::min(wake, last_send_try_ + options_.heartbeat);
  wake = std::min(wake, last_heard_ + options_.heartbeat * options_.liveness);
  std::vector<zmq_pollitem_t> items;
  items.push_back({socket_->handle(), 0, ZMQ_POLLIN, 0});
  for (auto* handler : handlers_) {
    if (!handler->busy())
      continue;
    const job_wait job = handler->wait();
    for (const int fd : job.fds)
      items.push_back({nullptr, fd, ZMQ_POLLIN, 0});
    if (job.poll_by)
      wake = std::min(wake, *job.poll_by);
  }
  const auto wait =
      std::chrono::ceil<std::chrono::milliseconds>(std::max(wake - now, steady::duration::zero()));
  try {
    zmq::poll(items.data(), items.size(), wait);
  } catch (const zmq::error_t& error) {
    if (error.num() != EINTR)
      worker_log()->warn("poll failed: {}", error.what());
    return;
  }
  if (items[0].revents & ZMQ_POLLIN)
    receive_all();
  for (auto* handler : handlers_) {
    if (handler->busy())
      if (auto reply = handler->poll())
        send_reply(*reply);
  }
}

void worker_session::receive_all() {
  while (socket_ && !reconnect_delay_) {
    std::vector<zmq::message_t> parts;
    std::optional<std::size_t> received;
    try {
      received =
          zmq::recv_multipart(*socket_, std::back_inserter(parts), zmq::recv_flags::dontwait);
    } catch (const zmq::error_t& error) {
      if (error.num() != EINTR)
        worker_log()->warn("receive failed: {}", error.what());
      return;
    }
    if (!received)
      return;
    last_heard_ = steady::now(); // any message at all proves the broker is alive
    handle_message(parts);
  }
}

void worker_session::handle_message(std::vector<zmq::message_t>& parts) {
  auto log = worker_log();
  // Tolerate a REQ-style empty delimiter in front of the three frames.
  const std::size_t first = (parts.size() == 4 && parts[0].size() == 0) ? 1 : 0;
  if (parts.size() - first != 3) {
    log->warn("dropped a message of {} frames from the broker (expected 3)", parts.size());
    return;
  }
  messages::parsed_frames frames;
  try {
    frames =
        messages::parse_frames(parts[first].to_string_view(), parts[first + 1].to_string_view(),
                               parts[first + 2].to_string_view());
  } catch (const messages::decode_error& error) {
    log->warn("dropped a malformed message from the broker: {}", error.what());
    return;
  }
  backoff_ = options_.reconnect_initial; // a well-formed message: the connection works
  served_ = true;
  const messages::message_kind kind = frames.env.kind;
  if (kind == messages::message_kind::heartbeat)
    return;
  if (kind == messages::message_kind::disconnect) {
    std::string reason;
    try {
      reason = messages::decode<messages::disconnect>(frames.body).reason;
    } catch (const messages::decode_error&) {
      reason = "(unreadable reason)";
    }
    if (options_.once && reason == messages::engine_finished) {
      log->info("broker sent DISCONNECT ({}); this worker serves one engine (--once): leaving",
                reason);
      engine_gone_ = true;
      return;
    }
    if (reason == messages::engine_finished)
      log->info("the engine finished; reconnecting in {} ms to serve the next one",
                options_.reconnect_initial.count());
    else
      log->warn("broker sent DISCONNECT ({}); reconnecting in {} ms", reason,
                options_.reconnect_initial.count());
    reconnect_delay_ = options_.reconnect_initial;
    return;
  }
  if (kind == handlers_.front()->request_kind()) {
    start_job(frames.env, frames.body);
    return;
  }
  log->warn("{}dropped unexpected {} from the broker", job_tag(frames.env.job_id),
            messages::to_string(kind));
}

void worker_session::start_job(const messages::envelope& envelope, const std::string& body) {
  if (envelope.job_id == 0) {
    worker_log()->error("dropped a {} without a job_id; the broker must number its jobs",
                        messages::to_string(envelope.kind));
    return;
  }
  // Every handler busy: the first one answers that it is (the broker gave more than our slots).
  auto idle = std::find_if(handlers_.begin(), handlers_.end(),
                           [](const job_handler* h) { return !h->busy(); });
  auto* handler = idle != handlers_.end() ? *idle : handlers_.front();
  ++jobs_started_;
  if (auto reply = handler->start(envelope, body))
    send_reply(*reply);
}

} // namespace rpl::workers
