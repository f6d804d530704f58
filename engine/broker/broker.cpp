#include "engine/broker/broker.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <sys/eventfd.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "messages/codec.hpp"

namespace rpl::engine {

namespace {
using clock_type = std::chrono::steady_clock;

/// Dispatch, purge and heartbeats run once per turn; this bounds how late they see the clock.
constexpr std::chrono::milliseconds max_poll_wait{100};

/// socket.recv, again when a signal interrupted it (cppzmq throws EINTR rather than returning).
zmq::recv_result_t
recv_retrying(zmq::socket_t& socket, zmq::message_t& part, zmq::recv_flags flags) {
  while (true) {
    try {
      return socket.recv(part, flags);
    } catch (const zmq::error_t& error) {
      if (error.num() != EINTR) {
        throw;
      }
    }
  }
}

zmq::message_t frame(const std::string& bytes) {
  return zmq::message_t(bytes.data(), bytes.size());
}
} // namespace

broker::broker(broker_config config) : config_(std::move(config)) {
  if (!config_.clock) {
    throw std::invalid_argument(
        "broker_config.clock is empty; fix: leave the default (steady_clock) or "
        "pass a function that returns the time");
  }
  router_ = zmq::socket_t(context_, zmq::socket_type::router);
  router_.set(zmq::sockopt::linger, 0);
  router_.set(zmq::sockopt::maxmsgsize, config_.max_message_bytes);
  // Unroutable replies (a worker that vanished) must not block or throw.
  router_.set(zmq::sockopt::router_mandatory, 0);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

broker::~broker() {
  stop();
  if (wake_fd_ >= 0) {
    ::close(wake_fd_);
  }
}

void broker::start() {
  // A wildcard port (tcp://127.0.0.1:*) is resolved by the bind itself: no window in which
  // another process could take a port chosen in advance.
  const auto bind = [this](const std::string& endpoint) {
    router_.bind(endpoint);
    bound_.push_back(router_.get(zmq::sockopt::last_endpoint));
  };
  bound_.clear();
  for (const auto& endpoint : config_.bind_endpoints) {
    bind(endpoint);
  }
  if (config_.curve) {
    workers::require_curve("the engine's CURVE endpoints");
    // The handler must be bound before a CURVE endpoint takes a connection: with none, libzmq
    // admits every client key.
    zap_.emplace(context_, zmq::socket_type::rep);
    zap_->set(zmq::sockopt::linger, 0);
    zap_->bind("inproc://zeromq.zap.01");
    monitor_.emplace(context_, zmq::socket_type::pair);
    monitor_->set(zmq::sockopt::linger, 0);
    if (zmq_socket_monitor(router_.handle(), "inproc://rpl-broker-monitor",
                           ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                               ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                               ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) != 0)
      throw zmq::error_t();
    monitor_->connect("inproc://rpl-broker-monitor");
    // Options are taken per endpoint when it is bound: the ipc:// endpoints above stay plain.
    router_.set(zmq::sockopt::curve_server, 1);
    router_.set(zmq::sockopt::curve_secretkey, config_.curve->server.secret_key);
    router_.set(zmq::sockopt::zap_domain, "rocm-perf");
    for (const auto& endpoint : config_.curve->endpoints) {
      bind(endpoint);
    }
  }
  thread_ = std::thread([this] { run(); });
}

void broker::answer_zap() {
  // RFC 27: version, request id, domain, address, identity, mechanism, credentials...
  while (true) {
    std::vector<zmq::message_t> frames;
    zmq::message_t part;
    bool more = true;
    bool got = false;
    while (more && zap_->recv(part, zmq::recv_flags::dontwait)) {
      got = true;
      more = part.more();
      frames.push_back(std::move(part));
    }
    if (!got)
      return;
    std::string status = "400", text = "malformed ZAP request", user;
    std::string address = frames.size() > 3 ? frames[3].to_string() : "?";
    if (frames.size() >= 7 && frames[0].to_string() == "1.0" && frames[5].to_string() == "CURVE") {
      const std::string key = workers::z85_from_binary(frames[6].to_string());
      const auto it = config_.curve->allowed.find(key);
      if (it != config_.curve->allowed.end()) {
        status = "200";
        text = "OK";
        user = it->second;
        count(&broker_stats::peers_admitted);
        spdlog::info("CURVE: admitted worker key {} ({}) from {}", it->second, key, address);
      } else {
        text = "key not in the allow-list";
        count(&broker_stats::peers_refused);
        spdlog::warn("CURVE: refused a peer from {}: its key {} is not in the allow-list", address,
                     key);
      }
    } else {
      count(&broker_stats::peers_refused);
      spdlog::warn("CURVE: refused a peer from {}: {}", address, text);
    }
    const std::string request_id = frames.size() > 1 ? frames[1].to_string() : "";
    const std::string reply[] = {"1.0", request_id, status, text, user, ""};
    for (std::size_t i = 0; i < 6; ++i)
      zap_->send(frame(reply[i]), i + 1 < 6 ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }
}

void broker::read_monitor() {
  // Each event: a frame of a 16-bit event id and a 32-bit value, then the peer's address.
  while (true) {
    zmq::message_t event, address;
    if (!monitor_->recv(event, zmq::recv_flags::dontwait))
      return;
    if (event.more()) [[maybe_unused]]
      auto got = monitor_->recv(address);
    std::uint16_t id = 0;
    if (event.size() >= sizeof id)
      std::memcpy(&id, event.data(), sizeof id);
    // An unlisted key was counted and named by the ZAP handler already.
    if (id == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
      continue;
    count(&broker_stats::peers_refused);
    spdlog::warn("CURVE: refused a peer on {}: the handshake failed ({}); an unauthenticated "
                 "client, or one with the wrong server key",
                 address.to_string(),
                 id == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL ? "protocol error" : "no CURVE");
  }
}

void broker::stop() {
  if (!thread_.joinable()) {
    return;
  }
  stopping_ = true;
  std::uint64_t one = 1;
  [[maybe_unused]] auto written = ::write(wake_fd_, &one, sizeof one);
  thread_.join();
}

void broker::set_tick(std::function<void()> tick) {
  tick_ = std::move(tick);
  tick_set_.store(true, std::memory_order_release);
}

broker_stats broker::stats() const {
  std::lock_guard lock(stats_mutex_);
  return stats_;
}

void broker::count(std::uint64_t broker_stats::*counter) {
  std::lock_guard lock(stats_mutex_);
  ++(stats_.*counter);
}

std::uint64_t broker::submit(std::string run_id,
                             messages::compile_request request,
                             completion done,
                             std::string avoid_worker) {
  job j;
  j.avoid_worker = std::move(avoid_worker);
  if (!request.argv.empty()) {
    j.compiler = std::filesystem::path(request.argv[0]).filename().string();
    j.compiler_is_path = request.argv[0].find('/') != std::string::npos;
  }
  j.id = next_job_id_++;
  j.run_id = std::move(run_id);
  j.request = std::move(request);
  j.done = std::move(done);
  const auto id = j.id;
  {
    std::lock_guard lock(submit_mutex_);
    submitted_.push_back(std::move(j));
  }
  std::uint64_t one = 1;
  [[maybe_unused]] auto written = ::write(wake_fd_, &one, sizeof one);
  return id;
}

std::uint64_t broker::submit_proposal(std::string run_id,
                                      std::string proposer_kind,
                                      messages::propose_request request,
                                      propose_completion done) {
  job j;
  j.compiler = std::move(proposer_kind);
  j.id = next_job_id_++;
  j.run_id = std::move(run_id);
  j.deadline = config_.clock() + std::chrono::milliseconds(request.timeout_ms);
  j.proposal = std::move(request);
  j.propose_done = std::move(done);
  const auto id = j.id;
  {
    std::lock_guard lock(submit_mutex_);
    submitted_.push_back(std::move(j));
  }
  std::uint64_t one = 1;
  [[maybe_unused]] auto written = ::write(wake_fd_, &one, sizeof one);
  return id;
}

broker::worker* broker::find(const std::string& identity) {
  auto it = std::find_if(workers_.begin(), workers_.end(),
                         [&](const worker& w) { return w.identity == identity; });
  return it == workers_.end() ? nullptr : &*it;
}

template <class T>
void broker::send(worker& w, std::uint64_t job_id, const std::string& run_id, const T& body) {
  messages::envelope env;
  env.kind = T::kind;
  env.job_id = job_id;
  env.run_id = run_id;
  std::array<zmq::message_t, 4> frames{frame(w.identity), frame(messages::protocol_header),
                                       frame(messages::encode(env)), frame(messages::encode(body))};
  for (std::size_t i = 0; i < frames.size(); ++i) {
    const auto flags = i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none;
    while (true) {
      try {
        router_.send(frames[i], flags);
        break;
      } catch (const zmq::error_t& error) {
        if (error.num() != EINTR) { // a signal on this thread: the frame was not sent, again
          throw;
        }
      }
    }
  }
  w.last_sent = config_.clock();
}

void broker::send_disconnect(const std::string& identity, const std::string& reason) {
  worker ghost;
  ghost.identity = identity;
  send(ghost, 0, "", messages::disconnect{reason});
}

void broker::fail(job& j, messages::compile_status status, const std::string& why) {
  if (j.proposal) {
    messages::propose_reply reply;
    reply.status = status == messages::compile_status::timed_out
                       ? messages::propose_status::timed_out
                       : messages::propose_status::failed;
    reply.proposer = j.compiler;
    reply.error = why;
    if (j.propose_done) {
      j.propose_done(reply);
    }
    return;
  }
  messages::compile_reply reply;
  reply.status = status;
  reply.error = why;
  if (j.done) {
    j.done(reply);
  }
}

void broker::requeue(job j, const std::string& why) {
  if (j.attempts >= config_.max_attempts) {
    spdlog::warn("job {}: {}; giving up after {} attempts", j.id, why, j.attempts);
    fail(j, messages::compile_status::worker_lost,
         why + "; the job was tried on " + std::to_string(j.attempts) + " workers");
    return;
  }
  spdlog::warn("job {}: {}; re-queued (attempt {} of {})", j.id, why, j.attempts + 1,
               config_.max_attempts);
  count(&broker_stats::jobs_requeued);
  queue_.push_front(std::move(j));
}

void broker::handle_message(std::vector<zmq::message_t>& frames) {
  if (frames.size() != 4) {
    spdlog::warn("broker: dropped a message of {} frames (expected identity + 3)", frames.size());
    count(&broker_stats::malformed_messages);
    return;
  }
  const std::string identity = frames[0].to_string();
  messages::parsed_frames parsed;
  try {
    parsed = messages::parse_frames(frames[1].to_string_view(), frames[2].to_string_view(),
                                    frames[3].to_string_view());
  } catch (const messages::decode_error& error) {
    spdlog::warn("broker: dropped a malformed message: {}", error.what());
    count(&broker_stats::malformed_messages);
    return;
  }
  worker* w = find(identity);
  // Any message from a known worker proves it alive.
  if (w != nullptr) {
    w->expiry = config_.clock() + config_.heartbeat * config_.liveness;
  }
  switch (parsed.env.kind) {
  case messages::message_kind::ready: on_ready(identity, w, parsed.body); break;
  case messages::message_kind::heartbeat:
    if (w == nullptr) {
      send_disconnect(identity, "unknown worker; send READY first");
    }
    break;
  case messages::message_kind::disconnect:
    if (w != nullptr) {
      spdlog::info("broker: worker {} disconnected", w->worker_id);
      requeue_all(*w, "worker " + w->worker_id + " disconnected mid-job");
      workers_.erase(workers_.begin() + (w - workers_.data()));
    }
    break;
  case messages::message_kind::compile_reply:
    on_reply(identity, w, parsed.env.job_id, parsed.body);
    break;
  case messages::message_kind::artifact_chunk:
    on_chunk(identity, w, parsed.env.job_id, parsed.body);
    break;
  case messages::message_kind::propose_reply:
    on_propose_reply(identity, w, parsed.env.job_id, parsed.body);
    break;
  default:
    spdlog::warn("broker: dropped an unexpected {} from {}", messages::to_string(parsed.env.kind),
                 w != nullptr ? w->worker_id : std::string("an unknown peer"));
    count(&broker_stats::malformed_messages);
    if (w == nullptr) {
      send_disconnect(identity, "unexpected message from an unknown peer");
    }
    break;
  }
}

void broker::on_ready(const std::string& identity, worker* known, const std::string& body) {
  messages::ready info;
  try {
    info = messages::decode<messages::ready>(body);
  } catch (const messages::decode_error& error) {
    spdlog::warn("broker: dropped an unreadable READY: {}", error.what());
    count(&broker_stats::malformed_messages);
    return;
  }
  const auto now = config_.clock();
  worker* registered = known;
  if (known != nullptr) {
    // A READY from a known identity means the worker restarted its session: its jobs are lost.
    requeue_all(*known, "worker " + known->worker_id + " re-registered mid-job");
  } else {
    // A worker that reconnects gets a new socket identity: the session under the old identity is
    // over, and its jobs will never be answered.
    for (auto it = workers_.begin(); it != workers_.end(); ++it) {
      if (it->worker_id == info.worker_id && !info.worker_id.empty()) {
        requeue_all(*it, "worker " + info.worker_id + " reconnected mid-job");
        workers_.erase(it);
        break;
      }
    }
    worker fresh;
    fresh.identity = identity;
    fresh.expiry = now + config_.heartbeat * config_.liveness;
    fresh.last_sent = now;
    workers_.push_back(std::move(fresh));
    registered = &workers_.back();
  }
  registered->worker_id = info.worker_id;
  registered->slots = std::max<std::uint32_t>(info.slots, 1);
  registered->service = info.service;
  registered->compilers = info.compilers;
  registered->toolchains.clear();
  std::string names;
  for (const auto& t : info.toolchains) {
    registered->toolchains[t.name] = t.id;
    names += (names.empty() ? "" : ", ") + t.name;
  }
  spdlog::debug(
      "broker: worker {} ready: {} slot(s), {} cores, {:.1f} GiB available, toolchains: {}",
      info.worker_id, registered->slots, info.cores,
      static_cast<double>(info.memory_available_bytes) / (1024.0 * 1024.0 * 1024.0),
      names.empty() ? "none named (jobs whose toolchain is checked skip it)" : names);
  // A reconnecting worker keeps its worker_id (host:pid): it is the same worker, seen once.
  if (worker_ids_seen_.insert(info.worker_id.empty() ? "identity:" + identity : info.worker_id)
          .second) {
    count(&broker_stats::workers_seen);
  }
  spdlog::debug("broker: worker {} ready ({} compilers)", info.worker_id, info.compilers.size());
}

void broker::on_reply(const std::string& identity,
                      worker* known,
                      std::uint64_t job_id,
                      const std::string& body) {
  if (known == nullptr) {
    spdlog::debug("broker: dropped a reply for job {} from an unknown peer", job_id);
    send_disconnect(identity, "unknown worker; send READY first");
    count(&broker_stats::unknown_replies);
    return;
  }
  const auto held = std::find_if(known->current.begin(), known->current.end(),
                                 [&](const job& j) { return j.id == job_id; });
  if (held == known->current.end()) {
    spdlog::debug("broker: dropped a duplicate reply for job {}", job_id);
    count(&broker_stats::duplicate_replies);
    return;
  }
  messages::compile_reply reply;
  try {
    reply = messages::decode<messages::compile_reply>(body);
  } catch (const messages::decode_error& error) {
    reply.status = messages::compile_status::internal_error;
    reply.error = std::string("undecodable reply: ") + error.what();
  }
  auto j = std::move(*held);
  known->current.erase(held);
  if (reply.artifact_chunks > 0 && reply.status == messages::compile_status::ok) {
    // The artifact came before the reply, in chunks: it must be whole.
    auto bytes = std::move(known->assembling[job_id]);
    std::string why = known->broken.count(job_id) ? known->broken[job_id] : std::string();
    if (why.empty() && bytes.size() != reply.artifact_bytes) {
      why = "its artifact arrived incomplete (" + std::to_string(bytes.size()) + " of " +
            std::to_string(reply.artifact_bytes) + " bytes)";
    }
    if (why.empty()) {
      reply.artifact = std::move(bytes);
    } else {
      reply.status = messages::compile_status::internal_error;
      reply.error = why;
    }
  }
  known->assembling.erase(job_id);
  known->broken.erase(job_id);
  if (reply.status == messages::compile_status::toolchain_mismatch) {
    // Not a failure of the worker or the candidate: that worker just never gets this compiler's
    // jobs, and this one goes back to the front of the queue without using up an attempt.
    if (path_mismatches_[known->worker_id].insert(j.request.argv[0]).second) {
      count(&broker_stats::toolchain_mismatches);
      spdlog::warn("broker: {}; it gets no more jobs for {}", reply.error, j.request.argv[0]);
    }
    --j.attempts;
    queue_.push_front(std::move(j));
    return;
  }
  if (reply.status == messages::compile_status::internal_error) {
    // The worker could not run the job (its disk, its fork, a reply it could not encode): not the
    // candidate's fault, so another worker tries it while this one sits out its back-off.
    bench(known->worker_id, reply.error);
    requeue(std::move(j), "worker " + known->worker_id + " could not run it (" + reply.error + ")");
    return;
  }
  failures_.erase(known->worker_id);
  if (j.done) {
    j.done(reply);
  }
}

void broker::on_propose_reply(const std::string& identity,
                              worker* known,
                              std::uint64_t job_id,
                              const std::string& body) {
  if (known == nullptr) {
    send_disconnect(identity, "unknown worker; send READY first");
    count(&broker_stats::unknown_replies);
    return;
  }
  const auto held = std::find_if(known->current.begin(), known->current.end(),
                                 [&](const job& j) { return j.id == job_id && j.proposal; });
  if (held == known->current.end()) {
    count(&broker_stats::duplicate_replies);
    return;
  }
  messages::propose_reply reply;
  try {
    reply = messages::decode<messages::propose_reply>(body);
  } catch (const messages::decode_error& error) {
    reply.status = messages::propose_status::failed;
    reply.error = std::string("undecodable proposer reply: ") + error.what();
  }
  auto j = std::move(*held);
  known->current.erase(held);
  if (reply.worker_id.empty()) {
    reply.worker_id = known->worker_id;
  }
  if (j.propose_done) {
    j.propose_done(reply);
  }
}

void broker::expire_proposals(clock_type::time_point now) {
  const auto overdue = [&](const job& j) { return j.proposal && now >= j.deadline; };
  const auto expire = [&](job& j, const std::string& where) {
    fail(j, messages::compile_status::timed_out,
         "the " + j.compiler + " proposer did not answer within " +
             std::to_string(j.proposal->timeout_ms) + " ms" + where);
  };
  // A remote proposer that cannot get in looks, from here, like no proposer at all: say so.
  std::string refused;
  if (config_.curve) {
    const auto peers = stats().peers_refused;
    if (peers > 0) {
      refused = "; " + std::to_string(peers) +
                " peer(s) were refused on the CURVE endpoint (a key not in the allow-list, a "
                "client without CURVE keys or with the wrong server key: the log names each)";
    }
  }
  for (auto it = queue_.begin(); it != queue_.end();) {
    if (overdue(*it)) {
      expire(*it, " (no proposer worker of that kind took the job" + refused + ")");
      it = queue_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& w : workers_) {
    for (auto it = w.current.begin(); it != w.current.end();) {
      if (overdue(*it)) {
        // Its late reply is dropped as a duplicate; the worker's slot frees when it answers.
        expire(*it, " (worker " + w.worker_id + ")");
        it = w.current.erase(it);
      } else {
        ++it;
      }
    }
  }
}

void broker::on_chunk(const std::string& identity,
                      worker* known,
                      std::uint64_t job_id,
                      const std::string& body) {
  if (known == nullptr) {
    send_disconnect(identity, "unknown worker; send READY first");
    count(&broker_stats::unknown_replies);
    return;
  }
  const auto held = std::find_if(known->current.begin(), known->current.end(),
                                 [&](const job& j) { return j.id == job_id; });
  if (held == known->current.end() || known->broken.count(job_id)) {
    return; // a job it no longer holds (its reply will be counted), or already broken
  }
  messages::artifact_chunk chunk;
  try {
    chunk = messages::decode<messages::artifact_chunk>(body);
  } catch (const messages::decode_error& error) {
    known->broken[job_id] = std::string("an unreadable artifact chunk: ") + error.what();
    return;
  }
  auto& bytes = known->assembling[job_id];
  const auto limit = held->request.max_artifact_bytes;
  if (chunk.offset != bytes.size()) {
    known->broken[job_id] = "an artifact chunk at offset " + std::to_string(chunk.offset) +
                            " where " + std::to_string(bytes.size()) + " was next";
  } else if (limit > 0 && bytes.size() + chunk.bytes.size() > limit) {
    known->broken[job_id] =
        "its artifact chunks exceed max_artifact_bytes " + std::to_string(limit);
  } else {
    bytes.insert(bytes.end(), chunk.bytes.begin(), chunk.bytes.end());
    return;
  }
  known->assembling.erase(job_id);
}

void broker::requeue_all(worker& w, const std::string& why) {
  w.assembling.clear();
  w.broken.clear();
  // Backwards, so that requeue's push_front keeps the jobs in the order they were handed out.
  for (auto it = w.current.rbegin(); it != w.current.rend(); ++it) {
    requeue(std::move(*it), why);
  }
  w.current.clear();
}

void broker::bench(const std::string& worker_id, const std::string& why) {
  auto& record = failures_[worker_id];
  ++record.in_a_row;
  auto pause = config_.backoff_initial;
  for (int i = 1; i < record.in_a_row && pause < config_.backoff_max; ++i) {
    pause *= 2;
  }
  pause = std::min(pause, config_.backoff_max);
  record.benched_until = config_.clock() + pause;
  count(&broker_stats::workers_benched);
  spdlog::warn("broker: worker {} failed a job itself ({}); no jobs for it for {} ms (failure {} "
               "in a row)",
               worker_id, why, pause.count(), record.in_a_row);
}

bool broker::fits(const worker& w, const job& j) {
  if (!j.avoid_worker.empty() && w.worker_id == j.avoid_worker) {
    return false;
  }
  const std::string& name = j.compiler;
  if (j.proposal || w.service != "compile") {
    return j.proposal && w.service == "propose" &&
           std::find(w.compilers.begin(), w.compilers.end(), name) != w.compilers.end();
  }
  if (!w.compilers.empty() &&
      std::find(w.compilers.begin(), w.compilers.end(), name) == w.compilers.end()) {
    return false;
  }
  if (w.toolchains.empty()) {
    return !j.request.match_toolchain; // a worker that names no toolchain: unchecked jobs only
  }
  if (j.compiler_is_path && j.request.match_toolchain) {
    // Its PATH's compiler of that name says nothing about the binary at this path: the worker
    // checks that one itself, and says toolchain_mismatch once if it differs.
    // Looked up without building a key: this runs for every queued job and worker at each turn.
    const auto refused = path_mismatches_.find(w.worker_id);
    return refused == path_mismatches_.end() || refused->second.count(j.request.argv[0]) == 0;
  }
  const auto t = w.toolchains.find(name);
  if (t == w.toolchains.end()) {
    return false;
  }
  if (!j.request.match_toolchain || t->second == j.request.toolchain_id) {
    return true;
  }
  if (mismatches_logged_.insert(w.worker_id + "\n" + name).second) {
    count(&broker_stats::toolchain_mismatches);
    spdlog::warn("broker: worker {} has another {} than this run asks for (worker: {}; run: {}); "
                 "it gets no {} jobs",
                 w.worker_id, name, t->second, j.request.toolchain_id, name);
  }
  return false;
}

void broker::dispatch() {
  const auto now = config_.clock();
  unplaced_reason_.clear();
  if (config_.rank && queue_.size() > 1) {
    // Longest expected first; a stable order keeps the oldest first among equals. Proposer jobs
    // have no compile time and keep rank 0.
    std::vector<std::pair<double, std::size_t>> order;
    order.reserve(queue_.size());
    for (std::size_t i = 0; i < queue_.size(); ++i)
      order.emplace_back(queue_[i].proposal ? 0.0 : -config_.rank(queue_[i].request), i);
    std::stable_sort(order.begin(), order.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::deque<job> sorted;
    for (const auto& [rank, i] : order)
      sorted.push_back(std::move(queue_[i]));
    queue_.swap(sorted);
  }
  // Each job, oldest first, to the least loaded worker that fits it, has a free slot and is not
  // sitting out a back-off; a job that no worker can take now stays queued without holding up
  // the jobs behind it.
  for (auto it = queue_.begin(); it != queue_.end();) {
    worker* best = nullptr;
    bool any_fit = false;
    for (auto& w : workers_) {
      if (!fits(w, *it)) {
        continue;
      }
      any_fit = true;
      const auto failed = failures_.find(w.worker_id);
      if (w.full() || (failed != failures_.end() && failed->second.benched_until > now)) {
        continue;
      }
      const auto load = [](const worker& x) {
        return static_cast<double>(x.current.size()) / static_cast<double>(x.slots);
      };
      if (best == nullptr || load(w) < load(*best)) {
        best = &w;
      }
    }
    if (!any_fit && unplaced_reason_.empty() && it->proposal) {
      unplaced_reason_ = "no " + it->compiler + " proposer worker connected";
    } else if (!any_fit && unplaced_reason_.empty()) {
      const auto& argv = it->request.argv;
      const std::string compiler = argv.empty() ? "(no compiler)" : argv[0];
      unplaced_reason_ =
          workers_.empty() ? std::string("no compile worker connected")
          : !it->avoid_worker.empty()
              ? "no connected worker but " + it->avoid_worker +
                    ", which built it first, fits a determinism check's second build"
              : "none of the " + std::to_string(workers_.size()) +
                    " connected compile workers has " +
                    (it->request.match_toolchain ? "the toolchain " + it->request.toolchain_id
                                                 : "the compiler " + compiler);
    }
    if (best == nullptr) {
      ++it;
      continue;
    }
    job j = std::move(*it);
    it = queue_.erase(it);
    ++j.attempts;
    best->current.push_back(std::move(j));
    const auto& sent = best->current.back();
    if (sent.proposal) {
      send(*best, sent.id, sent.run_id, *sent.proposal);
    } else {
      send(*best, sent.id, sent.run_id, sent.request);
    }
  }
}

void broker::purge(clock_type::time_point now) {
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (it->expiry > now) {
      ++it;
      continue;
    }
    spdlog::warn("broker: worker {} missed {} heartbeats; presumed dead", it->worker_id,
                 config_.liveness);
    count(&broker_stats::workers_expired);
    if (!it->current.empty()) {
      bench(it->worker_id, "it went silent mid-job");
      requeue_all(*it, "worker " + it->worker_id + " died mid-job");
    }
    it = workers_.erase(it);
  }
}

void broker::send_heartbeats(clock_type::time_point now) {
  for (auto& w : workers_) {
    if (now - w.last_sent >= config_.heartbeat) {
      send(w, 0, "", messages::heartbeat{++heartbeat_sequence_});
    }
  }
}

void broker::track_waiting(clock_type::time_point now) {
  if (unplaced_reason_.empty()) {
    waiting_since_.reset();
  } else if (!waiting_since_) {
    waiting_since_ = now;
  }
}

clock_type::duration broker::waiting_for_workers() const {
  return waiting_since_ ? config_.clock() - *waiting_since_ : clock_type::duration::zero();
}

void broker::take_submitted() {
  std::lock_guard lock(submit_mutex_);
  while (!submitted_.empty()) {
    queue_.push_back(std::move(submitted_.front()));
    submitted_.pop_front();
  }
}

void broker::fail_queued(const std::string& why) {
  take_submitted();
  for (auto& j : queue_) {
    fail(j, messages::compile_status::worker_lost, why);
  }
  queue_.clear();
}

void broker::receive_all() {
  while (true) {
    std::vector<zmq::message_t> frames;
    zmq::message_t part;
    if (!recv_retrying(router_, part, zmq::recv_flags::dontwait)) {
      return;
    }
    frames.push_back(std::move(part));
    while (frames.back().more()) {
      zmq::message_t next;
      (void)recv_retrying(router_, next, zmq::recv_flags::none);
      frames.push_back(std::move(next));
    }
    try {
      handle_message(frames);
    } catch (const std::exception& error) {
      spdlog::error("broker: {}", error.what());
    }
  }
}

void broker::run() {
  const auto poll_interval =
      std::min<std::chrono::milliseconds>(config_.heartbeat / 2, max_poll_wait);
  while (!stopping_) {
    zmq::pollitem_t items[] = {{router_.handle(), 0, ZMQ_POLLIN, 0},
                               {nullptr, wake_fd_, ZMQ_POLLIN, 0},
                               {zap_ ? zap_->handle() : nullptr, -1, ZMQ_POLLIN, 0},
                               {monitor_ ? monitor_->handle() : nullptr, -1, ZMQ_POLLIN, 0}};
    try {
      zmq::poll(items, zap_ ? 4 : 2, poll_interval);
    } catch (const zmq::error_t& error) {
      // A signal (the user's Ctrl-C) that landed on this thread: look again; stop() wakes it.
      if (error.num() != EINTR) {
        throw;
      }
      continue;
    }
    if (zap_) {
      answer_zap();
      read_monitor();
    }
    if ((items[1].revents & ZMQ_POLLIN) != 0) {
      std::uint64_t counter = 0;
      [[maybe_unused]] auto got = ::read(wake_fd_, &counter, sizeof counter);
    }
    take_submitted();
    receive_all();
    const auto now = config_.clock();
    purge(now);
    expire_proposals(now);
    dispatch();
    send_heartbeats(now);
    track_waiting(now);
    live_workers_ = workers_.size();
    if (tick_set_.load(std::memory_order_acquire) && tick_) {
      tick_();
    }
  }
  // Answer what is left so that no caller waits forever.
  take_submitted();
  for (auto& j : queue_) {
    fail(j, messages::compile_status::worker_lost, "engine stopping");
  }
  for (auto& w : workers_) {
    for (auto& j : w.current) {
      fail(j, messages::compile_status::worker_lost, "engine stopping");
    }
    // Workers started for this sweep only (worker compile --once) leave on it; the others wait
    // for the next engine. Given a moment to leave before the socket closes.
    send_disconnect(w.identity, messages::engine_finished);
  }
  router_.set(zmq::sockopt::linger, 200);
}

} // namespace rpl::engine
