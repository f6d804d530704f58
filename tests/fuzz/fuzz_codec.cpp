// libFuzzer target: the message codec (messages/codec.hpp, messages/kernel_lane.hpp) on arbitrary
// bytes, as a broker, a worker or a lane process receives them from a peer.
//
// The whole input is decoded as every wire type (once, when it is not a msgpack map). What decodes
// must survive a round trip (encode(decode(encode(value))) is encode(value)); anything but
// decode_error escaping decode is a bug, and libFuzzer reports it as a crash. The input is also
// split into the three frames of a worker message ([header][envelope][body], the first two bytes
// giving the lengths of the first two) for parse_frames, and read as a kernel-lane byte stream with
// take_frame.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "messages/codec.hpp"
#include "messages/kernel_lane.hpp"
#include "messages/wire.hpp"

namespace {

namespace m = rpl::messages;

template <class T> void round_trip(std::string_view bytes) {
  T value;
  try {
    value = m::decode<T>(bytes);
  } catch (const m::decode_error&) {
    return;
  }
  const std::string once = m::encode(value);
  const std::string twice = m::encode(m::decode<T>(once)); // must not throw: we wrote it
  if (once != twice) {
    __builtin_trap();
  }
}

void every_type(std::string_view bytes) {
  // Bytes that are not one msgpack map fail every decode<T> in the same place; decoding them once
  // keeps the rate of executions up (each failure is two exceptions).
  try {
    const msgpack::unpack_limit limits(bytes.size(), bytes.size(), bytes.size(), bytes.size(),
                                       bytes.size(), m::max_decode_depth);
    if (msgpack::unpack(bytes.data(), bytes.size(), nullptr, nullptr, limits).get().type !=
        msgpack::type::MAP) {
      round_trip<m::heartbeat>(bytes);
      return;
    }
  } catch (const std::exception&) {
    round_trip<m::heartbeat>(bytes);
    return;
  }
  round_trip<m::envelope>(bytes);
  round_trip<m::ready>(bytes);
  round_trip<m::heartbeat>(bytes);
  round_trip<m::disconnect>(bytes);
  round_trip<m::compile_request>(bytes);
  round_trip<m::compile_reply>(bytes);
  round_trip<m::measure_request>(bytes);
  round_trip<m::measure_result>(bytes);
  round_trip<m::verdict>(bytes);
  round_trip<m::kernel_lane_hello>(bytes);
  round_trip<m::kernel_lane_request>(bytes);
  round_trip<m::kernel_lane_reply>(bytes);
}

void frames(std::string_view bytes) {
  if (bytes.size() < 2) {
    return;
  }
  const auto header_size = static_cast<std::size_t>(static_cast<unsigned char>(bytes[0]) % 16);
  const auto env_size = static_cast<std::size_t>(static_cast<unsigned char>(bytes[1]));
  std::string_view rest = bytes.substr(2);
  const std::string_view header = rest.substr(0, header_size);
  rest.remove_prefix(header.size());
  const std::string_view env = rest.substr(0, env_size);
  rest.remove_prefix(env.size());
  try {
    const m::parsed_frames parsed = m::parse_frames(header, env, rest);
    (void)m::to_string(parsed.env.kind);
  } catch (const m::decode_error&) {
  }
}

void lane_stream(std::string_view bytes) {
  std::string buffer(bytes);
  try {
    while (const auto payload = m::take_frame(buffer)) {
      round_trip<m::kernel_lane_request>(*payload);
      round_trip<m::kernel_lane_reply>(*payload);
    }
  } catch (const m::frame_error&) {
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  every_type(bytes);
  frames(bytes);
  lane_stream(bytes);
  return 0;
}
