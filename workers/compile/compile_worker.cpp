#include "workers/compile/compile_worker.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <signal.h>
#include <stdexcept>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>
#include <utility>

#include <stdlib.h>

#include "messages/codec.hpp"
#include "workers/compile/compile_request_check.hpp"
#include "workers/compile/compile_sandbox.hpp"
#include "workers/compilers/argv_check.hpp"
#include "workers/compilers/compiler_choice.hpp"
#include "workers/compilers/compiler_rules.hpp"
#include "workers/compilers/toolchain_identity.hpp"
#include "workers/process/child_process.hpp"
#include "workers/protocol/host_resources.hpp"
#include "workers/protocol/job_handler.hpp"
#include "workers/protocol/worker_log.hpp"
#include "workers/protocol/worker_session.hpp"

namespace rpl::workers {

namespace {

using steady = std::chrono::steady_clock;
namespace fs = std::filesystem;

constexpr const char* artifact_name = artifact_file_name;
/// Room left in a reply for the output and the envelope, so the broker's ZMQ_MAXMSGSIZE accepts it.
constexpr std::uintmax_t reply_overhead_bytes = 65536;

std::string join(const std::vector<std::string>& words, const char* separator) {
  std::string text;
  for (const std::string& word : words) {
    if (!text.empty())
      text += separator;
    text += word;
  }
  return text;
}

std::string job_tag(std::uint64_t job_id) {
  return "[job " + std::to_string(job_id) + "] ";
}

messages::compile_reply failure(messages::compile_status status, std::string error) {
  messages::compile_reply body;
  body.status = status;
  body.error = std::move(error);
  return body;
}

/// One compile in flight.
struct running_job {
  std::uint64_t job_id = 0;
  std::string run_id;
  std::string compiler; ///< basename of argv[0], for messages
  const compiler_rules* rules = nullptr;
  fs::path dir;
  fs::path artifact;
  bool wants_artifact = false;
  std::uint32_t deadline_ms = 0;
  std::optional<steady::time_point> deadline;
  child_process child;
  std::uint64_t max_artifact_bytes = 0; ///< compile_request's; 0: the message cap only
  std::uint32_t chunk_bytes = 0;        ///< compile_request's; 0: the artifact in the reply
  bool sandboxed = false; ///< run by bwrap, which reports a signal N as exit status 128+N
};

/// The compile job: a private directory with the sources, the allow-listed compiler as a child
/// process (argv adjusted by its compiler_rules), the artifact and the reply. worker_session does
/// the protocol around it.
class compile_job_handler final : public job_handler {
public:
  compile_job_handler(const compile_worker_options& options,
                      std::string worker_id,
                      std::vector<messages::toolchain> toolchains,
                      std::filesystem::path bwrap)
      : options_(options), worker_id_(std::move(worker_id)), toolchains_(std::move(toolchains)),
        bwrap_(std::move(bwrap)) {
    validate_options();
  }
  ~compile_job_handler() override {
    if (!spare_dir_.empty()) {
      std::error_code error;
      fs::remove_all(spare_dir_, error);
    }
  }
  compile_job_handler(const compile_job_handler&) = delete;
  compile_job_handler& operator=(const compile_job_handler&) = delete;

  /// Where job folders are made (--work-dir, else $TMPDIR or /tmp).
  const fs::path& work_root() const { return options_.work_root; }

