#include "messages/codec.hpp"

#include "messages/proposal.hpp"

namespace rpl::messages {

parsed_frames
parse_frames(std::string_view header, std::string_view env_bytes, std::string_view body_bytes) {
  if (header != protocol_header) {
    throw decode_error("unknown protocol header '" + std::string(header.substr(0, 16)) +
                       "', expected " + protocol_header);
  }
  parsed_frames frames{decode<envelope>(env_bytes), std::string(body_bytes)};
  if (frames.env.version != protocol_version) {
    throw decode_error("unsupported protocol version " + std::to_string(frames.env.version) +
                       ", this build speaks " + std::to_string(protocol_version));
  }
  const auto kind = static_cast<unsigned>(frames.env.kind);
  if (kind < 1 || kind > 11) {
    throw decode_error("unknown message kind " + std::to_string(kind));
  }
  return frames;
}

const char* to_string(message_kind kind) {
  switch (kind) {
  case message_kind::ready: return "ready";
  case message_kind::heartbeat: return "heartbeat";
  case message_kind::disconnect: return "disconnect";
  case message_kind::compile_request: return "compile_request";
  case message_kind::compile_reply: return "compile_reply";
  case message_kind::measure_request: return "measure_request";
  case message_kind::measure_result: return "measure_result";
  case message_kind::verdict: return "verdict";
  case message_kind::artifact_chunk: return "artifact_chunk";
  case message_kind::propose_request: return "propose_request";
  case message_kind::propose_reply: return "propose_reply";
  }
  return "unknown";
}

const char* to_string(compile_status status) {
  switch (status) {
  case compile_status::ok: return "ok";
  case compile_status::failed: return "compile_failed";
  case compile_status::timed_out: return "compile_timed_out";
  case compile_status::rejected: return "compile_rejected";
  case compile_status::worker_lost: return "worker_lost";
  case compile_status::internal_error: return "worker_internal_error";
  case compile_status::no_artifact: return "no_artifact";
  case compile_status::too_large: return "too_large";
  case compile_status::toolchain_mismatch: return "toolchain_mismatch";
  }
  return "unknown";
}

const char* to_string(measure_status status) {
  switch (status) {
  case measure_status::ok: return "ok";
  case measure_status::nonzero_exit: return "nonzero_exit";
  case measure_status::wrong_result: return "wrong_result";
  case measure_status::crashed: return "crashed";
  case measure_status::timed_out: return "timed_out";
  case measure_status::launch_failed: return "launch_failed";
  case measure_status::not_run: return "not_run";
  }
  return "unknown";
}

const char* to_string(verdict_kind kind) {
  switch (kind) {
  case verdict_kind::faster: return "faster";
  case verdict_kind::slower: return "slower";
  case verdict_kind::same: return "same";
  case verdict_kind::ambiguous: return "ambiguous";
  case verdict_kind::invalid: return "invalid";
  }
  return "unknown";
}

} // namespace rpl::messages

namespace rpl::messages {

const char* to_string(propose_status status) {
  switch (status) {
  case propose_status::ok: return "ok";
  case propose_status::failed: return "failed";
  case propose_status::unavailable: return "unavailable";
  case propose_status::timed_out: return "timed_out";
  }
  return "unknown";
}

} // namespace rpl::messages
