#include "workers/lanes/kernel/process/lane_server.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include <msgpack.hpp>

#include "messages/wire_msgpack.hpp"
#include "stages/statistics/race_rule.hpp"
#include "stages/statistics/statistics.hpp"
#include "workers/lanes/kernel/process/kernel_params.hpp"
#include "workers/lanes/kernel/process/output_check.hpp"

namespace rpl::workers::kernel_process {

namespace {

using messages::kernel_lane_status;
using clock_type = std::chrono::steady_clock;

/// Larger buffers are refused as a malformed request (1 TiB, as the launch file's limit).
constexpr std::uint64_t max_buffer_bytes = std::uint64_t{1} << 40;

/// Fills status, error name and reason from a failed call. A sticky error wins over `status`:
/// whatever step saw it, the context is gone and the process must go.
void record(messages::kernel_lane_reply& reply,
            kernel_lane_status status,
            const device_error& error,
            const std::string& what,
            const std::string& fix = {}) {
  reply.status = error.sticky ? kernel_lane_status::kernel_fault : status;
  reply.error_name = error.name;
  reply.reason =
      what + ": " + error.name + (error.message.empty() ? "" : " (" + error.message + ")");
  if (error.sticky) {
    reply.reason += "; the device context is lost, so the lane process exits and is restarted";
    reply.lane_exiting = true;
  } else if (!fix.empty()) {
    reply.reason += "; fix: " + fix;
  }
}

void record(messages::kernel_lane_reply& reply, kernel_lane_status status, std::string reason) {
  reply.status = status;
  reply.reason = std::move(reason);
}

std::int64_t ns_since(clock_type::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now() - start).count();
}

std::string check_dims(const messages::launch_dims& d, const std::string& what) {
  if (d.x == 0 || d.y == 0 || d.z == 0)
    return what + " has a zero dimension (" + std::to_string(d.x) + ", " + std::to_string(d.y) +
           ", " + std::to_string(d.z) + ")";
  return {};
}

std::string check_arg(const messages::kernel_arg& arg, std::size_t index) {
  const std::string name = "args[" + std::to_string(index) + "] (" + arg.name + ")";
  if (arg.kind != messages::kernel_arg_kind::buffer &&
      arg.kind != messages::kernel_arg_kind::scalar)
    return name + " has an unknown kind " + std::to_string(static_cast<int>(arg.kind));
  if (messages::element_size(arg.type) == 0)
    return name + " has an unknown element type " + std::to_string(static_cast<int>(arg.type));
  if (arg.kind == messages::kernel_arg_kind::scalar)
    return {};
  if (arg.count == 0 || arg.count > max_buffer_bytes / messages::element_size(arg.type))
    return name + " has " + std::to_string(arg.count) + " elements; expected 1 to 1 TiB worth";
  if (arg.init.fill != messages::buffer_fill::zeros &&
      arg.init.fill != messages::buffer_fill::random &&
      arg.init.fill != messages::buffer_fill::file)
    return name + " has an unknown initial fill " + std::to_string(static_cast<int>(arg.init.fill));
  return {};
}

/// Why the request cannot be served as sent, or empty.
std::string check_request(const messages::kernel_lane_request& request) {
  if (request.protocol != messages::kernel_lane_protocol)
    return "the request speaks protocol " + std::to_string(request.protocol) + ", this lane " +
           std::to_string(messages::kernel_lane_protocol) +
           "; fix: use matching engine and lane builds";
  const messages::kernel_launch& launch = request.launch;
  if (request.code_object_path.empty())
    return "no code object path; fix: the candidate's artifact goes in argv[0]";
  if (launch.symbol.empty())
    return "no kernel symbol; fix: set \"kernel\" in the launch file";
  for (const auto& [dims, what] :
       {std::pair{&launch.grid, "the grid"}, {&launch.block, "the block"}})
    if (std::string problem = check_dims(*dims, what); !problem.empty())
      return problem;
  for (std::size_t i = 0; i < launch.args.size(); ++i)
    if (std::string problem = check_arg(launch.args[i], i); !problem.empty())
      return problem;
  if (launch.reference && launch.reference->symbol.empty())
    return "the reference has no kernel symbol";
  if (launch.offset_bytes > device_buffers::max_offset_bytes)
    return "offset_bytes " + std::to_string(launch.offset_bytes) + " is over the lane's " +
           std::to_string(device_buffers::max_offset_bytes);
  return {};
}

/// Identifies what the reference's outputs are computed from.
std::string reference_key(const messages::kernel_launch& launch) {
  msgpack::sbuffer buffer;
  msgpack::pack(buffer, *launch.reference);
  msgpack::pack(buffer, launch.args);
  msgpack::pack(buffer, launch.offset_bytes); // misaligned: the reference runs there too
  return std::string(buffer.data(), buffer.size());
}

bool has_outputs(const messages::kernel_launch& launch) {
  for (const auto& arg : launch.args)
    if (arg.kind == messages::kernel_arg_kind::buffer && arg.output)
      return true;
  return false;
}

std::string describe_mismatch(const messages::kernel_mismatch& m,
                              const messages::value_tolerance& tolerance) {
  std::ostringstream out;
  out.precision(9);
  out << "wrong result: " << m.buffer << "[" << m.index << "] = " << m.value
      << ", the reference has " << m.expected << " (tolerance abs " << tolerance.abs << ", rel "
      << tolerance.rel << "); " << m.count << " of " << m.compared << " elements differ";
  return out.str();
}

std::string describe_violation(const messages::kernel_red_zone_violation& v) {
  const std::string where =
      v.side == "before"
          ? std::to_string(-v.offset) + " bytes before the start of buffer " + v.buffer
          : "byte " + std::to_string(v.offset) + " of buffer " + v.buffer + ", " + "past its end";
  return "memory out of bounds: " + v.phase + " wrote " + where + " (" + std::to_string(v.changed) +
         " bytes of its red zones changed)";
}

} // namespace

