#include "workers/lanes/replay/process/replay_server.hpp"

#include <chrono>
#include <sstream>

#include "stages/capture/red_zones.hpp"
#include "stages/statistics/race_rule.hpp"
#include "workers/lanes/kernel/process/sample_loop.hpp"

namespace rpl::workers::replay_process {

namespace {

namespace sc = stages::capture;
using kernel_process::device_status;
using messages::kernel_lane_status;
using clock_type = std::chrono::steady_clock;

std::int64_t ns_since(clock_type::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now() - start).count();
}

void record(messages::kernel_lane_reply& reply, kernel_lane_status status, std::string reason) {
  reply.status = status;
  reply.reason = std::move(reason);
}

} // namespace

replay_server::replay_server(device_api& api, served_capture capture)
    : api_(api), capture_(std::move(capture)), modules_(api), events_(api) {
  for (const std::size_t offset : capture_.param_offsets)
    params_.push_back(capture_.kernarg.data() + offset);
}

replay_server::~replay_server() {
  for (const device_pointer p : pristine_)
    if (p != 0)
      api_.release(p);
  if (staging_ != nullptr)
    api_.release_host(staging_);
}

device_status replay_server::stage(std::size_t bytes) {
  if (bytes <= staging_bytes_)
    return std::nullopt;
  if (staging_ != nullptr)
    api_.release_host(staging_);
  staging_ = nullptr;
  staging_bytes_ = 0;
  void* p = nullptr;
  if (device_status e = api_.allocate_host(bytes, p))
    return e;
  staging_ = static_cast<std::uint8_t*>(p);
  staging_bytes_ = bytes;
  return std::nullopt;
}

device_status replay_server::read_back(device_pointer source,
                                       std::size_t bytes,
                                       std::span<const std::uint8_t>& out) {
  if (device_status e = stage(bytes))
    return e;
  out = std::span<const std::uint8_t>(staging_, bytes);
  return api_.copy_to_host(staging_, source, bytes);
}

messages::kernel_lane_hello replay_server::open(int ordinal) {
  messages::kernel_lane_hello hello;
  hello.pid = 0;
  if (const device_status e = api_.open(ordinal, device_)) {
    hello.status = kernel_lane_status::device_unavailable;
    hello.error_name = e->name;
    hello.reason = e->message;
    hello.device = device_;
    return hello;
  }
  hello.device = device_;
  pristine_.assign(capture_.regions.size(), 0);
  for (std::size_t i = 0; i < capture_.regions.size(); ++i) {
    if (capture_.after[i].empty())
      continue;
    device_status e = api_.allocate(capture_.before[i].size(), pristine_[i]);
    if (!e)
      e = api_.copy_to_device(pristine_[i], capture_.before[i].data(), capture_.before[i].size());
    if (e) {
      hello.status = kernel_lane_status::device_unavailable;
      hello.error_name = e->name;
      hello.reason = "the device copy of region " + sc::hex_address(capture_.regions[i].base) +
                     " (" + std::to_string(capture_.before[i].size()) + " bytes): " + e->message;
      return hello;
    }
  }
  hello.status = kernel_lane_status::ok;
  return hello;
}

void replay_server::failed(messages::kernel_lane_reply& reply,
                           kernel_lane_status status,
                           const kernel_process::device_error& error,
                           const std::string& what) const {
  reply.status = error.sticky ? kernel_lane_status::kernel_fault : status;
  reply.error_name = error.name;
  reply.reason = what + ": " + error.name + " (" + error.message + ")";
  reply.lane_exiting = error.sticky;
}

device_status replay_server::restore_written() {
  for (std::size_t i = 0; i < pristine_.size(); ++i)
    if (pristine_[i] != 0)
      if (device_status e = api_.copy_on_device(capture_.regions[i].base, pristine_[i],
                                                capture_.before[i].size()))
        return e;
  return std::nullopt;
}

