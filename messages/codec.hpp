#pragma once
/// msgpack encoding of the wire types, and the three-frame layout used on ZeroMQ sockets:
/// [protocol_header][envelope][body]. Decoding rejects a wrong header, an unknown protocol version
/// and malformed msgpack with decode_error; a receiver drops such a message and logs it.

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

#include "messages/wire_msgpack.hpp"

namespace rpl::messages {

class decode_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Nesting depth decode accepts: the deepest message (a kernel launch inside a measure request)
/// is five levels deep; a deeper one is malformed.
inline constexpr std::size_t max_decode_depth = 32;

template <class T> std::string encode(const T& value) {
  msgpack::sbuffer buffer;
  msgpack::pack(buffer, value);
  return std::string(buffer.data(), buffer.size());
}

template <class T> T decode(std::string_view bytes) {
  try {
    // Every msgpack element takes at least one byte, so no count may exceed the message's size.
    // Without these limits a five-byte map header announcing four billion entries has msgpack ask
    // for 128 GiB before it finds the entries missing (found by tests/fuzz/fuzz_codec).
    const std::size_t limit = bytes.size();
    const msgpack::unpack_limit limits(limit, limit, limit, limit, limit, max_decode_depth);
    msgpack::object_handle handle =
        msgpack::unpack(bytes.data(), bytes.size(), nullptr, nullptr, limits);
    if (handle.get().type != msgpack::type::MAP) {
      throw decode_error("expected a msgpack map");
    }
    T value{};
    handle.get().convert(value);
    return value;
  } catch (const decode_error&) {
    throw;
  } catch (const std::exception& error) {
    throw decode_error(std::string("malformed message: ") + error.what());
  }
}

/// A decoded message whose body is still bytes: the receiver dispatches on envelope.kind.
struct parsed_frames {
  envelope env;
  std::string body;
};

/// Checks the header and the envelope of a message's frames (without the ROUTER identity).
parsed_frames
parse_frames(std::string_view header, std::string_view env_bytes, std::string_view body_bytes);

} // namespace rpl::messages
