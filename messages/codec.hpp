#pragma once
/// msgpack encoding of the wire types, and the three-frame layout used on ZeroMQ sockets:
/// [protocol_header][envelope][body]. Decoding rejects a wrong header, an unknown protocol version
/// and malformed msgpack with decode_error; a receiver drops such a message and logs it.

#include <stdexcept>
#include <string>
#include <string_view>

#include "messages/wire.hpp"

namespace rpl::messages {

class decode_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

template <class T> std::string encode(const T& value) {
  msgpack::sbuffer buffer;
  msgpack::pack(buffer, value);
  return std::string(buffer.data(), buffer.size());
}

template <class T> T decode(std::string_view bytes) {
  try {
    msgpack::object_handle handle = msgpack::unpack(bytes.data(), bytes.size());
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