lane_server::lane_server(device_api& api, bool red_zones)
    : api_(api), buffers_(api, red_zones), pristine_(api), readback_(api), modules_(api),
      events_(api) {}

messages::kernel_lane_hello lane_server::open(int ordinal) {
  messages::kernel_lane_hello hello;
  hello.pid = static_cast<std::int64_t>(::getpid());
  if (device_status error = api_.open(ordinal, device_)) {
    hello.status = kernel_lane_status::device_unavailable;
    hello.error_name = error->name;
    hello.reason = "device " + std::to_string(ordinal) + " cannot be used: " + error->name +
                   (error->message.empty() ? "" : " (" + error->message + ")");
  } else {
    hello.status = kernel_lane_status::ok;
    // A few pairs up front, so that even the first candidate's sampling creates none.
    if (device_status e = events_.reserve(8); e)
      hello.reason = "warning: could not create timing events: " + e->name;
  }
  hello.device = device_;
  return hello;
}

messages::kernel_lane_reply lane_server::handle(const messages::kernel_lane_request& request) {
  const auto start = clock_type::now();
  messages::kernel_lane_reply reply;
  reply.sequence = request.sequence;
  reply.device = device_;
  reply.red_zones = buffers_.red_zones();
  if (std::string problem = check_request(request); !problem.empty()) {
    record(reply, kernel_lane_status::bad_request, problem);
    return reply;
  }
  if (request.launch.offset_bytes != 0 && !buffers_.red_zones()) {
    record(reply, kernel_lane_status::bad_request,
           "offset_bytes needs red zones (this lane runs with --no-red-zones)");
    return reply;
  }
  if (!prepare_buffers(request.launch, reply))
    return reply;
  if (request.launch.reference && !ensure_reference(request, reply))
    return reply;
  const auto loading = clock_type::now();
  const module_cache::outcome module = modules_.get(request.code_object_path);
  reply.module_cached = module.cached;
  if (!module.file_error.empty()) {
    record(reply, kernel_lane_status::bad_request, module.file_error);
    return reply;
  }
  if (module.load_error) {
    record(reply, kernel_lane_status::load_failed, *module.load_error,
           "loading the code object " + request.code_object_path,
           "build a cubin or fatbin for this GPU's architecture (" + device_.arch + ")");
    return reply;
  }
  function_handle function = nullptr;
  if (device_status error = api_.find_function(module.module, request.launch.symbol, function)) {
    record(reply, kernel_lane_status::symbol_not_found, *error,
           "the code object has no kernel " + request.launch.symbol,
           "the launch file's \"kernel\" must be the symbol as the code object lists it "
           "(cuobjdump -symbols); declare the kernel extern \"C\" so that it is not mangled");
    return reply;
  }
  reply.load_ns = ns_since(loading);
  kernel_params params(request.launch.args, buffers_);
  const bool checking = request.launch.reference && has_outputs(request.launch);
  // The same code object (unchanged on disk: still in the module cache) on the same launch was
  // checked already, e.g. a finalist's turn in the final round: its outputs would be the same.
  const std::string checked_key =
      request.code_object_path + '\n' + reference_.key + (request.launch.strict ? "\nstrict" : "");
  if (checking && module.cached && verified_.contains(checked_key)) {
    reply.verified = true;
    reply.setup_ns = ns_since(start);
    sample_spot_checked(request, function, params.data(), false, false, reply);
    return reply;
  }
  if (request.launch.strict && !strict_checks(request, function, params.data(), reply))
    return reply;
  if (!checked_launch(request, function, params.data(), checking, reply))
    return reply;
  reply.setup_ns = ns_since(start);
  sample_spot_checked(request, function, params.data(), true, checking, reply);
  if (reply.verified && reply.status == kernel_lane_status::ok)
    verified_.insert(checked_key);
  return reply;
}

