#include "workers/lanes/kernel/kernel_lane.hpp"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <system_error>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "messages/codec.hpp"
#include "workers/lanes/kernel/sanitizer_pass.hpp"
#include "workers/process/child_process.hpp"
#include "workers/process/exit_description.hpp"

namespace rpl::workers {

namespace {

namespace fs = std::filesystem;
using messages::kernel_lane_status;
using messages::measure_status;

/// How long a lane that announced its exit (sticky error) gets before it is killed.
constexpr std::chrono::milliseconds exit_grace{5000};

std::string program_name(const kernel_lane_options& options) {
  return options.program.filename().string();
}

/// " (stderr: last line)" when the process complained before going.
std::string stderr_note(const lane_process& process) {
  const std::string tail = process.stderr_tail();
  if (tail.empty())
    return {};
  const std::size_t last_line = tail.rfind('\n');
  return "; its stderr ends: " +
         first_output_line(last_line == std::string::npos ? tail : tail.substr(last_line + 1));
}

/// The candidate's code object, absolute: the lane process may run elsewhere in the tree.
std::string code_object_path(const std::string& argv0) {
  std::error_code ec;
  const fs::path absolute = fs::absolute(argv0, ec);
  return ec ? argv0 : absolute.lexically_normal().string();
}

} // namespace

std::string lane_finding(kernel_lane_status status) {
  switch (status) {
  case kernel_lane_status::out_of_bounds: return "memory:out_of_bounds";
  case kernel_lane_status::inputs_modified: return "inputs_modified";
  case kernel_lane_status::nondeterministic: return "nondeterministic";
  case kernel_lane_status::timed_phase: return "timed_phase";
  default: return {};
  }
}

measure_status to_measure_status(kernel_lane_status status) {
  switch (status) {
  case kernel_lane_status::ok: return measure_status::ok;
  case kernel_lane_status::wrong_result:
  case kernel_lane_status::out_of_bounds:
  case kernel_lane_status::inputs_modified:
  case kernel_lane_status::nondeterministic:
  case kernel_lane_status::timed_phase: return measure_status::wrong_result;
  case kernel_lane_status::kernel_fault: return measure_status::crashed;
  default: return measure_status::launch_failed;
  }
}

fs::path default_kernel_lane_program(std::string_view api) {
  if (const char* env = std::getenv("RPL_KERNEL_LANE"); env != nullptr && *env != '\0')
    return env;
  const std::string name = api == "hip" ? "rpl-kernel-lane-hip" : "rpl-kernel-lane";
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const fs::path& candidate :
         {self.parent_path() / name, self.parent_path().parent_path() / "bin" / name,
          self.parent_path().parent_path() / "hip" / name}) {
      if (fs::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0)
        return candidate;
    }
  }
  return name;
}

kernel_lane::kernel_lane(kernel_lane_options options) : options_(std::move(options)) {
  if (options_.program.empty())
    options_.program = default_kernel_lane_program();
}

kernel_lane::~kernel_lane() {
  if (process_.running()) {
    const auto stopping = std::chrono::steady_clock::now();
    const std::string ended = process_.stop(std::chrono::milliseconds(2000));
    spdlog::debug(
        "{}: the lane process {} after {:.1f} ms", options_.name, ended,
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - stopping)
            .count());
  }
}

messages::measure_result kernel_lane::measure(const messages::measure_request& request) {
  messages::measure_result result;
  result.lane = options_.name;
  result.status = measure_status::launch_failed;
  last_reply_ = {};
  if (!request.launch) {
    result.reason = "the kernel lane got no launch for " + request.candidate_key +
                    "; fix: give autotune a launch file (--launch FILE)";
    return result;
  }
  if (request.argv.empty() || request.argv.front().empty()) {
    result.reason = "the kernel lane got no code object (argv[0] is empty)";
    return result;
  }
  if (!ensure_started(result))
    return result;
  const auto sent = std::chrono::steady_clock::now();
  const messages::kernel_lane_request lane_request = make_request(request);
  exchange(lane_request, std::chrono::milliseconds(request.timeout_ms) + options_.reply_allowance,
           result);
  spdlog::debug(
      "{}: {} round trip {:.2f} ms", options_.name, request.candidate_key,
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - sent).count());
  return result;
}

