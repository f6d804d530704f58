#include "workers/compile/compile_worker.hpp"
#include "workers/compilers/nvcc/nvcc_resource_usage.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <utility>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "messages/codec.hpp"
#include "workers/process/child_process.hpp"

namespace rpl::workers {

namespace {

using steady = std::chrono::steady_clock;
namespace fs = std::filesystem;

constexpr const char* out_placeholder = "{OUT}";
constexpr const char* artifact_name = "artifact.out";
/// Upper bound on one poll, so that the stop flag is seen promptly.
constexpr std::chrono::milliseconds max_poll_wait{100};

/// Programs that would run arbitrary commands; an allow-list entry cannot make them compilers.
const std::vector<std::string>& never_allowed() {
  static const std::vector<std::string> names = {"sh",  "bash", "dash",    "zsh",   "ksh",
                                                 "csh", "tcsh", "fish",    "env",   "busybox",
                                                 "sudo", "xargs", "nohup", "setsid"};
  return names;
}

std::shared_ptr<spdlog::logger> worker_log() {
  // The application's logger when it installed one (named, so its level and pattern apply), else a
  // logger of our own on stderr: stdout may be a pipe the engine reads, and spdlog's unnamed
  // default logger writes to stdout.
  static const std::shared_ptr<spdlog::logger> logger = []() -> std::shared_ptr<spdlog::logger> {
    if (auto app = spdlog::default_logger(); app && !app->name().empty()) return app;
    if (auto existing = spdlog::get("rpl.worker")) return existing;
    return spdlog::stderr_color_mt("rpl.worker");
  }();
  return logger;
}

std::string host_name() {
  char buffer[256] = {};
  if (::gethostname(buffer, sizeof buffer - 1) != 0) return "unknown-host";
  return buffer;
}

std::string join(const std::vector<std::string>& words, const char* separator) {
  std::string text;
  for (const std::string& word : words) {
    if (!text.empty()) text += separator;
    text += word;
  }
  return text;
}

/// Empty when `name` may be written inside the job directory, else why it may not.
std::string check_source_name(const std::string& name) {
  if (name.empty()) return "is empty";
  if (name.find('\0') != std::string::npos) return "contains a NUL byte";
  const fs::path path(name);
  if (path.is_absolute() || name.front() == '/') return "is an absolute path";
  for (const fs::path& part : path) {
    if (part == "..") return "contains '..'";
  }
  const fs::path normal = path.lexically_normal();
  if (normal.empty() || normal == "." || !normal.has_filename()) return "does not name a file";
  if (normal == artifact_name) return std::string("collides with the artifact path ") + artifact_name;
  return {};
}

std::string substitute_out(const std::string& word, const std::string& artifact, bool& used) {
  std::string result;
  std::size_t begin = 0;
  for (;;) {
    const std::size_t found = word.find(out_placeholder, begin);
    if (found == std::string::npos) break;
    used = true;
    result.append(word, begin, found - begin);
    result += artifact;
    begin = found + std::strlen(out_placeholder);
  }
  result.append(word, begin, std::string::npos);
  return result;
}

std::string job_tag(std::uint64_t job_id) { return "[job " + std::to_string(job_id) + "] "; }

/// One compile in flight.
struct running_job {
  std::uint64_t job_id = 0;
  std::string run_id;
  std::string compiler;  ///< basename of argv[0], for messages
  fs::path dir;
  fs::path artifact;
  bool wants_artifact = false;
  std::uint32_t deadline_ms = 0;
  std::optional<steady::time_point> deadline;
  child_process child;
};

class compile_worker {
public:
  compile_worker(const compile_worker_options& options, std::atomic<bool>& stop_requested)
      : options_(options), stop_(stop_requested), context_(1) {
    validate_options();
    host_ = host_name();
    pid_ = static_cast<std::int64_t>(::getpid());
    worker_id_ = host_ + ":" + std::to_string(pid_);
    backoff_ = options_.reconnect_initial;
  }