bool lane_server::prepare_buffers(const messages::kernel_launch& launch,
                                  messages::kernel_lane_reply& reply) {
  device_status error = buffers_.prepare(launch.args, launch.offset_bytes, reply.allocations);
  if (error && !error->sticky) {
    // Old buffers of other sizes may be what is in the way: start again from nothing, once.
    buffers_.release_all();
    error = buffers_.prepare(launch.args, launch.offset_bytes, reply.allocations);
  }
  if (error) {
    record(reply, kernel_lane_status::out_of_memory, *error,
           "allocating the launch's buffers failed");
    return false;
  }
  return true;
}

bool lane_server::restore_initial(const messages::kernel_launch& launch,
                                  messages::kernel_lane_reply& reply) {
  const auto start = clock_type::now();
  std::string contents_error;
  device_status error =
      pristine_.restore(launch.args, buffers_, contents_, contents_error, reply.allocations);
  reply.restore_ns += ns_since(start);
  if (!contents_error.empty()) {
    record(reply, kernel_lane_status::bad_request, contents_error);
    return false;
  }
  if (error) {
    record(reply, kernel_lane_status::launch_failed, *error,
           "restoring the buffers' initial contents");
    return false;
  }
  return true;
}

bool lane_server::download_outputs(const messages::kernel_launch& launch,
                                   std::vector<std::vector<std::byte>>& outputs,
                                   messages::kernel_lane_reply& reply) {
  outputs.assign(launch.args.size(), {});
  for (std::size_t i = 0; i < launch.args.size(); ++i) {
    const messages::kernel_arg& arg = launch.args[i];
    if (arg.kind != messages::kernel_arg_kind::buffer || !arg.output)
      continue;
    outputs[i].resize(arg.count * messages::element_size(arg.type));
    if (device_status e =
            api_.copy_to_host(outputs[i].data(), buffers_.pointer(i), outputs[i].size())) {
      record(reply, kernel_lane_status::launch_failed, *e, "reading back buffer " + arg.name);
      return false;
    }
  }
  return true;
}

