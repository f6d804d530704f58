#pragma once
/// The kernel lane's messages: what the engine asks `rpl-kernel-lane` (one long-lived process per
/// GPU) to launch and time, and what it answers. They travel over the lane process's stdin/stdout
/// as length-prefixed frames: a 4-byte big-endian payload length, then one msgpack map. Like every
/// wire type, structs are maps keyed by field name (a reader ignores unknown keys, a missing key
/// keeps its default) and enum numbers are never reused; the msgpack adaptors are in
/// messages/wire_msgpack.hpp. workers/lanes/kernel/README.md describes
/// the exchange; stages/search/launch_spec.hpp makes a `kernel_launch` from a launch file.
///
/// Header-only on purpose: the lane process links rpl_messages' header side and the CUDA (or HIP)
/// driver API, nothing else.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace rpl::messages {

/// Major version of the lane exchange; a peer speaking another one is refused at the hello.
inline constexpr std::uint32_t kernel_lane_protocol = 3;

/// Frames are small (no buffer contents ever travel on the pipe); a longer length means the
/// stream is out of step, and the reader gives up instead of allocating it.
inline constexpr std::size_t max_kernel_lane_frame_bytes = 16u << 20;

/// Element type of a buffer or scalar argument. f16 is carried as raw 2-byte IEEE halves.
enum class element_type : std::uint8_t { f32 = 1, f64 = 2, i32 = 3, i64 = 4, u32 = 5, f16 = 6 };

enum class kernel_arg_kind : std::uint8_t { buffer = 1, scalar = 2 };

/// How a buffer starts out before every launch that is checked (candidate and reference alike).
enum class buffer_fill : std::uint8_t { zeros = 1, random = 2, file = 3 };

/// Outcome of one kernel-lane request. Every status but ok makes the candidate invalid.
enum class kernel_lane_status : std::uint8_t {
  ok = 0,
  wrong_result = 1,       ///< an output differs from the reference beyond its tolerance
  load_failed = 2,        ///< the code object did not load (bad image, no code for this GPU)
  symbol_not_found = 3,   ///< the code object has no kernel of that name
  launch_failed = 4,      ///< the launch was refused (too many resources, bad geometry)
  kernel_fault = 5,       ///< the kernel faulted (illegal address, ...): the context is lost
  bad_request = 6,        ///< the request cannot be served (unreadable file, malformed launch)
  reference_failed = 7,   ///< the reference kernel itself could not produce outputs
  device_unavailable = 8, ///< no usable device (hello only, or a device lost mid-run)
  out_of_memory = 9,      ///< the buffers do not fit in device memory
  out_of_bounds = 10,     ///< a byte of a buffer's red zone changed: a write outside the buffer
  inputs_modified = 11,   ///< (strict) a buffer not marked output differs from its initial contents
  nondeterministic = 12,  ///< (strict) two checked launches on the same inputs gave other outputs
  timed_phase = 13,       ///< a spot-checked timed launch was wrong, or the others far faster
};

/// The initial contents of a buffer.
struct buffer_init {
  buffer_fill fill = buffer_fill::zeros;
  std::uint64_t seed = 0; ///< random: the stream's seed (splitmix64, portable)
  double min = 0.0;       ///< random: smallest value (inclusive)
  double max = 1.0;       ///< random: largest value (exclusive for floats, inclusive for integers)
  std::string path;       ///< file: absolute path of raw little-endian elements, count * size bytes
};

/// |value - reference| <= abs + rel * |reference| passes; NaN fails unless both are NaN.
struct value_tolerance {
  double abs = 0.0;
  double rel = 0.0;
};