bool replay_server::zones_clean(const char* phase, messages::kernel_lane_reply& reply) {
  const auto start = clock_type::now();
  std::optional<sc::red_zone_violation> found;
  // Every zone's copy queued into one staging buffer, one wait (as the kernel lane reads its own).
  std::size_t total = 0;
  for (const auto& z : capture_.zones)
    total += z.size;
  device_status e = stage(total);
  for (std::size_t i = 0, at = 0; !e && i < capture_.zones.size(); at += capture_.zones[i++].size)
    e = api_.copy_to_host_queued(staging_ + at, capture_.zones[i].base, capture_.zones[i].size);
  if (!e)
    e = api_.synchronize();
  if (e) {
    failed(reply, kernel_lane_status::launch_failed, *e, "reading the red zones");
    return false;
  }
  for (std::size_t i = 0, at = 0; i < capture_.zones.size(); at += capture_.zones[i++].size)
    sc::check_red_zone(capture_.zones[i],
                       std::span<const std::uint8_t>(staging_ + at, capture_.zones[i].size),
                       capture_.regions, found);
  reply.red_zone_ns += ns_since(start);
  if (!found)
    return true;
  reply.violation.buffer = sc::hex_address(found->region);
  reply.violation.side = found->side;
  reply.violation.offset = found->offset;
  reply.violation.changed = found->changed;
  reply.violation.phase = phase;
  record(reply, kernel_lane_status::out_of_bounds,
         std::string("memory out of bounds: ") + phase + " " + sc::describe(*found));
  // Filled again for the next candidate.
  std::vector<std::uint8_t> bytes;
  for (const auto& z : capture_.zones) {
    bytes.resize(z.size);
    for (std::uint64_t i = 0; i < z.size; ++i)
      bytes[i] = sc::red_zone_byte(z.base + i);
    api_.copy_to_device(z.base, bytes.data(), z.size);
  }
  return false;
}

bool replay_server::out_of_bounds_into(std::size_t changed,
                                       std::uint64_t first_offset,
                                       const char* phase,
                                       messages::kernel_lane_reply& reply) {
  const auto& r = capture_.regions[changed];
  const bool near_start = first_offset < neighbour_zone_bytes;
  const bool near_end = r.size - first_offset <= neighbour_zone_bytes;
  for (std::size_t j = 0; j < capture_.regions.size(); ++j) {
    const auto& other = capture_.regions[j];
    if (j == changed || capture_.after[j].empty())
      continue;
    std::string where;
    if (near_start && other.base + other.size == r.base) {
      // Past the end of the written region that ends where this one begins.
      reply.violation.side = "after";
      reply.violation.offset = static_cast<std::int64_t>(other.size + first_offset);
      where = "byte " + std::to_string(other.size + first_offset) + " of region " +
              sc::hex_address(other.base) + ", past its end";
    } else if (near_end && r.base + r.size == other.base) {
      // Before the start of the written region that begins where this one ends.
      const std::uint64_t before = r.size - first_offset;
      reply.violation.side = "before";
      reply.violation.offset = -static_cast<std::int64_t>(before);
      where = std::to_string(before) + " bytes before the start of region " +
              sc::hex_address(other.base);
    } else {
      continue;
    }
    reply.violation.buffer = sc::hex_address(other.base);
    reply.violation.changed = 0;
    reply.violation.phase = phase;
    record(reply, kernel_lane_status::out_of_bounds,
           std::string("memory out of bounds: ") + phase + " wrote " + where +
               ": that byte is byte " + std::to_string(first_offset) + " of region " +
               sc::hex_address(r.base) + ", which the captured dispatch does not write and " +
               "which the allocator placed right beside it");
    return true;
  }
  return false;
}