bool lane_server::ensure_reference(const messages::kernel_lane_request& request,
                                   messages::kernel_lane_reply& reply) {
  const messages::kernel_launch& launch = request.launch;
  const messages::kernel_reference& ref = *launch.reference;
  const std::string key = reference_key(launch);
  if (key == reference_.key)
    return true;
  reference_ = {};
  verified_.clear();
  const std::string what = "the reference kernel " + ref.symbol;
  const module_cache::outcome module =
      modules_.get(ref.code_object_path.empty() ? request.code_object_path : ref.code_object_path);
  if (!module.file_error.empty()) {
    record(reply, kernel_lane_status::reference_failed, what + ": " + module.file_error);
    return false;
  }
  function_handle function = nullptr;
  device_status error = module.load_error;
  if (!error)
    error = api_.find_function(module.module, ref.symbol, function);
  kernel_params params(launch.args, buffers_);
  if (!error && !restore_initial(launch, reply))
    return false;
  if (!error)
    error =
        api_.launch(function, launch_shape{ref.grid, ref.block, ref.shared_bytes}, params.data());
  if (!error)
    error = api_.synchronize();
  if (error) {
    record(reply, kernel_lane_status::reference_failed, *error, what);
    return false;
  }
  if (!red_zones_clean(launch, "the reference kernel", true, reply)) {
    reply.status = kernel_lane_status::reference_failed;
    return false;
  }
  if (!download_outputs(launch, reference_.outputs, reply))
    return false;
  reference_.key = key;
  return true;
}

bool lane_server::checked_launch(const messages::kernel_lane_request& request,
                                 function_handle function,
                                 void** params,
                                 bool checking,
                                 messages::kernel_lane_reply& reply) {
  const messages::kernel_launch& launch = request.launch;
  if (!restore_initial(launch, reply))
    return false;
  const launch_shape shape{launch.grid, launch.block, launch.shared_bytes};
  if (device_status error = api_.launch(function, shape, params)) {
    record(reply, kernel_lane_status::launch_failed, *error, "launching " + launch.symbol);
    return false;
  }
  if (checking) {
    // Read back behind the launch; compared while the timed launches run (sample()). The red
    // zones go first, so that the read-back's event covers them.
    const auto zones = clock_type::now();
    device_status error = buffers_.queue_red_zones();
    reply.red_zone_ns += ns_since(zones);
    if (!error)
      error = readback_.queue(launch.args, buffers_);
    if (error) {
      record(reply, kernel_lane_status::launch_failed, *error, "reading back the outputs");
      return false;
    }
    return true;
  }
  return red_zones_clean(launch, "the checked launch", true, reply);
}

bool lane_server::red_zones_clean(const messages::kernel_launch& launch,
                                  const char* phase,
                                  bool queue,
                                  messages::kernel_lane_reply& reply) {
  const auto start = clock_type::now();
  device_status error = queue ? buffers_.queue_red_zones() : std::nullopt;
  if (queue && !error)
    error = api_.synchronize();
  if (error) {
    reply.red_zone_ns += ns_since(start);
    record(reply, kernel_lane_status::launch_failed, *error,
           "running " + launch.symbol + " (" + phase + ")");
    return false;
  }
  const auto violation = buffers_.check_red_zones(launch.args);
  reply.red_zone_ns += ns_since(start);
  if (!violation)
    return true;
  reply.violation = *violation;
  reply.violation.phase = phase;
  record(reply, kernel_lane_status::out_of_bounds, describe_violation(reply.violation));
  return false;
}