/// One kernel argument, resolved: buffers carry an element count, scalars a value.
struct kernel_arg {
  std::string name; ///< for messages ("C", or "args[2]" when the launch file named none)
  kernel_arg_kind kind = kernel_arg_kind::buffer;
  element_type type = element_type::f32;
  std::uint64_t count = 0; ///< buffer: elements
  buffer_init init;        ///< buffer: contents before each checked launch
  bool output = false;     ///< buffer: compared with the reference after the checked launch
  value_tolerance tolerance;
  /// output: two launches on the same inputs may differ within `tolerance` (atomics); else a
  /// strict request requires them equal bit for bit.
  bool nondeterministic = false;
  std::int64_t int_value = 0; ///< scalar of an integer type (u32 too)
  double float_value = 0.0;   ///< scalar of a float type (f16 is rounded when it is passed)
};

struct launch_dims {
  std::uint32_t x = 1;
  std::uint32_t y = 1;
  std::uint32_t z = 1;
};

/// The kernel whose outputs define "right": launched once per lane process with the same
/// arguments (freshly initialised), its outputs kept in host memory.
struct kernel_reference {
  std::string code_object_path; ///< empty: the candidate's own code object (first one that asks)
  std::string symbol;
  launch_dims grid;
  launch_dims block;
  std::uint32_t shared_bytes = 0;
};

/// Everything needed to launch one candidate's kernel: the launch file resolved for its
/// configuration (stages/search/launch_spec.hpp).
struct kernel_launch {
  std::string symbol;
  launch_dims grid;
  launch_dims block;
  std::uint32_t shared_bytes = 0; ///< dynamic shared memory per block
  std::vector<kernel_arg> args;   ///< in the kernel's parameter order
  /// nullopt: no reference kernel; the engine-side lane checks against the first valid candidate.
  std::optional<kernel_reference> reference;
  /// Every buffer starts this many bytes past its allocation's aligned start (0, or 4 so that a
  /// kernel's misaligned paths run); the red zones move with it.
  std::uint32_t offset_bytes = 0;
  /// Validation, not throughput: the checked launch also runs a second time on the same inputs
  /// (outputs must match the first bit for bit, or within the tolerance where an output is
  /// `nondeterministic`), and every buffer not marked output must keep its initial contents.
  bool strict = false;
};

/// How many launches to make. The lane stops at min_samples unless a criterion asks for more
/// (up to max_samples), and stops early once time_cap_ms of sampling has passed.
struct kernel_sampling {
  std::uint32_t warmup_launches = 1; ///< untimed launches after the checked one
  std::uint32_t min_samples = 5;
  std::uint32_t max_samples = 5;
  std::uint32_t time_cap_ms = 10000;
  /// Adaptive sampling inside the lane (stages/statistics/sampling_criterion.hpp): the relative
  /// noise to reach after min_samples and min_time_ns of summed kernel time; 0: take exactly
  /// min_samples.
  double max_noise = 0.0;
  std::int64_t min_time_ns = 0;
  /// Racing (stages/statistics/race_rule.hpp): the smallest upper end of the median intervals
  /// of the candidates measured so far; once this candidate's interval at race_confidence lies
  /// wholly above race_bound_ns x (1 + race_noise), it stops ("raced"). 0: no racing.
  double race_bound_ns = 0.0;
  double race_noise = 0.0;
  double race_confidence = 0.95;
  /// Fixed-count sampling with a reference: one extra timed launch (more are not needed in one
  /// request; each round asks again) after a random number of the timed ones (from spot_seed),
  /// on buffers restored to their initial contents, its outputs checked against the reference
  /// and its time against the others'. 0: none.
  std::uint32_t spot_checks = 0;
  std::uint64_t spot_seed = 0;
};

/// The device as the lane process sees it; sent in the hello and in every reply.
struct kernel_device {
  std::string api;               ///< "cuda" or "hip"
  std::int32_t ordinal = 0;      ///< within the process's visible devices
  std::string name;              ///< e.g. "NVIDIA H100 80GB HBM3"
  std::string uuid;              ///< "GPU-xxxxxxxx-xxxx-..." (CUDA's format)
  std::string arch;              ///< "sm_90", "gfx90a"
  std::int64_t sm_clock_khz = 0; ///< the device attribute (typical/boost clock), not a live reading
  std::uint64_t memory_bytes = 0;
};