bool replay_server::regions_match(const char* phase,
                                  kernel_lane_status status,
                                  bool written_only,
                                  messages::kernel_lane_reply& reply) {
  std::span<const std::uint8_t> now;
  for (std::size_t i = 0; i < capture_.regions.size(); ++i) {
    const bool written = !capture_.after[i].empty();
    if (written_only && !written)
      continue;
    const auto& r = capture_.regions[i];
    if (const device_status e = read_back(r.base, r.size, now)) {
      failed(reply, kernel_lane_status::launch_failed, *e,
             "reading region " + sc::hex_address(r.base));
      return false;
    }
    const auto& expected = written ? capture_.after[i] : capture_.before[i];
    const sc::compare_result result = sc::compare_output(expected, now, capture_.tolerance);
    if (result.equal())
      continue;
    // Repaired for the next launch: a written region is restored before every launch anyway.
    if (!written)
      api_.copy_to_device(r.base, capture_.before[i].data(), r.size);
    if (!written && out_of_bounds_into(i, result.first_mismatch_offset, phase, reply))
      return false;
    reply.mismatch.buffer = "region " + sc::hex_address(r.base);
    reply.mismatch.index = result.first_mismatch_offset;
    reply.mismatch.count = result.mismatched;
    reply.mismatch.compared = r.size;
    std::ostringstream out;
    out << phase << " left region " << sc::hex_address(r.base) << " ("
        << (written ? "written by the captured dispatch" : "not written by the captured dispatch")
        << ", " << r.size << " bytes) unlike the capture's " << (written ? "after" : "before")
        << "-state: " << result.mismatched << (capture_.tolerance ? " float32 elements" : " bytes")
        << " differ, the first at byte " << result.first_mismatch_offset << " ("
        << sc::describe(capture_.tolerance) << ")";
    // A region the dispatch does not write, written: the candidate changed its inputs.
    record(reply,
           !written && status == kernel_lane_status::wrong_result
               ? kernel_lane_status::inputs_modified
               : status,
           out.str());
    return false;
  }
  return true;
}

bool replay_server::checked_launch(function_handle function,
                                   const char* phase,
                                   kernel_lane_status status,
                                   bool written_only,
                                   messages::kernel_lane_reply& reply) {
  device_status e = restore_written();
  if (!e)
    e = api_.launch(function, capture_.shape, params_.empty() ? nullptr : params_.data());
  if (!e)
    e = api_.synchronize();
  if (e) {
    failed(reply, kernel_lane_status::launch_failed, *e,
           std::string("running the candidate (") + phase + ")");
    return false;
  }
  const auto start = clock_type::now();
  const bool ok = zones_clean(phase, reply) && regions_match(phase, status, written_only, reply);
  reply.check_ns += ns_since(start);
  return ok;
}

void replay_server::sample(const messages::kernel_lane_request& request,
                           function_handle function,
                           bool after_checked_launch,
                           messages::kernel_lane_reply& reply) {
  const auto start = clock_type::now();
  messages::kernel_sampling sampling = request.sampling;
  const std::uint32_t checked_warmup = after_checked_launch && sampling.warmup_launches > 0 ? 1 : 0;
  sampling.warmup_launches -= checked_warmup;
  kernel_process::sampling_rule rule(sampling);
  kernel_process::sampling_outcome outcome = kernel_process::take_samples(
      api_, events_, function, capture_.shape, params_.empty() ? nullptr : params_.data(),
      rule.sampling(), rule.enough(), {}, [this] { return restore_written(); });
  reply.sampling_ns += ns_since(start);
  if (outcome.error) {
    failed(reply, kernel_lane_status::launch_failed, *outcome.error,
           "timing the candidate (after its checked launch matched the capture)");
    return;
  }
  if (!zones_clean("the timed launches", reply))
    return;
  reply.warmup_launches = checked_warmup;
  rule.finish(outcome, reply);
}