bool lane_server::strict_checks(const messages::kernel_lane_request& request,
                                function_handle function,
                                void** params,
                                messages::kernel_lane_reply& reply) {
  const messages::kernel_launch& launch = request.launch;
  const launch_shape shape{launch.grid, launch.block, launch.shared_bytes};
  std::vector<std::vector<std::byte>> runs[2];
  for (auto& outputs : runs) {
    if (!restore_initial(launch, reply))
      return false;
    if (device_status error = api_.launch(function, shape, params)) {
      record(reply, kernel_lane_status::launch_failed, *error, "launching " + launch.symbol);
      return false;
    }
    if (!red_zones_clean(launch, "the checked launch", true, reply) ||
        !download_outputs(launch, outputs, reply))
      return false;
    if (&outputs == &runs[0] && !inputs_untouched(launch, reply))
      return false;
  }
  for (std::size_t i = 0; i < launch.args.size(); ++i) {
    const messages::kernel_arg& arg = launch.args[i];
    if (arg.kind != messages::kernel_arg_kind::buffer || !arg.output)
      continue;
    if (auto m = compare_output(arg, runs[1][i], runs[0][i], !arg.nondeterministic)) {
      reply.mismatch = *m;
      std::ostringstream out;
      out.precision(9);
      out << "nondeterministic: two launches on the same inputs differ: " << m->buffer << "["
          << m->index << "] = " << m->expected << ", then " << m->value << "; " << m->count
          << " of " << m->compared << " elements differ"
          << (arg.nondeterministic ? " beyond the tolerance"
                                   : " (fix, for a kernel that uses atomics: mark the output "
                                     "\"nondeterministic\": true with a tolerance)");
      record(reply, kernel_lane_status::nondeterministic, out.str());
      return false;
    }
  }
  return true;
}

bool lane_server::inputs_untouched(const messages::kernel_launch& launch,
                                   messages::kernel_lane_reply& reply) {
  std::vector<std::byte> now;
  for (std::size_t i = 0; i < launch.args.size(); ++i) {
    const messages::kernel_arg& arg = launch.args[i];
    if (arg.kind != messages::kernel_arg_kind::buffer || arg.output)
      continue;
    std::string error;
    const std::vector<std::byte>* initial = contents_.get(i, arg, error);
    if (initial == nullptr) {
      record(reply, kernel_lane_status::bad_request, error);
      return false;
    }
    now.resize(initial->size());
    if (device_status e = api_.copy_to_host(now.data(), buffers_.pointer(i), now.size())) {
      record(reply, kernel_lane_status::launch_failed, *e, "reading back buffer " + arg.name);
      return false;
    }
    if (auto m = compare_output(arg, now, *initial, true)) {
      reply.mismatch = *m;
      std::ostringstream out;
      out.precision(9);
      out << "inputs modified: buffer " << arg.name << " is not an output, but " << m->buffer << "["
          << m->index << "] = " << m->value << " after the launch, " << m->expected << " before; "
          << m->count << " of " << m->compared
          << " elements changed (fix, if the kernel must write it: mark it \"output\": true)";
      record(reply, kernel_lane_status::inputs_modified, out.str());
      return false;
    }
  }
  return true;
}

bool lane_server::verify_readback(const messages::kernel_launch& launch,
                                  messages::kernel_lane_reply& reply) {
  if (const auto wrong = wrong_output(launch, [&](std::size_t i) { return readback_.output(i); })) {
    reply.mismatch = wrong->second;
    record(reply, kernel_lane_status::wrong_result,
           describe_mismatch(wrong->second, launch.args[wrong->first].tolerance));
    return false;
  }
  reply.verified = true;
  return true;
}

void lane_server::sample_spot_checked(const messages::kernel_lane_request& request,
                                      function_handle function,
                                      void** params,
                                      bool after_checked_launch,
                                      bool checking,
                                      messages::kernel_lane_reply& reply) {
  const messages::kernel_sampling& s = request.sampling;
  const std::uint32_t runs = s.min_samples;
  if (s.spot_checks == 0 || s.max_noise > 0.0 || runs == 0 || s.max_samples != runs ||
      !request.launch.reference || !has_outputs(request.launch)) {
    sample(request, function, params, after_checked_launch, checking, reply);
    return;
  }
  spot_checked_samples(
      s,
      [&](const messages::kernel_sampling& sampling, bool first) {
        messages::kernel_lane_request part = request;
        part.sampling = sampling;
        sample(part, function, params, first && after_checked_launch, first && checking, reply);
      },
      [&] { return spot_check(request.launch, function, params, reply); }, reply);
}

