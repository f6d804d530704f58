#include "workers/lanes/kernel/process/lane_server.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include <msgpack.hpp>

#include "messages/wire_msgpack.hpp"
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

bool read_code_object(const std::string& path, std::string& image, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read the code object " + path + ": " + std::strerror(errno) +
            "; fix: pass the artifact's path as argv[0]";
    return false;
  }
  std::ostringstream bytes;
  bytes << in.rdbuf();
  image = bytes.str();
  if (image.empty()) {
    error = "the code object " + path + " is empty; fix: check the build's {OUT}";
    return false;
  }
  return true;
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
  return {};
}

/// Identifies what the reference's outputs are computed from.
std::string reference_key(const messages::kernel_launch& launch) {
  msgpack::sbuffer buffer;
  msgpack::pack(buffer, *launch.reference);
  msgpack::pack(buffer, launch.args);
  return std::string(buffer.data(), buffer.size());
}

bool has_outputs(const messages::kernel_launch& launch) {
  for (const auto& arg : launch.args)
    if (arg.kind == messages::kernel_arg_kind::buffer && arg.output)
      return true;
  return false;
}

/// A loaded module, unloaded when it goes out of scope (also on every early return).
class loaded_module {
public:
  explicit loaded_module(device_api& api) : api_(api) {}
  ~loaded_module() {
    if (module_ != nullptr)
      api_.unload_module(module_);
  }
  loaded_module(const loaded_module&) = delete;
  loaded_module& operator=(const loaded_module&) = delete;
  device_status load(const std::string& image) { return api_.load_module(image, module_); }
  device_status find(const std::string& symbol, function_handle& function) {
    return api_.find_function(module_, symbol, function);
  }

private:
  device_api& api_;
  module_handle module_ = nullptr;
};

std::string describe_mismatch(const messages::kernel_mismatch& m,
                              const messages::value_tolerance& tolerance) {
  std::ostringstream out;
  out.precision(9);
  out << "wrong result: " << m.buffer << "[" << m.index << "] = " << m.value
      << ", the reference has " << m.expected << " (tolerance abs " << tolerance.abs << ", rel "
      << tolerance.rel << "); " << m.count << " of " << m.compared << " elements differ";
  return out.str();
}

} // namespace

lane_server::lane_server(device_api& api) : api_(api), buffers_(api), events_(api) {}

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
  if (std::string problem = check_request(request); !problem.empty()) {
    record(reply, kernel_lane_status::bad_request, problem);
    return reply;
  }
  std::string image;
  if (std::string error; !read_code_object(request.code_object_path, image, error)) {
    record(reply, kernel_lane_status::bad_request, error);
    return reply;
  }
  if (!prepare_buffers(request.launch, reply))
    return reply;
  if (request.launch.reference && !ensure_reference(request, image, reply))
    return reply;
  loaded_module module(api_);
  if (device_status error = module.load(image)) {
    record(reply, kernel_lane_status::load_failed, *error,
           "loading the code object " + request.code_object_path,
           "build a cubin or fatbin for this GPU's architecture (" + device_.arch + ")");
    return reply;
  }
  function_handle function = nullptr;
  if (device_status error = module.find(request.launch.symbol, function)) {
    record(reply, kernel_lane_status::symbol_not_found, *error,
           "the code object has no kernel " + request.launch.symbol,
           "the launch file's \"kernel\" must be the symbol as the code object lists it "
           "(cuobjdump -symbols); declare the kernel extern \"C\" so that it is not mangled");
    return reply;
  }
  kernel_params params(request.launch.args, buffers_);
  if (!checked_launch(request, function, params.data(), reply))
    return reply;
  reply.setup_ns = ns_since(start);
  sample(request, function, params.data(), reply);
  return reply;
}

bool lane_server::prepare_buffers(const messages::kernel_launch& launch,
                                  messages::kernel_lane_reply& reply) {
  device_status error = buffers_.prepare(launch.args, reply.allocations);
  if (error && !error->sticky) {
    // Old buffers of other sizes may be what is in the way: start again from nothing, once.
    buffers_.release_all();
    error = buffers_.prepare(launch.args, reply.allocations);
  }
  if (error) {
    record(reply, kernel_lane_status::out_of_memory, *error,
           "allocating the launch's buffers failed");
    return false;
  }
  return true;
}