bool replay_server::spot_check(function_handle function, messages::kernel_lane_reply& reply) {
  std::int64_t ns = 0;
  device_status e = events_.reserve(1);
  // As every timed launch follows a restore and the launch before it on the stream: an untimed
  // launch first, so the timed one finds the caches and the stream as they do (alone after a
  // wait, a short kernel's event pair also timed the host's launch latency: 22 us against 7 us
  // on an H200, a right change refused).
  if (!e)
    e = restore_written();
  if (!e)
    e = api_.launch(function, capture_.shape, params_.empty() ? nullptr : params_.data());
  if (!e)
    e = restore_written();
  if (!e)
    e = api_.record_event(events_.start(0));
  if (!e)
    e = api_.launch(function, capture_.shape, params_.empty() ? nullptr : params_.data());
  if (!e)
    e = api_.record_event(events_.stop(0));
  if (!e)
    e = api_.synchronize();
  if (!e)
    e = api_.elapsed_ns(events_.start(0), events_.stop(0), ns);
  if (e) {
    failed(reply, kernel_lane_status::launch_failed, *e, "a spot-checked timed launch");
    return false;
  }
  reply.spot_samples_ns.push_back(ns);
  if (!zones_clean("a spot-checked timed launch", reply))
    return false;
  if (!regions_match("a spot-checked timed launch (it passed the checked launch)",
                     kernel_lane_status::timed_phase, true, reply)) {
    reply.reason = "timed phase: " + reply.reason;
    return false;
  }
  return true;
}

void replay_server::sample_spot_checked(const messages::kernel_lane_request& request,
                                        function_handle function,
                                        bool after_checked_launch,
                                        messages::kernel_lane_reply& reply) {
  const messages::kernel_sampling& s = request.sampling;
  const std::uint32_t runs = s.min_samples;
  if (s.spot_checks == 0 || s.max_noise > 0.0 || runs == 0 || s.max_samples != runs) {
    sample(request, function, after_checked_launch, reply);
    return;
  }
  kernel_process::spot_checked_samples(
      s,
      [&](const messages::kernel_sampling& sampling, bool first) {
        messages::kernel_lane_request part = request;
        part.sampling = sampling;
        sample(part, function, first && after_checked_launch, reply);
      },
      [&] { return spot_check(function, reply); }, reply);
}

messages::kernel_lane_reply replay_server::handle(const messages::kernel_lane_request& request) {
  const auto start = clock_type::now();
  messages::kernel_lane_reply reply;
  reply.sequence = request.sequence;
  reply.device = device_;
  reply.red_zones = !capture_.zones.empty();
  if (request.protocol != messages::kernel_lane_protocol) {
    record(reply, kernel_lane_status::bad_request,
           "protocol " + std::to_string(request.protocol) + ", this replay lane speaks " +
               std::to_string(messages::kernel_lane_protocol));
    return reply;
  }
  const auto loaded = modules_.get(request.code_object_path);
  reply.module_cached = loaded.cached;
  reply.load_ns = ns_since(start);
  if (!loaded.file_error.empty()) {
    record(reply, kernel_lane_status::bad_request, loaded.file_error);
    return reply;
  }
  if (loaded.load_error) {
    failed(reply, kernel_lane_status::load_failed, *loaded.load_error,
           "loading " + request.code_object_path);
    return reply;
  }
  const std::string symbol =
      request.launch.symbol.empty() ? capture_.kernel : request.launch.symbol;
  function_handle function = nullptr;
  if (const device_status e = api_.find_function(loaded.module, symbol, function)) {
    failed(reply, kernel_lane_status::symbol_not_found, *e,
           "finding " + symbol + " in " + request.code_object_path +
               " (the replay launches it with the captured parameters; fix: keep the kernel's "
               "name and parameter list)");
    return reply;
  }
  const std::string key = request.code_object_path + "\n" + symbol;
  const bool check = !verified_.contains(key);
  if (check && !checked_launch(function, "the checked launch", kernel_lane_status::wrong_result,
                               false, reply)) {
    reply.setup_ns = ns_since(start);
    return reply;
  }
  verified_.insert(key);
  reply.verified = true;
  reply.setup_ns = ns_since(start);
  sample_spot_checked(request, function, check, reply);
  return reply;
}

} // namespace rpl::workers::replay_process