void kernel_lane::prepare() {
  messages::measure_result ignored; // a failed start is tried again, and reported, by measure()
  ensure_started(ignored);
}

std::vector<messages::kernel_lane_request>
kernel_lane::sanitizer_requests(const std::vector<messages::measure_request>& requests) {
  std::vector<messages::kernel_lane_request> out;
  for (const auto& request : requests) {
    if (!request.launch || request.argv.empty())
      continue;
    messages::kernel_lane_request r = make_request(request);
    r.launch.reference.reset(); // the candidate's own launches only: the tool's reports are its
    r.launch.strict = false;
    r.launch.offset_bytes = 0;
    r.sampling = {};
    r.sampling.warmup_launches = 0;
    r.sampling.min_samples = 1;
    r.sampling.max_samples = 1;
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<sanitizer_outcome> kernel_lane::sanitize(const sanitizer_plan& plan,
                                                     std::string& unavailable) {
  if (options_.visible_devices_variable != "CUDA_VISIBLE_DEVICES") {
    unavailable = "no sanitizer pass on AMD GPUs: address sanitizer needs an xnack-capable target "
                  "and an -fsanitize=address build; red zones alone checked memory";
    return {};
  }
  const auto sanitizer = find_compute_sanitizer();
  if (!sanitizer) {
    unavailable = "compute-sanitizer was not found (RPL_COMPUTE_SANITIZER, PATH, "
                  "/usr/local/cuda/bin); fix: install the CUDA toolkit's compute-sanitizer";
    return {};
  }
  const auto memory = sanitizer_requests(plan.memory);
  auto hazards = sanitizer_requests(plan.hazards);
  if (memory.empty()) {
    unavailable = "no kernel launch to run under the sanitizer";
    return {};
  }
  if (hazards.empty())
    hazards = memory;
  sanitizer_options run;
  run.sanitizer = *sanitizer;
  run.lane_program = options_.program;
  run.device = options_.device;
  run.timeout = options_.sanitizer_timeout;
  run.log_dir =
      options_.sanitizer_log_dir.empty() ? fs::temp_directory_path() : options_.sanitizer_log_dir;
  run.log_stem = fs::path(memory.front().code_object_path).filename().string();
  std::error_code ec;
  fs::create_directories(run.log_dir, ec);
  std::vector<sanitizer_outcome> outcomes;
  for (const std::string_view tool : sanitizer_tools) {
    const bool hazard_tool = tool == "racecheck" || tool == "synccheck";
    outcomes.push_back(run_sanitizer(run, tool, hazard_tool ? hazards : memory));
    spdlog::info("{}: compute-sanitizer {} on {}: {} in {:.1f} s", options_.name, tool,
                 run.log_stem, outcomes.back().clean ? "clean" : outcomes.back().first_report,
                 outcomes.back().seconds);
    if (!outcomes.back().clean)
      break; // one finding refuses the candidate: the other tools need not run
  }
  return outcomes;
}

bool kernel_lane::ensure_started(messages::measure_result& result) {
  if (process_.running() && process_.has_exited())
    process_.stop(std::chrono::milliseconds(0)); // it died between candidates: start afresh
  if (process_.running())
    return true;
  lane_process_options spawn;
  spawn.argv = {options_.program.string()};
  spawn.argv.insert(spawn.argv.end(), options_.program_args.begin(), options_.program_args.end());
  if (options_.visible_devices_variable.empty()) {
    spawn.argv.insert(spawn.argv.end(), {"--device", std::to_string(options_.device)});
  } else {
    spawn.environment.emplace_back(options_.visible_devices_variable,
                                   std::to_string(options_.device));
  }
  spawn.environment.insert(spawn.environment.end(), options_.environment.begin(),
                           options_.environment.end());
  process_ = lane_process::spawn(spawn);
  ++starts_;
  if (!process_.running()) {
    result.reason = program_name(options_) + " could not be started: " + process_.launch_error() +
                    "; fix: build it (configure with CUDA on) or name it in RPL_KERNEL_LANE";
    return false;
  }
  return read_hello(result);
}

bool kernel_lane::read_hello(messages::measure_result& result) {
  std::string payload;
  std::string error;
  const frame_wait got =
      process_.receive(payload, lane_process::clock::now() + options_.start_timeout, error);
  const std::string who = program_name(options_) + " for device " + std::to_string(options_.device);
  if (got != frame_wait::frame) {
    const std::string how =
        got == frame_wait::timed_out
            ? "did not say hello within " + describe_timeout(options_.start_timeout)
        : got == frame_wait::broken ? "wrote something that is not a frame (" + error + ")"
                                    : "ended before its hello";
    const std::string ended =
        got == frame_wait::closed ? process_.stop(exit_grace) : process_.kill();
    result.reason = who + " " + how + " and " + ended + stderr_note(process_);
    if (process_.stderr_tail().find("libcuda.so") != std::string::npos)
      result.reason += "; fix: the NVIDIA driver's libcuda.so.1 is missing: run the kernel lane on "
                       "a host with an NVIDIA GPU and driver";
    return false;
  }
  try {
    const auto hello = messages::decode<messages::kernel_lane_hello>(payload);
    device_ = hello.device;
    if (hello.protocol != messages::kernel_lane_protocol) {
      result.reason = who + " speaks protocol " + std::to_string(hello.protocol) +
                      ", this engine " + std::to_string(messages::kernel_lane_protocol) +
                      "; fix: use the lane built with this engine";
    } else if (hello.status != kernel_lane_status::ok) {
      result.reason = who + ": no usable GPU: " + hello.reason;
    } else {
      return true;
    }
  } catch (const messages::decode_error& e) {
    result.reason = who + " sent an unreadable hello: " + e.what();
  }
  process_.stop(exit_grace);
  return false;
}

messages::kernel_lane_request kernel_lane::make_request(const messages::measure_request& request) {
  messages::kernel_lane_request out;
  out.sequence = ++sequence_;
  out.candidate_key = request.candidate_key;
  out.code_object_path = code_object_path(request.argv.front());
  out.launch = *request.launch;
  if (!out.launch.reference && first_valid_)
    out.launch.reference = first_valid_;
  out.sampling.warmup_launches = request.warmup;
  out.sampling.min_samples = request.runs;
  out.sampling.max_samples = request.runs;
  out.sampling.time_cap_ms = static_cast<std::uint32_t>(options_.time_cap.count());
  if (options_.sampling && !request.fixed_count) {
    out.sampling.min_samples = std::max<std::uint32_t>(
        request.runs, static_cast<std::uint32_t>(options_.sampling->min_samples));
    out.sampling.max_samples = std::max(out.sampling.min_samples, options_.max_samples);
    out.sampling.max_noise = options_.sampling->max_noise;
    out.sampling.min_time_ns = static_cast<std::int64_t>(options_.sampling->min_time_s * 1e9);
    if (options_.race) {
      const race_board::bound bound = options_.race->current();
      out.sampling.race_bound_ns = bound.high_ns;
      out.sampling.race_noise = std::max(options_.sampling->max_noise, bound.noise);
    }
  }
  out.sampling.race_confidence = options_.race_confidence;
  if (request.fixed_count || !options_.sampling) {
    out.sampling.spot_checks = request.spot_checks;
    out.sampling.spot_seed = std::hash<std::string>{}(request.candidate_key) ^ out.sequence;
  }
  return out;
}

void kernel_lane::exchange(const messages::kernel_lane_request& request,
                           std::chrono::milliseconds timeout,
                           messages::measure_result& result) {
  const auto deadline = lane_process::clock::now() + timeout;
  std::string error;
  if (!process_.send(messages::encode(request), deadline, error)) {
    fail_process(result, measure_status::crashed, "could not take the request (" + error + ")");
    return;
  }
  std::string payload;
  switch (process_.receive(payload, deadline, error)) {
  case frame_wait::frame: break;
  case frame_wait::timed_out:
    fail_process(result, measure_status::timed_out,
                 "gave no answer within " + describe_timeout(timeout) +
                     " (a kernel that never ends?)");
    return;
  case frame_wait::closed:
    fail_process(result, measure_status::crashed, "died while measuring this candidate");
    return;
  case frame_wait::broken:
    fail_process(result, measure_status::crashed, "broke the frame stream (" + error + ")");
    return;
  }
  try {
    last_reply_ = messages::decode<messages::kernel_lane_reply>(payload);
  } catch (const messages::decode_error& e) {
    fail_process(result, measure_status::crashed,
                 std::string("sent an unreadable reply (") + e.what() + ")");
    return;
  }
  if (last_reply_.sequence != request.sequence) {
    fail_process(result, measure_status::crashed,
                 "answered request " + std::to_string(last_reply_.sequence) + " instead of " +
                     std::to_string(request.sequence) + " (" + last_reply_.reason + ")");
    last_reply_ = {};
    return;
  }
  take_reply(request, result);
}

void kernel_lane::fail_process(messages::measure_result& result,
                               measure_status status,
                               const std::string& what) {
  const std::string pid = std::to_string(process_.pid());
  const std::string ended =
      status == measure_status::timed_out ? process_.kill() : process_.stop(exit_grace);
  result.status = status;
  result.reason = "the lane process (pid " + pid + ") " + what + "; it " + ended +
                  stderr_note(process_) + "; a fresh one serves the next candidate";
}

void kernel_lane::take_reply(const messages::kernel_lane_request& request,
                             messages::measure_result& result) {
  const messages::kernel_lane_reply& reply = last_reply_;
  device_ = reply.device;
  result.device_model = reply.device.name;
  result.device_uuid = reply.device.uuid;
  result.status = to_measure_status(reply.status);
  result.samples_ns = reply.samples_ns;
  result.sampling = reply.sampling_state;
  result.noise = reply.noise;
  result.noisy = reply.noisy;
  result.interval_low_ns = reply.interval_low_ns;
  result.interval_high_ns = reply.interval_high_ns;
  if (reply.sampling_state == "raced")
    result.race_bound_ns = request.sampling.race_bound_ns;
  else if (reply.status == kernel_lane_status::ok && options_.race && !reply.samples_ns.empty())
    options_.race->offer(reply.interval_high_ns, reply.noise);
  spdlog::debug("{}: {} setup {:.2f} ms (load {:.2f}{}, restore {:.2f}), check {:.2f} ms, "
                "sampling {:.2f} ms, {} samples ({}), {} warm-ups",
                options_.name, request.candidate_key, static_cast<double>(reply.setup_ns) / 1e6,
                static_cast<double>(reply.load_ns) / 1e6, reply.module_cached ? " cached" : "",
                static_cast<double>(reply.restore_ns) / 1e6,
                static_cast<double>(reply.check_ns) / 1e6,
                static_cast<double>(reply.sampling_ns) / 1e6, reply.samples_ns.size(),
                reply.sampling_state, reply.warmup_launches);
  if (reply.status != kernel_lane_status::ok)
    result.reason = std::string(messages::to_string(reply.status)) + ": " + reply.reason;
  result.finding = lane_finding(reply.status);
  if (reply.lane_exiting) {
    const std::string ended = process_.stop(exit_grace);
    result.reason += " (the lane process " + ended + ")";
  }
  if (reply.status == kernel_lane_status::ok && !request.launch.reference && !first_valid_) {
    messages::kernel_reference ref;
    ref.code_object_path = request.code_object_path;
    ref.symbol = request.launch.symbol;
    ref.grid = request.launch.grid;
    ref.block = request.launch.block;
    ref.shared_bytes = request.launch.shared_bytes;
    first_valid_ = std::move(ref);
  }
}

} // namespace rpl::workers