/// The first frame the lane process writes, before reading anything.
struct kernel_lane_hello {
  std::uint32_t protocol = kernel_lane_protocol;
  std::int64_t pid = 0;
  kernel_lane_status status = kernel_lane_status::device_unavailable; ///< ok: ready for requests
  std::string error_name; ///< the API's error name when the device could not be opened
  std::string reason;
  kernel_device device;
};

struct kernel_lane_request {
  std::uint32_t protocol = kernel_lane_protocol;
  std::uint64_t sequence = 0; ///< echoed in the reply, so a stale reply is recognised
  std::string candidate_key;
  std::string code_object_path; ///< cubin/fatbin (CUDA) or code object (HIP), absolute
  kernel_launch launch;
  kernel_sampling sampling;
};

/// Where the first wrong output element is.
struct kernel_mismatch {
  std::string buffer;         ///< the argument's name
  std::uint64_t index = 0;    ///< element index in that buffer
  double value = 0.0;         ///< the candidate's element
  double expected = 0.0;      ///< the reference's element
  std::uint64_t count = 0;    ///< wrong elements in that buffer
  std::uint64_t compared = 0; ///< elements compared in that buffer
};

/// The first changed byte of a buffer's red zones (the guard bands around every buffer).
struct kernel_red_zone_violation {
  std::string buffer;        ///< the argument's name
  std::string side;          ///< "before" or "after" the buffer
  std::int64_t offset = 0;   ///< of that byte from the buffer's first byte (negative before)
  std::uint64_t changed = 0; ///< changed bytes in that buffer's red zones
  std::string phase;         ///< "the checked launch", "the timed launches", "the reference"
};

struct kernel_lane_reply {
  std::uint32_t protocol = kernel_lane_protocol;
  std::uint64_t sequence = 0;
  kernel_lane_status status = kernel_lane_status::bad_request;
  std::string error_name; ///< e.g. CUDA_ERROR_ILLEGAL_ADDRESS; empty when no API call failed
  std::string reason;     ///< one sentence for any status but ok
  std::vector<std::int64_t> samples_ns; ///< GPU time of each timed launch (events around it)
  /// Untimed launches before the timed ones; the checked launch, when one ran, is the first.
  std::uint32_t warmup_launches = 0;
  /// Outputs were compared with a reference and matched: in this request, or (the final round)
  /// in an earlier one of the same unchanged code object on the same launch, which is not rerun.
  bool verified = false;
  bool time_capped = false; ///< sampling stopped at time_cap_ms, before its criterion was met
  /// Filled for wrong_result; for inputs_modified (value: now, expected: initial) and
  /// nondeterministic (value: the second launch's, expected: the first's) too.
  kernel_mismatch mismatch;
  kernel_red_zone_violation violation; ///< filled for out_of_bounds
  /// Every buffer had red zones (off only in a lane started with --no-red-zones, as under a
  /// sanitizer, whose own checks the zones would hide); their host time (read-back, compare).
  bool red_zones = false;
  std::int64_t red_zone_ns = 0;
  std::vector<std::int64_t> spot_samples_ns; ///< the spot-checked launches' GPU times
  kernel_device device;
  bool lane_exiting = false;     ///< the process exits after this reply (the context is lost)
  std::uint32_t allocations = 0; ///< device allocations this request made; 0 in the steady state
  std::int64_t setup_ns = 0;     ///< host time for load, upload, checked launch and comparison
  std::int64_t sampling_ns = 0;  ///< host time for warm-ups and timed launches
  /// How sampling ended: "fixed", a criterion state ("converged", "time_cap", ...) or
  /// "max_samples"; with the achieved relative noise and whether it ended above the target.
  std::string sampling_state = "fixed";
  double noise = 0.0;
  bool noisy = false;
  /// The samples' median interval at the request's race_confidence (0 and 0 without samples),
  /// which racing compared with race_bound_ns ("raced": low > bound x (1 + race_noise)).
  double interval_low_ns = 0.0;
  double interval_high_ns = 0.0;
  /// Where the setup's host time went: the code object (read and loaded, or found in the lane's
  /// module cache), the restore of the initial contents, the output check (wait and compare).
  std::int64_t load_ns = 0;
  std::int64_t restore_ns = 0;
  std::int64_t check_ns = 0;
  bool module_cached = false;
};