bool lane_server::spot_check(const messages::kernel_launch& launch,
                             function_handle function,
                             void** params,
                             messages::kernel_lane_reply& reply) {
  if (!restore_initial(launch, reply))
    return false;
  std::int64_t ns = 0;
  device_status error = events_.reserve(1);
  if (!error)
    error = api_.record_event(events_.start(0));
  if (!error)
    error =
        api_.launch(function, launch_shape{launch.grid, launch.block, launch.shared_bytes}, params);
  if (!error)
    error = api_.record_event(events_.stop(0));
  if (!error)
    error = api_.synchronize();
  if (!error)
    error = api_.elapsed_ns(events_.start(0), events_.stop(0), ns);
  if (error) {
    record(reply, kernel_lane_status::launch_failed, *error,
           "running " + launch.symbol + " (a spot-checked timed launch)");
    return false;
  }
  reply.spot_samples_ns.push_back(ns);
  std::vector<std::vector<std::byte>> outputs;
  if (!red_zones_clean(launch, "a spot-checked timed launch", true, reply) ||
      !download_outputs(launch, outputs, reply))
    return false;
  if (const auto wrong = wrong_output(
          launch, [&](std::size_t i) { return std::span<const std::byte>(outputs[i]); })) {
    reply.mismatch = wrong->second;
    reply.samples_ns.clear();
    record(reply, kernel_lane_status::timed_phase,
           "timed phase: a spot-checked timed launch (buffers restored) was wrong, " +
               describe_mismatch(wrong->second, launch.args[wrong->first].tolerance) +
               " (it passed the checked launch)");
    return false;
  }
  return true;
}

std::optional<std::pair<std::size_t, messages::kernel_mismatch>> lane_server::wrong_output(
    const messages::kernel_launch& launch,
    const std::function<std::span<const std::byte>(std::size_t)>& output) const {
  for (std::size_t i = 0; i < launch.args.size(); ++i) {
    const messages::kernel_arg& arg = launch.args[i];
    if (arg.kind != messages::kernel_arg_kind::buffer || !arg.output)
      continue;
    if (auto m = compare_output(arg, output(i), reference_.outputs[i]))
      return std::pair{i, *m};
  }
  return std::nullopt;
}

void lane_server::sample(const messages::kernel_lane_request& request,
                         function_handle function,
                         void** params,
                         bool after_checked_launch,
                         bool checking,
                         messages::kernel_lane_reply& reply) {
  const auto start = clock_type::now();
  const messages::kernel_launch& launch = request.launch;
  messages::kernel_sampling sampling = request.sampling;
  // The checked launch ran the kernel, untimed, right before: it is the first warm-up.
  const std::uint32_t checked_warmup = after_checked_launch && sampling.warmup_launches > 0 ? 1 : 0;
  sampling.warmup_launches -= checked_warmup;
  sampling_rule rule(sampling);
  // The output check runs on the host while the GPU works through the first batch.
  device_status check_error;
  bool wrong = false;
  const alongside_work check = [&] {
    const auto started = clock_type::now();
    check_error = readback_.wait();
    if (!check_error && (!red_zones_clean(launch, "the checked launch", false, reply) ||
                         !verify_readback(launch, reply)))
      wrong = true;
    reply.check_ns = ns_since(started);
    return !check_error && !wrong;
  };
  sampling_outcome outcome = take_samples(
      api_, events_, function, launch_shape{launch.grid, launch.block, launch.shared_bytes}, params,
      rule.sampling(), rule.enough(), checking ? check : alongside_work{});
  reply.sampling_ns = ns_since(start) - reply.check_ns;
  if (check_error) {
    record(reply, kernel_lane_status::launch_failed, *check_error, "running " + launch.symbol);
    return;
  }
  if (wrong)
    return; // the mismatch or violation is recorded; the samples of a wrong kernel are not kept
  if (outcome.error) {
    record(reply, kernel_lane_status::launch_failed, *outcome.error,
           "timing " + launch.symbol + " (after the checked launch succeeded)");
    return;
  }
  if (!red_zones_clean(launch, "the timed launches", true, reply))
    return;
  reply.warmup_launches = checked_warmup;
  rule.finish(outcome, reply);
}

} // namespace rpl::workers::kernel_process
