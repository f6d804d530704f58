#include <gtest/gtest.h>

#include "messages/codec.hpp"

namespace rpl::messages {
namespace {

TEST(codec, compile_request_round_trips_every_field) {
  compile_request request;
  request.sources = {{"k.cpp", std::string("int main(){}\0binary", 19)},
                     {"inc/a.h", "#pragma once"}};
  request.argv = {"g++", "-O2", "k.cpp", "-o", "{OUT}"};
  request.toolchain_id = "g++ 12.2";
  request.deadline_ms = 1234;
  request.max_output_bytes = 99;
  const auto back = decode<compile_request>(encode(request));
  ASSERT_EQ(back.sources.size(), 2u);
  EXPECT_EQ(back.sources[0].content, request.sources[0].content);
  EXPECT_EQ(back.sources[1].name, "inc/a.h");
  EXPECT_EQ(back.argv, request.argv);
  EXPECT_EQ(back.toolchain_id, "g++ 12.2");
  EXPECT_EQ(back.deadline_ms, 1234u);
  EXPECT_EQ(back.max_output_bytes, 99u);
}

TEST(codec, compile_reply_round_trips_binary_artifact_and_status) {
  compile_reply reply;
  reply.status = compile_status::no_artifact;
  reply.exit_code = 0;
  reply.term_signal = 9;
  reply.output = "warning: x";
  reply.artifact = {'\x7f', 'E', 'L', 'F', '\0', '\xff'};
  reply.has_artifact = true;
  reply.compile_ns = 123456789012;
  reply.worker_id = "host:42";
  reply.error = "e";
  const auto back = decode<compile_reply>(encode(reply));
  EXPECT_EQ(back.status, compile_status::no_artifact);
  EXPECT_EQ(back.term_signal, 9);
  EXPECT_EQ(back.artifact, reply.artifact);
  EXPECT_TRUE(back.has_artifact);
  EXPECT_EQ(back.compile_ns, 123456789012);
  EXPECT_EQ(back.worker_id, "host:42");
}

TEST(codec, measurement_and_verdict_round_trip) {
  measure_result result;
  result.status = measure_status::timed_out;
  result.samples_ns = {1, 2, 3000000000LL};
  result.failed_run = -1;
  result.reason = "warm-up 1 timed out";
  result.lane = "cpu0";
  const auto r = decode<measure_result>(encode(result));
  EXPECT_EQ(r.status, measure_status::timed_out);
  EXPECT_EQ(r.samples_ns, result.samples_ns);
  EXPECT_EQ(r.failed_run, -1);

  verdict v;
  v.candidate_key = "abc";
  v.decision = verdict_kind::ambiguous;
  v.relative_change = -0.031;
  const auto w = decode<verdict>(encode(v));
  EXPECT_EQ(w.decision, verdict_kind::ambiguous);
  EXPECT_DOUBLE_EQ(w.relative_change, -0.031);

  measure_request request;
  request.argv = {"./bin", "--n", "256"};
  request.runs = 7;
  EXPECT_EQ(decode<measure_request>(encode(request)).runs, 7u);

  ready hello;
  hello.compilers = {"g++", "nvcc"};
  hello.heartbeat_ms = 250;
  const auto h = decode<ready>(encode(hello));
  EXPECT_EQ(h.compilers, hello.compilers);
  EXPECT_EQ(h.heartbeat_ms, 250u);
  EXPECT_EQ(decode<heartbeat>(encode(heartbeat{77})).sequence, 77u);
  EXPECT_EQ(decode<disconnect>(encode(disconnect{"bye"})).reason, "bye");
}

TEST(codec, enums_keep_their_wire_numbers) {
  // Numbers on the wire are a contract (docs/protocol.md): never renumber.
  EXPECT_EQ(static_cast<int>(message_kind::ready), 1);
  EXPECT_EQ(static_cast<int>(message_kind::verdict), 8);
  EXPECT_EQ(static_cast<int>(compile_status::no_artifact), 6);
  EXPECT_EQ(static_cast<int>(measure_status::not_run), 5);
  EXPECT_EQ(static_cast<int>(verdict_kind::faster), 1);
  EXPECT_EQ(static_cast<int>(verdict_kind::invalid), 5);
  // And the encoding of an enum is its number.
  msgpack::sbuffer buffer;
  msgpack::pack(buffer, compile_status::rejected);
  ASSERT_EQ(buffer.size(), 1u);
  EXPECT_EQ(buffer.data()[0], 3);
}

TEST(codec, a_reader_ignores_unknown_fields_and_defaults_missing_ones) {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> packer(buffer);
  packer.pack_map(3);
  packer.pack(std::string("sequence"));
  packer.pack(5);
  packer.pack(std::string("added_in_v2"));
  packer.pack(std::string("whatever"));
  packer.pack(std::string("another"));
  packer.pack(std::vector<int>{1, 2});
  EXPECT_EQ(decode<heartbeat>(std::string_view(buffer.data(), buffer.size())).sequence, 5u);

  msgpack::sbuffer empty;
  msgpack::packer<msgpack::sbuffer>(empty).pack_map(0);
  const auto request = decode<compile_request>(std::string_view(empty.data(), empty.size()));
  EXPECT_EQ(request.deadline_ms, 600000u);
  EXPECT_TRUE(request.argv.empty());
}

TEST(codec, a_propose_reply_carries_its_notes_and_an_older_one_decodes_without) {
  propose_reply reply;
  reply.status = propose_status::ok;
  reply.proposer = "rule";
  reply.elapsed_ns = 42;
  reply.notes = {"vector loads: the loop at line 12 of `k`: the loop body calls atomicAdd",
                 "launch bounds: the block size of the launch is unknown"};
  const auto back = decode<propose_reply>(encode(reply));
  EXPECT_EQ(back.notes, reply.notes);
  EXPECT_EQ(back.elapsed_ns, 42);

  // A reply from a worker before notes: the map without the key.
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> packer(buffer);
  packer.pack_map(2);
  packer.pack(std::string("proposer"));
  packer.pack(std::string("rule"));
  packer.pack(std::string("elapsed_ns"));
  packer.pack(7);
  const auto old = decode<propose_reply>(std::string_view(buffer.data(), buffer.size()));
  EXPECT_EQ(old.proposer, "rule");
  EXPECT_TRUE(old.notes.empty());
}

TEST(codec, malformed_bytes_are_a_decode_error_not_a_crash) {
  EXPECT_THROW(decode<compile_reply>(std::string_view("\xc1\xc1", 2)), decode_error);
  EXPECT_THROW(decode<compile_reply>(std::string_view("")), decode_error);
  msgpack::sbuffer buffer;
  msgpack::pack(buffer, 42); // not a map
  EXPECT_THROW(decode<compile_reply>(std::string_view(buffer.data(), buffer.size())), decode_error);
  // A field of the wrong type.
  msgpack::sbuffer wrong;
  msgpack::packer<msgpack::sbuffer> packer(wrong);
  packer.pack_map(1);
  packer.pack(std::string("argv"));
  packer.pack(17);
  EXPECT_THROW(decode<compile_request>(std::string_view(wrong.data(), wrong.size())), decode_error);
}

TEST(codec, frames_with_a_foreign_header_or_version_are_refused) {
  envelope env;
  env.kind = message_kind::compile_reply;
  env.job_id = 9;
  env.run_id = "run-1";
  const auto body = encode(compile_reply{});
  const auto parsed = parse_frames(protocol_header, encode(env), body);
  EXPECT_EQ(parsed.env.kind, message_kind::compile_reply);
  EXPECT_EQ(parsed.env.job_id, 9u);
  EXPECT_EQ(parsed.env.run_id, "run-1");
  EXPECT_EQ(parsed.body, body);

  EXPECT_THROW(parse_frames("MDPW01", encode(env), body), decode_error);
  env.version = 2;
  try {
    parse_frames(protocol_header, encode(env), body);
    FAIL() << "version 2 accepted";
  } catch (const decode_error& error) {
    EXPECT_NE(std::string(error.what()).find("unsupported protocol version 2"), std::string::npos);
  }
  env.version = protocol_version;
  env.kind = static_cast<message_kind>(99);
  EXPECT_THROW(parse_frames(protocol_header, encode(env), body), decode_error);
}

} // namespace
} // namespace rpl::messages