  int run() {
    auto log = worker_log();
    log->info("compile worker {} connecting to {} (compilers: {}; heartbeat {} ms, liveness {})",
              worker_id_, options_.endpoint, join(options_.allowed_compilers, " "),
              options_.heartbeat.count(), options_.liveness);
    open_socket();
    while (!stop_.load()) {
      poll_once();
      if (stop_.load()) break;
      if (reconnect_delay_) {
        const auto delay = *reconnect_delay_;
        reconnect_delay_.reset();
        reconnect(delay);
        continue;
      }
      const auto now = steady::now();
      if (now - last_heard_ >= options_.heartbeat * options_.liveness) {
        log->warn("broker silent for {} heartbeat intervals; presuming it dead, reconnecting in {} ms",
                  options_.liveness, backoff_.count());
        const auto delay = backoff_;
        backoff_ = std::min(backoff_ * 2, options_.reconnect_max);
        reconnect(delay);
        continue;
      }
      if (now - last_sent_ >= options_.heartbeat) send_heartbeat();
    }
    abandon_job("worker stopping");
    if (socket_) {
      messages::disconnect body{"worker stopping"};
      send(messages::message_kind::disconnect, 0, {}, messages::encode(body));
      close_socket();
    }
    log->info("compile worker {} stopped", worker_id_);
    return 0;
  }

private:
  void validate_options() {
    const std::string& endpoint = options_.endpoint;
    if (endpoint.rfind("ipc://", 0) != 0 && endpoint.rfind("tcp://", 0) != 0) {
      throw std::invalid_argument("compile worker endpoint '" + endpoint +
                                  "' must start with ipc:// or tcp://");
    }
    if (options_.heartbeat.count() <= 0) {
      throw std::invalid_argument("compile worker heartbeat interval must be positive");
    }
    if (options_.liveness < 1) throw std::invalid_argument("compile worker liveness must be >= 1");
    if (options_.reconnect_initial.count() <= 0 || options_.reconnect_max < options_.reconnect_initial) {
      throw std::invalid_argument("compile worker reconnect back-off must satisfy 0 < initial <= max");
    }
    if (options_.work_root.empty()) {
      const char* tmp = std::getenv("TMPDIR");
      options_.work_root = (tmp != nullptr && *tmp != '\0') ? fs::path(tmp) : fs::path("/tmp");
    }
    std::error_code error;
    fs::create_directories(options_.work_root, error);
    if (!fs::is_directory(options_.work_root)) {
      throw std::invalid_argument("compile worker work root " + options_.work_root.string() +
                                  " is not a usable directory" +
                                  (error ? ": " + error.message() : std::string()));
    }
    for (const std::string& name : options_.allowed_compilers) {
      if (std::find(never_allowed().begin(), never_allowed().end(), name) != never_allowed().end()) {
        worker_log()->warn("'{}' is on the allow-list but can run arbitrary commands; it stays refused",
                           name);
      }
    }
  }

  // ---- socket --------------------------------------------------------------------------------

  void open_socket() {
    socket_.emplace(context_, zmq::socket_type::dealer);
    socket_->set(zmq::sockopt::linger, 0);  // a dead broker must not make close() hang
    socket_->set(zmq::sockopt::maxmsgsize, static_cast<std::int64_t>(options_.max_message_bytes));
    socket_->connect(options_.endpoint);
    const auto now = steady::now();
    last_heard_ = now;  // the broker gets a full liveness window from the moment we connect
    messages::ready body;
    body.service = "compile";
    body.worker_id = worker_id_;
    body.host = host_;
    body.pid = pid_;
    body.compilers = options_.allowed_compilers;
    body.heartbeat_ms = static_cast<std::uint32_t>(options_.heartbeat.count());
    send(messages::message_kind::ready, 0, {}, messages::encode(body));
    worker_log()->info("sent READY to {}", options_.endpoint);
  }

  void close_socket() {
    if (socket_) {
      socket_->close();
      socket_.reset();
    }
  }