/// A frame that cannot be read: a length over the limit (the stream is out of step).
class frame_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// `payload` behind its 4-byte big-endian length.
inline std::string frame_bytes(std::string_view payload) {
  const auto size = static_cast<std::uint32_t>(payload.size());
  std::string out;
  out.reserve(payload.size() + 4);
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((size >> shift) & 0xffu));
  out.append(payload);
  return out;
}

/// Removes the first complete frame from the front of `buffer` and returns its payload; nullopt
/// while the frame is incomplete. Throws frame_error for a length over max_kernel_lane_frame_bytes.
inline std::optional<std::string> take_frame(std::string& buffer) {
  if (buffer.size() < 4)
    return std::nullopt;
  std::uint32_t size = 0;
  for (int i = 0; i < 4; ++i)
    size = (size << 8) | static_cast<unsigned char>(buffer[static_cast<std::size_t>(i)]);
  if (size > max_kernel_lane_frame_bytes)
    throw frame_error("frame of " + std::to_string(size) + " bytes announced, more than the " +
                      std::to_string(max_kernel_lane_frame_bytes) +
                      " allowed: the stream is out of step (did something else write to it?)");
  if (buffer.size() < 4 + static_cast<std::size_t>(size))
    return std::nullopt;
  std::string payload = buffer.substr(4, size);
  buffer.erase(0, 4 + static_cast<std::size_t>(size));
  return payload;
}

inline const char* to_string(kernel_lane_status status) {
  switch (status) {
  case kernel_lane_status::ok: return "ok";
  case kernel_lane_status::wrong_result: return "wrong_result";
  case kernel_lane_status::load_failed: return "load_failed";
  case kernel_lane_status::symbol_not_found: return "symbol_not_found";
  case kernel_lane_status::launch_failed: return "launch_failed";
  case kernel_lane_status::kernel_fault: return "kernel_fault";
  case kernel_lane_status::bad_request: return "bad_request";
  case kernel_lane_status::reference_failed: return "reference_failed";
  case kernel_lane_status::device_unavailable: return "device_unavailable";
  case kernel_lane_status::out_of_memory: return "out_of_memory";
  case kernel_lane_status::out_of_bounds: return "out_of_bounds";
  case kernel_lane_status::inputs_modified: return "inputs_modified";
  case kernel_lane_status::nondeterministic: return "nondeterministic";
  case kernel_lane_status::timed_phase: return "timed_phase";
  }
  return "unknown";
}

inline const char* to_string(element_type type) {
  switch (type) {
  case element_type::f32: return "f32";
  case element_type::f64: return "f64";
  case element_type::i32: return "i32";
  case element_type::i64: return "i64";
  case element_type::u32: return "u32";
  case element_type::f16: return "f16";
  }
  return "unknown";
}

/// Bytes per element.
inline std::size_t element_size(element_type type) {
  switch (type) {
  case element_type::f64:
  case element_type::i64: return 8;
  case element_type::f16: return 2;
  case element_type::f32:
  case element_type::i32:
  case element_type::u32: return 4;
  }
  return 0;
}

inline bool is_float(element_type type) {
  return type == element_type::f32 || type == element_type::f64 || type == element_type::f16;
}

} // namespace rpl::messages