  void describe(messages::ready& hello) const override {
    // Names, as the broker matches a job's compiler: an allowed path answers to its file name.
    hello.compilers.clear();
    for (const std::string& entry : options_.allowed_compilers) {
      const std::string name = fs::path(entry).filename().string();
      if (std::find(hello.compilers.begin(), hello.compilers.end(), name) == hello.compilers.end())
        hello.compilers.push_back(name);
    }
    hello.toolchains = toolchains_;
  }
  messages::message_kind request_kind() const override {
    return messages::message_kind::compile_request;
  }
  std::optional<job_reply> start(const messages::envelope& envelope,
                                 std::string_view body) override;
  bool busy() const override { return job_.has_value(); }
  job_wait wait() const override;
  std::optional<job_reply> poll() override;
  void abandon(std::string_view why) override;

private:
  void validate_options();
  std::string toolchain_mismatch(const messages::compile_request& request, const fs::path& program);
  std::optional<job_reply> launch(const messages::envelope& envelope,
                                  const messages::compile_request& request,
                                  const fs::path& program);
  child_options compiler_command(const messages::compile_request& request,
                                 const fs::path& program,
                                 const fs::path& dir,
                                 bool& wants_artifact) const;
  job_reply complete();
  void
  judge(running_job& job, messages::compile_reply& body, std::vector<std::string>& chunks) const;
  void attach_artifact(const running_job& job,
                       messages::compile_reply& body,
                       std::vector<std::string>& chunks) const;
  job_reply
  reply(std::uint64_t job_id, const std::string& run_id, messages::compile_reply body) const;
  /// A private, empty job directory: the one the last job left (emptied), else a new one; empty
  /// path (and errno set) when none can be created.
  fs::path take_dir(std::uint64_t job_id);
  /// Done with a job's directory: kept with --keep-temp; otherwise emptied and kept for the next
  /// job (creating and removing a directory per job cost more than the rest of a trivial job),
  /// or removed when it cannot be emptied.
  void remove_dir(std::uint64_t job_id, const fs::path& dir);