  /// Closes the socket, waits `delay` (returning early on stop) and opens a new socket; a new
  /// socket means a new ROUTER identity, so the broker cannot confuse us with our old self.
  void reconnect(std::chrono::milliseconds delay) {
    abandon_job("the broker connection is being reset");
    close_socket();
    const auto until = steady::now() + delay;
    while (!stop_.load()) {
      const auto now = steady::now();
      if (now >= until) break;
      std::this_thread::sleep_for(std::min<steady::duration>(until - now, std::chrono::milliseconds(20)));
    }
    if (stop_.load()) return;
    open_socket();
  }

  bool send(messages::message_kind kind, std::uint64_t job_id, const std::string& run_id,
            const std::string& body) {
    if (!socket_) return false;
    messages::envelope env;
    env.kind = kind;
    env.job_id = job_id;
    env.run_id = run_id;
    const std::string env_bytes = messages::encode(env);
    try {
      // dontwait: a full queue towards a dead broker must never block the loop (heartbeats and the
      // compiler's deadline depend on it). A message that does not fit is dropped and logged.
      const std::string_view header(messages::protocol_header);
      if (!socket_->send(zmq::buffer(header), zmq::send_flags::sndmore | zmq::send_flags::dontwait)) {
        worker_log()->warn("{}send queue full; dropped {}", job_id ? job_tag(job_id) : "",
                           messages::to_string(kind));
        return false;
      }
      socket_->send(zmq::buffer(env_bytes), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
      socket_->send(zmq::buffer(body), zmq::send_flags::dontwait);
    } catch (const zmq::error_t& error) {
      worker_log()->warn("{}could not send {}: {}", job_id ? job_tag(job_id) : "",
                         messages::to_string(kind), error.what());
      return false;
    }
    last_sent_ = steady::now();
    return true;
  }

  void send_heartbeat() {
    messages::heartbeat body{heartbeat_sequence_++};
    send(messages::message_kind::heartbeat, 0, {}, messages::encode(body));
  }

  // ---- poll loop -----------------------------------------------------------------------------

  void poll_once() {
    const auto now = steady::now();
    steady::time_point wake = now + max_poll_wait;
    wake = std::min(wake, last_sent_ + options_.heartbeat);
    wake = std::min(wake, last_heard_ + options_.heartbeat * options_.liveness);
    if (job_ && job_->deadline) wake = std::min(wake, *job_->deadline);

    std::vector<zmq_pollitem_t> items;
    items.push_back({socket_->handle(), 0, ZMQ_POLLIN, 0});
    std::size_t output_item = SIZE_MAX;
    if (job_ && job_->child.output_fd() >= 0) {
      output_item = items.size();
      items.push_back({nullptr, job_->child.output_fd(), ZMQ_POLLIN, 0});
    }
    if (job_ && job_->child.exit_fd() >= 0) {
      items.push_back({nullptr, job_->child.exit_fd(), ZMQ_POLLIN, 0});
    }
    auto wait = std::chrono::ceil<std::chrono::milliseconds>(std::max(wake - now, steady::duration::zero()));
    // Without a pidfd nothing wakes us when the compiler exits; look again after 1 ms.
    if (job_ && job_->child.exit_fd() < 0) wait = std::min(wait, std::chrono::milliseconds(1));

    try {
      zmq::poll(items.data(), items.size(), wait);
    } catch (const zmq::error_t& error) {
      if (error.num() != EINTR) worker_log()->warn("poll failed: {}", error.what());
      return;
    }
    if (items[0].revents & ZMQ_POLLIN) receive_all();
    if (job_) {
      if (output_item != SIZE_MAX && items[output_item].revents != 0) job_->child.drain_output();
      service_job();
    }
  }

  void receive_all() {
    while (socket_ && !reconnect_delay_) {
      std::vector<zmq::message_t> parts;
      std::optional<std::size_t> received;
      try {
        received = zmq::recv_multipart(*socket_, std::back_inserter(parts), zmq::recv_flags::dontwait);
      } catch (const zmq::error_t& error) {
        if (error.num() != EINTR) worker_log()->warn("receive failed: {}", error.what());
        return;
      }
      if (!received) return;
      last_heard_ = steady::now();  // any message at all proves the broker is alive
      handle_message(parts);
    }
  }

  void handle_message(std::vector<zmq::message_t>& parts) {
    auto log = worker_log();
    // Tolerate a REQ-style empty delimiter in front of the three frames.
    std::size_t first = (parts.size() == 4 && parts[0].size() == 0) ? 1 : 0;
    if (parts.size() - first != 3) {
      log->warn("dropped a message of {} frames from the broker (expected 3)", parts.size());
      return;
    }
    messages::parsed_frames frames;
    try {
      frames = messages::parse_frames(parts[first].to_string_view(), parts[first + 1].to_string_view(),
                                      parts[first + 2].to_string_view());
    } catch (const messages::decode_error& error) {
      log->warn("dropped a malformed message from the broker: {}", error.what());
      return;
    }
    backoff_ = options_.reconnect_initial;  // a well-formed message: the connection works
    switch (frames.env.kind) {
    case messages::message_kind::heartbeat:
      return;
    case messages::message_kind::disconnect: {
      std::string reason;
      try {
        reason = messages::decode<messages::disconnect>(frames.body).reason;
      } catch (const messages::decode_error&) {
        reason = "(unreadable reason)";
      }
      log->warn("broker sent DISCONNECT ({}); reconnecting in {} ms", reason,
                options_.reconnect_initial.count());
      reconnect_delay_ = options_.reconnect_initial;
      return;
    }
    case messages::message_kind::compile_request:
      start_job(frames.env, frames.body);
      return;
    default:
      log->warn("{}dropped unexpected {} from the broker",
                frames.env.job_id ? job_tag(frames.env.job_id) : "", messages::to_string(frames.env.kind));
      return;
    }
  }

  // ---- jobs ----------------------------------------------------------------------------------

  void reply(std::uint64_t job_id, const std::string& run_id, messages::compile_reply body) {
    body.worker_id = worker_id_;
    auto log = worker_log();
    if (body.status == messages::compile_status::ok) {
      log->info("{}{} in {:.3f} s ({} artifact bytes)", job_tag(job_id), messages::to_string(body.status),
                static_cast<double>(body.compile_ns) / 1e9, body.artifact.size());
    } else {
      // A compile error is an expected result (data for the engine), not a worker problem.
      const auto level = body.status == messages::compile_status::failed ||
                                 body.status == messages::compile_status::timed_out
                             ? spdlog::level::info
                             : spdlog::level::warn;
      log->log(level, "{}{}: {}", job_tag(job_id), messages::to_string(body.status), body.error);
    }
    send(messages::message_kind::compile_reply, job_id, run_id, messages::encode(body));
  }

  static messages::compile_reply failure(messages::compile_status status, std::string error) {
    messages::compile_reply body;
    body.status = status;
    body.error = std::move(error);
    return body;
  }

  void start_job(const messages::envelope& env, const std::string& body_bytes) {
    auto log = worker_log();
    if (env.job_id == 0) {
      log->error("dropped a COMPILE_REQUEST without a job_id; the broker must number its jobs");
      return;
    }
    if (job_) {
      reply(env.job_id, env.run_id,
            failure(messages::compile_status::internal_error,
                    "worker busy: job " + std::to_string(job_->job_id) + " is still compiling"));
      return;
    }
    fs::path dir;
    try {
      messages::compile_request request;
      try {
        request = messages::decode<messages::compile_request>(body_bytes);
      } catch (const messages::decode_error& error) {
        reply(env.job_id, env.run_id,
              failure(messages::compile_status::rejected, std::string("malformed compile_request: ") + error.what()));
        return;
      }
      if (request.argv.empty() || request.argv.front().empty()) {
        reply(env.job_id, env.run_id, failure(messages::compile_status::rejected, "the compile request has an empty argv"));
        return;
      }
      const std::string& argv0 = request.argv.front();
      const std::string compiler = fs::path(argv0).filename().string();
      if (!compiler_allowed(argv0, options_.allowed_compilers)) {
        reply(env.job_id, env.run_id,
              failure(messages::compile_status::rejected,
                      "compiler '" + argv0 + "' is not allowed on worker " + worker_id_ +
                          " (allowed: " + join(options_.allowed_compilers, ", ") +
                          "); start the worker with --allow-compiler " + compiler +
                          " if it is a compiler you trust"));
        return;
      }
      for (const messages::source_file& source : request.sources) {
        const std::string why = check_source_name(source.name);
        if (!why.empty()) {
          reply(env.job_id, env.run_id,
                failure(messages::compile_status::rejected,
                        "source name '" + source.name + "' " + why +
                            "; names must be relative paths inside the job directory, without '..'"));
          return;
        }
      }

      // mkdtemp creates the directory with mode 0700: other users cannot read or plant files.
      std::string pattern = (options_.work_root / ("rpl-job-" + std::to_string(env.job_id) + "-XXXXXX")).string();
      if (::mkdtemp(pattern.data()) == nullptr) {
        reply(env.job_id, env.run_id,
              failure(messages::compile_status::internal_error,
                      "cannot create a job directory under " + options_.work_root.string() + ": " +
                          std::strerror(errno)));
        return;
      }
      dir = pattern;
      for (const messages::source_file& source : request.sources) {
        const fs::path file = dir / fs::path(source.name).lexically_normal();
        fs::create_directories(file.parent_path());
        std::ofstream stream(file, std::ios::binary | std::ios::trunc);
        stream.write(source.content.data(), static_cast<std::streamsize>(source.content.size()));
        stream.close();
        if (!stream) throw std::runtime_error("cannot write source " + file.string());
      }

      const fs::path artifact = dir / artifact_name;
      child_options child;
      child.cwd = dir;
      child.capture_output = true;
      child.max_output_bytes = static_cast<std::size_t>(request.max_output_bytes);
      child.kill_on_parent_death = true;  // a worker killed by SIGKILL takes its compiler along
      bool wants_artifact = false;
      for (const std::string& word : request.argv) {
        child.argv.push_back(substitute_out(word, artifact.string(), wants_artifact));
      }
      // nvcc reports registers, shared/local memory and spills per kernel only when asked; the
      // flag changes nothing in the artifact.
      if (nvcc_needs_resource_flag(child.argv)) {
        child.argv.push_back("--resource-usage");
      }

      log->info("{}compiling with {} in {}", job_tag(env.job_id), join(child.argv, " "), dir.string());
      child_process process = child_process::spawn(child);
      if (!process.launched()) {
        const child_outcome outcome = process.finish();
        remove_dir(env.job_id, dir);
        reply(env.job_id, env.run_id,
              failure(messages::compile_status::internal_error,
                      "could not start " + compiler + " on worker " + worker_id_ + ": " + outcome.launch_error));
        return;
      }
      job_.emplace(running_job{env.job_id, env.run_id, compiler, dir, artifact, wants_artifact,
                               request.deadline_ms, std::nullopt, std::move(process)});
      // deadline_ms == 0 means no deadline; liveness still guards the worker itself.
      if (request.deadline_ms > 0) {
        job_->deadline = steady::now() + std::chrono::milliseconds(request.deadline_ms);
      }
    } catch (const std::exception& error) {
      job_.reset();
      if (!dir.empty()) remove_dir(env.job_id, dir);
      reply(env.job_id, env.run_id,
            failure(messages::compile_status::internal_error,
                    std::string("worker ") + worker_id_ + " could not run the job: " + error.what()));
    }
  }

  void service_job() {
    if (job_->child.try_reap()) {
      complete_job();
    } else if (job_->deadline && steady::now() >= *job_->deadline) {
      job_->child.time_out();
      complete_job();
    }
  }

  void complete_job() {
    running_job job = std::move(*job_);
    job_.reset();
    messages::compile_reply body;
    try {
      child_outcome outcome = job.child.finish();
      body.exit_code = outcome.exit_code;
      body.term_signal = outcome.term_signal;
      body.compile_ns = outcome.wall.count();
      body.output = std::move(outcome.output);
      const std::string truncated =
          outcome.output_truncated ? " (output truncated to " + std::to_string(body.output.size()) + " bytes)" : "";
      if (outcome.timed_out) {
        body.status = messages::compile_status::timed_out;
        body.error = "compiler exceeded its deadline of " + std::to_string(job.deadline_ms) +
                     " ms; its process group was killed";
      } else if (outcome.term_signal != 0) {
        body.status = messages::compile_status::failed;
        body.error = job.compiler + " was killed by " + describe_signal(outcome.term_signal) + truncated;
      } else if (outcome.exit_code != 0) {
        body.status = messages::compile_status::failed;
        body.error = job.compiler + " exited with status " + std::to_string(outcome.exit_code) + truncated;
      } else if (!job.wants_artifact) {
        body.status = messages::compile_status::ok;
      } else if (!fs::is_regular_file(job.artifact)) {
        body.status = messages::compile_status::no_artifact;
        body.error = job.compiler + " exited 0 but did not write {OUT} (" + job.artifact.string() + ")";
      } else {
        const auto size = fs::file_size(job.artifact);
        // Leave room for the output and the envelope so the broker's ZMQ_MAXMSGSIZE accepts it.
        if (size + body.output.size() + 65536 > options_.max_message_bytes) {
          body.status = messages::compile_status::internal_error;
          body.error = "artifact of " + std::to_string(size) + " bytes exceeds the message limit of " +
                       std::to_string(options_.max_message_bytes) + " bytes";
        } else {
          body.artifact.resize(static_cast<std::size_t>(size));
          std::ifstream stream(job.artifact, std::ios::binary);
          stream.read(body.artifact.data(), static_cast<std::streamsize>(size));
          if (!stream) throw std::runtime_error("cannot read the artifact " + job.artifact.string());
          body.has_artifact = true;
          body.status = messages::compile_status::ok;
          body.resources = parse_ptxas_resource_usage(body.output);
        }
      }
    } catch (const std::exception& error) {
      body.status = messages::compile_status::internal_error;
      body.error = std::string("worker ") + worker_id_ + " could not finish the job: " + error.what();
      body.artifact.clear();
      body.has_artifact = false;
    }
    remove_dir(job.job_id, job.dir);
    reply(job.job_id, job.run_id, std::move(body));
  }

  /// Kills the running compile without replying (the broker re-queues the job itself).
  void abandon_job(const char* why) {
    if (!job_) return;
    worker_log()->warn("{}abandoned: {}", job_tag(job_->job_id), why);
    job_->child.kill_group(SIGKILL);
    const std::uint64_t job_id = job_->job_id;
    const fs::path dir = job_->dir;
    job_.reset();  // the child_process destructor reaps the killed compiler
    remove_dir(job_id, dir);
  }

  void remove_dir(std::uint64_t job_id, const fs::path& dir) {
    if (options_.keep_temp) {
      worker_log()->info("{}kept {}", job_tag(job_id), dir.string());
      return;
    }
    std::error_code error;
    fs::remove_all(dir, error);
    if (error) worker_log()->warn("{}could not remove {}: {}", job_tag(job_id), dir.string(), error.message());
  }

  compile_worker_options options_;
  std::atomic<bool>& stop_;
  std::string host_;
  std::int64_t pid_ = 0;
  std::string worker_id_;
  zmq::context_t context_;
  std::optional<zmq::socket_t> socket_;  // declared after context_: closed before it terminates
  steady::time_point last_heard_{};
  steady::time_point last_sent_{};
  std::chrono::milliseconds backoff_{};
  std::optional<std::chrono::milliseconds> reconnect_delay_;
  std::uint64_t heartbeat_sequence_ = 0;
  std::optional<running_job> job_;
};

}  // namespace

bool compiler_allowed(const std::string& argv0, const std::vector<std::string>& allowed) {
  const std::string name = fs::path(argv0).filename().string();
  if (name.empty()) return false;
  const auto& never = never_allowed();
  if (std::find(never.begin(), never.end(), name) != never.end()) return false;
  return std::find(allowed.begin(), allowed.end(), name) != allowed.end();
}

int run_compile_worker(const compile_worker_options& options, std::atomic<bool>& stop_requested) {
  compile_worker worker(options, stop_requested);
  return worker.run();
}

}  // namespace rpl::workers