bool lane_server::upload_initial(const messages::kernel_launch& launch,
                                 messages::kernel_lane_reply& reply) {
  for (std::size_t i = 0; i < launch.args.size(); ++i) {
    const messages::kernel_arg& arg = launch.args[i];
    if (arg.kind != messages::kernel_arg_kind::buffer)
      continue;
    std::string error;
    const std::vector<std::byte>* bytes = contents_.get(i, arg, error);
    if (bytes == nullptr) {
      record(reply, kernel_lane_status::bad_request, error);
      return false;
    }
    if (device_status e = api_.copy_to_device(buffers_.pointer(i), bytes->data(), bytes->size())) {
      record(reply, kernel_lane_status::launch_failed, *e, "uploading buffer " + arg.name);
      return false;
    }
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
                                   const std::string& candidate_image,
                                   messages::kernel_lane_reply& reply) {
  const messages::kernel_launch& launch = request.launch;
  const messages::kernel_reference& ref = *launch.reference;
  const std::string key = reference_key(launch);
  if (key == reference_.key)
    return true;
  reference_ = {};
  const std::string what = "the reference kernel " + ref.symbol;
  std::string image = candidate_image;
  if (std::string error;
      !ref.code_object_path.empty() && !read_code_object(ref.code_object_path, image, error)) {
    record(reply, kernel_lane_status::reference_failed, what + ": " + error);
    return false;
  }
  loaded_module module(api_);
  function_handle function = nullptr;
  device_status error = module.load(image);
  if (!error)
    error = module.find(ref.symbol, function);
  kernel_params params(launch.args, buffers_);
  if (!error && !upload_initial(launch, reply))
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
  if (!download_outputs(launch, reference_.outputs, reply))
    return false;
  reference_.key = key;
  return true;
}

bool lane_server::checked_launch(const messages::kernel_lane_request& request,
                                 function_handle function,
                                 void** params,
                                 messages::kernel_lane_reply& reply) {
  const messages::kernel_launch& launch = request.launch;
  if (!upload_initial(launch, reply))
    return false;
  const launch_shape shape{launch.grid, launch.block, launch.shared_bytes};
  if (device_status error = api_.launch(function, shape, params)) {
    record(reply, kernel_lane_status::launch_failed, *error, "launching " + launch.symbol);
    return false;
  }
  if (device_status error = api_.synchronize()) {
    record(reply, kernel_lane_status::launch_failed, *error, "running " + launch.symbol);
    return false;
  }
  if (!launch.reference)
    return true;
  std::vector<std::vector<std::byte>> outputs;
  return download_outputs(launch, outputs, reply) && verify(launch, outputs, reply);
}

bool lane_server::verify(const messages::kernel_launch& launch,
                         const std::vector<std::vector<std::byte>>& got,
                         messages::kernel_lane_reply& reply) {
  for (std::size_t i = 0; i < launch.args.size(); ++i) {
    const messages::kernel_arg& arg = launch.args[i];
    if (arg.kind != messages::kernel_arg_kind::buffer || !arg.output)
      continue;
    if (auto mismatch = compare_output(arg, got[i], reference_.outputs[i])) {
      reply.mismatch = *mismatch;
      record(reply, kernel_lane_status::wrong_result, describe_mismatch(*mismatch, arg.tolerance));
      return false;
    }
  }
  reply.verified = has_outputs(launch);
  return true;
}

void lane_server::sample(const messages::kernel_lane_request& request,
                         function_handle function,
                         void** params,
                         messages::kernel_lane_reply& reply) {
  const auto start = clock_type::now();
  const messages::kernel_launch& launch = request.launch;
  const messages::kernel_sampling& sampling = request.sampling;
  const bool adaptive = sampling.max_noise > 0.0;
  stages::sampling_criterion criterion(target_of(sampling));
  sampling_outcome outcome = take_samples(
      api_, events_, function, launch_shape{launch.grid, launch.block, launch.shared_bytes}, params,
      sampling, adaptive ? until_quiet(criterion) : fixed_count());
  reply.sampling_ns = ns_since(start);
  reply.samples_ns = std::move(outcome.samples_ns);
  reply.warmup_launches = outcome.warmups;
  reply.time_capped = outcome.time_capped;
  if (adaptive) {
    const stages::sampling_state state = criterion.state();
    reply.sampling_state = state != stages::sampling_state::continue_sampling ? to_string(state)
                           : outcome.time_capped                              ? "time_cap"
                                                                              : "max_samples";
    reply.noise = criterion.noise();
    reply.noisy = state == stages::sampling_state::continue_sampling || stages::is_noisy(state);
  }
  if (outcome.error) {
    record(reply, kernel_lane_status::launch_failed, *outcome.error,
           "timing " + launch.symbol + " (after the checked launch succeeded)");
    return;
  }
  reply.status = kernel_lane_status::ok;
}

} // namespace rpl::workers::kernel_process