  compile_worker_options options_;
  std::string worker_id_;
  std::vector<messages::toolchain> toolchains_;
  fs::path bwrap_; ///< runs each compiler in a sandbox (compile_sandbox.hpp); empty: --no-sandbox
  /// Toolchain ids of the allowed compilers that jobs named by path (argv[0] with a '/') run,
  /// identified on first use; empty where that path holds no executable.
  std::map<std::string, std::string> ids_by_path_;
  std::optional<running_job> job_;
  fs::path spare_dir_; ///< empty directory for the next job, removed with the handler
};

void compile_job_handler::validate_options() {
  if (options_.work_root.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    options_.work_root = (tmp != nullptr && *tmp != '\0') ? fs::path(tmp) : fs::path("/tmp");
  }
  std::error_code error;
  fs::create_directories(options_.work_root, error);
  if (!fs::is_directory(options_.work_root)) {
    throw std::invalid_argument("compile worker work root " + options_.work_root.string() +
                                " is not a usable directory" +
                                (error ? ": " + error.message() : std::string()) +
                                "; fix: pass --work-dir with a writable folder, or set TMPDIR");
  }
  for (const std::string& entry : options_.allowed_compilers) {
    if (runs_any_command(fs::path(entry).filename().string())) {
      worker_log()->warn(
          "'{}' is on the allow-list but can run arbitrary commands; it stays refused", entry);
    } else if (entry.find('/') != std::string::npos && !fs::path(entry).is_absolute()) {
      worker_log()->warn("--allow-compiler {}: a relative path would name a file in the job "
                         "folder; it is ignored (give a name or an absolute path)",
                         entry);
    }
  }
}

std::optional<job_reply> compile_job_handler::start(const messages::envelope& envelope,
                                                    std::string_view body) {
  if (job_) {
    return reply(
        envelope.job_id, envelope.run_id,
        failure(messages::compile_status::internal_error,
                "worker busy: job " + std::to_string(job_->job_id) + " is still compiling"));
  }
  messages::compile_request request;
  try {
    request = messages::decode<messages::compile_request>(body);
  } catch (const messages::decode_error& error) {
    return reply(envelope.job_id, envelope.run_id,
                 failure(messages::compile_status::rejected,
                         std::string("malformed compile_request: ") + error.what()));
  }
  if (std::string why = request_refusal(request); !why.empty()) {
    return reply(envelope.job_id, envelope.run_id,
                 failure(messages::compile_status::rejected, std::move(why)));
  }
  // Which file runs: this worker's own allowed compiler, never the file a name or path points at
  // on the engine's say (compiler_choice.hpp).
  const compiler_choice choice = choose_compiler(request.argv.front(), options_.allowed_compilers);
  if (choice.missing) {
    return reply(envelope.job_id, envelope.run_id,
                 failure(messages::compile_status::internal_error,
                         "could not start " + fs::path(request.argv.front()).filename().string() +
                             " on worker " + worker_id_ + ": " + choice.refusal));
  }
  if (choice.program.empty()) {
    return reply(envelope.job_id, envelope.run_id,
                 failure(messages::compile_status::rejected,
                         choice.refusal + " (worker " + worker_id_ + ")"));
  }
  if (std::string why = toolchain_mismatch(request, choice.program); !why.empty()) {
    return reply(envelope.job_id, envelope.run_id,
                 failure(messages::compile_status::toolchain_mismatch, std::move(why)));
  }
  return launch(envelope, request, choice.program);
}

/// A job that names its compiler by path runs the allowed compiler that is that file, not
/// necessarily the compiler of that name on this worker's PATH that READY described: the worker
/// checks its identity against the engine's itself. Empty when it matches (or the job asks for no
/// check, or names a bare name). Only an allowed compiler is ever identified (run with --version).
std::string compile_job_handler::toolchain_mismatch(const messages::compile_request& request,
                                                    const fs::path& program) {
  const std::string& argv0 = request.argv.front();
  if (!request.match_toolchain || argv0.find('/') == std::string::npos)
    return {};
  auto known = ids_by_path_.find(program.string());
  if (known == ids_by_path_.end()) {
    const auto found = identify_toolchain(program.string());
    known = ids_by_path_.emplace(program.string(), found ? found->id : std::string()).first;
  }
  if (known->second == request.toolchain_id)
    return {};
  return "worker " + worker_id_ + " has " +
         (known->second.empty() ? "no executable " + argv0 : argv0 + " as " + known->second) +
         "; the run asks for " + request.toolchain_id;
}

/// Creates the job's private directory, checks the arguments the compiler would get there, writes
/// the sources and starts the compiler (in its sandbox).
std::optional<job_reply> compile_job_handler::launch(const messages::envelope& envelope,
                                                     const messages::compile_request& request,
                                                     const fs::path& program) {
  const std::string compiler = program.filename().string();
  const fs::path dir = take_dir(envelope.job_id);
  if (dir.empty()) {
    return reply(envelope.job_id, envelope.run_id,
                 failure(messages::compile_status::internal_error,
                         "cannot create a job directory under " + options_.work_root.string() +
                             ": " + std::strerror(errno)));
  }
  try {
    bool wants_artifact = false;
    child_options command = compiler_command(request, program, dir, wants_artifact);
    // Judged as it will run: {OUT} replaced, the compiler rules' additions made.
    if (const auto refused = check_argv(command.argv, {dir, options_.allowed_paths})) {
      remove_dir(envelope.job_id, dir);
      return reply(envelope.job_id, envelope.run_id,
                   failure(messages::compile_status::rejected, refused->message()));
    }
    for (const messages::source_file& source : request.sources) {
      const fs::path file = dir / fs::path(source.name).lexically_normal();
      fs::create_directories(file.parent_path());
      std::ofstream stream(file, std::ios::binary | std::ios::trunc);
      stream.write(source.content.data(), static_cast<std::streamsize>(source.content.size()));
      stream.close();
      if (!stream)
        throw std::runtime_error("cannot write source " + file.string());
    }
    worker_log()->info("{}compiling with {} in {}{}", job_tag(envelope.job_id),
                       join(command.argv, " "), dir.string(),
                       bwrap_.empty() ? " (no sandbox)" : "");
    if (!bwrap_.empty()) {
      // The compiler's installation and the allowed paths stay visible where a hidden folder
      // (/home, /tmp) holds them.
      sandbox_layout layout{dir, options_.work_root, options_.private_paths,
                            options_.allowed_paths};
      std::error_code error;
      layout.shown.push_back(installation_of(program));
      layout.shown.push_back(installation_of(fs::canonical(program, error)));
      command.argv = sandbox_argv(bwrap_, layout, command.argv);
    }
    child_process process = child_process::spawn(command);
    if (!process.launched()) {
      const child_outcome outcome = process.finish();
      remove_dir(envelope.job_id, dir);
      return reply(envelope.job_id, envelope.run_id,
                   failure(messages::compile_status::internal_error,
                           "could not start " + compiler + " on worker " + worker_id_ + ": " +
                               outcome.launch_error));
    }
    job_.emplace(running_job{envelope.job_id, envelope.run_id, compiler,
                             &compiler_rules_for({program.string()}), dir, dir / artifact_name,
                             wants_artifact, request.deadline_ms, std::nullopt,
                             std::move(process)});
    // deadline_ms == 0 means no deadline; liveness still guards the worker itself.
    if (request.deadline_ms > 0)
      job_->deadline = steady::now() + std::chrono::milliseconds(request.deadline_ms);
    job_->max_artifact_bytes = request.max_artifact_bytes;
    job_->chunk_bytes = request.chunk_bytes;
    job_->sandboxed = !bwrap_.empty();
    return std::nullopt;
  } catch (const std::exception& error) {
    job_.reset();
    remove_dir(envelope.job_id, dir);
    return reply(envelope.job_id, envelope.run_id,
                 failure(messages::compile_status::internal_error,
                         "worker " + worker_id_ + " could not run the job: " + error.what()));
  }
}

/// The compiler's child_options: argv[0] the chosen program, {OUT} replaced by the artifact path,
/// then the argv changes its compiler_rules ask for (nvcc's resource report).
child_options compile_job_handler::compiler_command(const messages::compile_request& request,
                                                    const fs::path& program,
                                                    const fs::path& dir,
                                                    bool& wants_artifact) const {
  child_options child;
  child.cwd = dir;
  child.capture_output = true;
  child.max_output_bytes = static_cast<std::size_t>(request.max_output_bytes);
  child.kill_on_parent_death = true; // a worker killed by SIGKILL takes its compiler along
  child.argv = job_argv(request, program, dir, wants_artifact);
  return child;
}

job_wait compile_job_handler::wait() const {
  job_wait wait;
  if (job_->child.output_fd() >= 0)
    wait.fds.push_back(job_->child.output_fd());
  if (job_->child.exit_fd() >= 0)
    wait.fds.push_back(job_->child.exit_fd());
  wait.poll_by = job_->deadline;
  // Without a pidfd nothing wakes the session when the compiler exits; look again after 1 ms.
  if (job_->child.exit_fd() < 0) {
    const auto soon = steady::now() + std::chrono::milliseconds(1);
    wait.poll_by = wait.poll_by ? std::min(*wait.poll_by, soon) : soon;
  }
  return wait;
}

std::optional<job_reply> compile_job_handler::poll() {
  job_->child.drain_output();
  if (job_->child.try_reap())
    return complete();
  if (job_->deadline && steady::now() >= *job_->deadline) {
    job_->child.time_out();
    return complete();
  }
  return std::nullopt;
}

job_reply compile_job_handler::complete() {
  running_job job = std::move(*job_);
  job_.reset();
  messages::compile_reply body;
  std::vector<std::string> chunks;
  try {
    judge(job, body, chunks);
  } catch (const std::exception& error) {
    body.status = messages::compile_status::internal_error;
    body.error = "worker " + worker_id_ + " could not finish the job: " + error.what();
    body.artifact.clear();
    body.has_artifact = false;
    body.artifact_bytes = 0;
    body.artifact_chunks = 0;
    chunks.clear();
  }
  remove_dir(job.job_id, job.dir);
  auto out = reply(job.job_id, job.run_id, std::move(body));
  for (auto& chunk : chunks)
    out.before.emplace_back(messages::message_kind::artifact_chunk, std::move(chunk));
  return out;
}

/// Fills `body` from the finished compiler: its output and exit, then the status (a compile error
/// is `failed`, an expected result; a missing {OUT} is `no_artifact`).
void compile_job_handler::judge(running_job& job,
                                messages::compile_reply& body,
                                std::vector<std::string>& chunks) const {
  child_outcome outcome = job.child.finish();
  if (job.sandboxed && !outcome.timed_out && outcome.term_signal == 0 && outcome.exit_code > 128 &&
      outcome.exit_code < 128 + 65) {
    // bwrap reports a compiler killed by signal N as its own exit status 128+N.
    outcome.term_signal = outcome.exit_code - 128;
    outcome.exit_code = -1;
  }
  body.exit_code = outcome.exit_code;
  body.term_signal = outcome.term_signal;
  body.compile_ns = outcome.wall.count();
  body.output = std::move(outcome.output);
  const std::string truncated =
      outcome.output_truncated
          ? " (output truncated to " + std::to_string(body.output.size()) + " bytes)"
          : "";
  if (outcome.timed_out) {
    body.status = messages::compile_status::timed_out;
    body.error = "compiler exceeded its deadline of " + std::to_string(job.deadline_ms) +
                 " ms; its process group was killed";
  } else if (!outcome.succeeded()) {
    body.status = messages::compile_status::failed;
    body.error = job.compiler + " " + describe_exit(outcome) + truncated;
  } else if (!job.wants_artifact) {
    body.status = messages::compile_status::ok;
  } else if (!fs::is_regular_file(job.artifact)) {
    body.status = messages::compile_status::no_artifact;
    body.error = job.compiler + " exited 0 but did not write {OUT} (" + job.artifact.string() + ")";
  } else {
    attach_artifact(job, body, chunks);
  }
}

void compile_job_handler::attach_artifact(const running_job& job,
                                          messages::compile_reply& body,
                                          std::vector<std::string>& chunks) const {
  const auto size = fs::file_size(job.artifact);
  if (job.max_artifact_bytes > 0 && size > job.max_artifact_bytes) {
    body.status = messages::compile_status::too_large;
    body.error = "artifact of " + std::to_string(size) + " bytes exceeds the engine's limit of " +
                 std::to_string(job.max_artifact_bytes) + " bytes (--max-artifact-bytes)";
    return;
  }
  if (job.chunk_bytes > 0) {
    // Streamed: read and encoded a bounded piece at a time; no message is larger than a chunk.
    std::ifstream stream(job.artifact, std::ios::binary);
    messages::artifact_chunk chunk;
    for (std::uintmax_t offset = 0; offset < size;) {
      const auto length = std::min<std::uintmax_t>(job.chunk_bytes, size - offset);
      chunk.offset = offset;
      chunk.bytes.resize(static_cast<std::size_t>(length));
      stream.read(chunk.bytes.data(), static_cast<std::streamsize>(length));
      if (!stream)
        throw std::runtime_error("cannot read the artifact " + job.artifact.string());
      chunks.push_back(messages::encode(chunk));
      offset += length;
    }
    body.artifact_bytes = size;
    body.artifact_chunks = static_cast<std::uint32_t>(chunks.size());
    body.has_artifact = true;
    body.status = messages::compile_status::ok;
    body.resources = job.rules->parse_resource_usage(body.output);
    return;
  }
  if (size + body.output.size() + reply_overhead_bytes > options_.max_message_bytes) {
    body.status = messages::compile_status::internal_error;
    body.error = "artifact of " + std::to_string(size) + " bytes exceeds the message limit of " +
                 std::to_string(options_.max_message_bytes) + " bytes";
    return;
  }
  body.artifact.resize(static_cast<std::size_t>(size));
  std::ifstream stream(job.artifact, std::ios::binary);
  stream.read(body.artifact.data(), static_cast<std::streamsize>(size));
  if (!stream)
    throw std::runtime_error("cannot read the artifact " + job.artifact.string());
  body.has_artifact = true;
  body.status = messages::compile_status::ok;
  body.resources = job.rules->parse_resource_usage(body.output);
}

/// Kills the running compile without replying (the broker re-queues the job itself).
void compile_job_handler::abandon(std::string_view why) {
  if (!job_)
    return;
  worker_log()->warn("{}abandoned: {}", job_tag(job_->job_id), why);
  job_->child.kill_group(SIGKILL);
  const std::uint64_t job_id = job_->job_id;
  const fs::path dir = job_->dir;
  job_.reset(); // the child_process destructor reaps the killed compiler
  remove_dir(job_id, dir);
}

job_reply compile_job_handler::reply(std::uint64_t job_id,
                                     const std::string& run_id,
                                     messages::compile_reply body) const {
  body.worker_id = worker_id_;
  auto log = worker_log();
  if (body.status == messages::compile_status::ok) {
    log->info("{}{} in {:.3f} s ({} artifact bytes)", job_tag(job_id),
              messages::to_string(body.status), static_cast<double>(body.compile_ns) / 1e9,
              body.artifact_chunks > 0 ? body.artifact_bytes : body.artifact.size());
  } else {
    // A compile error is an expected result (data for the engine), not a worker problem.
    const auto level = body.status == messages::compile_status::failed ||
                               body.status == messages::compile_status::timed_out
                           ? spdlog::level::info
                           : spdlog::level::warn;
    log->log(level, "{}{}: {}", job_tag(job_id), messages::to_string(body.status), body.error);
  }
  return job_reply{.job_id = job_id,
                   .run_id = run_id,
                   .kind = messages::message_kind::compile_reply,
                   .body = messages::encode(body)};
}

fs::path compile_job_handler::take_dir(std::uint64_t job_id) {
  if (!spare_dir_.empty()) {
    return std::exchange(spare_dir_, fs::path());
  }
  // mkdtemp creates the directory with mode 0700: other users cannot read or plant files.
  std::string pattern = (options_.work_root / ("rpl-job-" + std::to_string(::getpid()) + "-" +
                                               std::to_string(job_id) + "-XXXXXX"))
                            .string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    return {};
  }
  return pattern;
}

void compile_job_handler::remove_dir(std::uint64_t job_id, const fs::path& dir) {
  if (options_.keep_temp) {
    worker_log()->info("{}kept {}", job_tag(job_id), dir.string());
    return;
  }
  std::error_code error;
  if (spare_dir_.empty()) {
    // What the job wrote goes; the directory (still ours, mode 0700) serves the next job.
    bool emptied = true;
    bool found = false;
    for (fs::directory_iterator entry(dir, error), end; !error && entry != end;
         entry.increment(error)) {
      found = true;
      std::error_code removed;
      fs::remove_all(entry->path(), removed);
      emptied = emptied && !removed;
    }
    // Read once more only when something was removed: a job that wrote nothing (a check, a
    // failed start) leaves nothing to look for.
    if (!error && emptied && (!found || (fs::is_empty(dir, error) && !error))) {
      spare_dir_ = dir;
      return;
    }
    error.clear();
  }
  fs::remove_all(dir, error);
  if (error)
    worker_log()->warn("{}could not remove {}: {}", job_tag(job_id), dir.string(), error.message());
}

/// Job folders (`rpl-job-PID-JOB-XXXXXX`) that a worker killed with SIGKILL left in the work root:
/// removed when a worker starts there, if this user owns them and process PID is gone.
void remove_orphaned_job_dirs(const fs::path& root) {
  std::error_code error;
  std::size_t removed = 0;
  for (fs::directory_iterator entry(root, error), end; !error && entry != end;
       entry.increment(error)) {
    const std::string name = entry->path().filename().string();
    if (name.rfind("rpl-job-", 0) != 0)
      continue;
    const auto dash = name.find('-', 8);
    if (dash == std::string::npos || dash == 8 || name.find_first_not_of("0123456789", 8) != dash)
      continue; // an older worker's folder (no pid): nothing tells whether it is in use
    const auto pid = static_cast<pid_t>(std::stol(name.substr(8, dash - 8)));
    struct stat info {};
    if (pid == ::getpid() || ::lstat(entry->path().c_str(), &info) != 0 ||
        info.st_uid != ::getuid() || !S_ISDIR(info.st_mode) ||
        (::kill(pid, 0) == 0 || errno != ESRCH))
      continue;
    std::error_code gone;
    fs::remove_all(entry->path(), gone);
    removed += gone ? 0 : 1;
  }
  if (removed > 0)
    worker_log()->info("removed {} job folder(s) in {} left by workers that were killed", removed,
                       root.string());
}

/// What READY describes: for each allowed file name, the program a job naming it runs
/// (choose_compiler: the name through PATH, else the first allowed path of that name).
std::vector<std::string> toolchain_names(const std::vector<std::string>& allowed) {
  std::vector<std::string> programs;
  for (const std::string& entry : allowed) {
    const auto program = choose_compiler(fs::path(entry).filename().string(), allowed).program;
    if (!program.empty() &&
        std::find(programs.begin(), programs.end(), program.string()) == programs.end())
      programs.push_back(program.string());
  }
  return programs;
}

/// bwrap's path when compilers run sandboxed; empty without a sandbox. Throws when the sandbox is
/// required and this host cannot make one.
fs::path sandbox_for(const compile_worker_options& options) {
  if (options.sandbox == sandbox_mode::off) {
    worker_log()->debug("--no-sandbox: compilers run unsandboxed, as this worker's user; only the "
                        "argument checks stand between an engine and this host");
    return {};
  }
  fs::path root = options.work_root;
  if (root.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    root = (tmp != nullptr && *tmp != '\0') ? fs::path(tmp) : fs::path("/tmp");
  }
  std::error_code error;
  fs::create_directories(root, error); // the handlers check it; the probe needs it first
  const sandbox_probe probe = probe_sandbox(root, options.private_paths);
  if (probe.works())
    return probe.bwrap;
  if (options.sandbox == sandbox_mode::required)
    throw std::invalid_argument("compilers cannot be sandboxed: " + probe.why +
                                "; or pass --no-sandbox to run them unsandboxed");
  worker_log()->warn("compilers run unsandboxed: {}", probe.why);
  return {};
}

worker_session_options session_options(const compile_worker_options& options) {
  worker_session_options session;
  session.service = "compile";
  session.endpoint = options.endpoint;
  session.heartbeat = options.heartbeat;
  session.liveness = options.liveness;
  session.reconnect_initial = options.reconnect_initial;
  session.reconnect_max = options.reconnect_max;
  session.max_message_bytes = options.max_message_bytes;
  session.curve = options.curve;
  session.once = options.once;
  return session;
}

} // namespace

bool compiler_allowed(const std::string& argv0, const std::vector<std::string>& allowed) {
  return compiler_name_allowed(argv0, allowed);
}

int run_compile_worker(const compile_worker_options& options, std::atomic<bool>& stop_requested) {
  // The session checks the connection settings first, then the handler its work root.
  worker_session session(session_options(options), stop_requested);
  // Identified once: the same compilers serve every job of this process.
  const auto toolchains = identify_toolchains(toolchain_names(options.allowed_compilers));
  const fs::path bwrap = sandbox_for(options);
  const std::size_t slots = options.slots > 0 ? options.slots : usable_cores();
  std::vector<std::unique_ptr<compile_job_handler>> handlers;
  std::vector<job_handler*> seats;
  for (std::size_t i = 0; i < slots; ++i) {
    handlers.push_back(std::make_unique<compile_job_handler>(options, session.identity().worker_id,
                                                             toolchains, bwrap));
    seats.push_back(handlers.back().get());
  }
  remove_orphaned_job_dirs(handlers.front()->work_root());
  return session.run(seats);
}

} // namespace rpl::workers
