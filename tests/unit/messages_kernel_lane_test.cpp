// The kernel lane's frames and messages: length prefixes (whole, split, several at once, too
// long), round trips of the hello, request and reply, and the maps' tolerance of unknown and
// missing keys (including measure_request's optional launch).

#include <string>

#include <gtest/gtest.h>

#include "messages/codec.hpp"
#include "messages/kernel_lane.hpp"

namespace rpl::messages {
namespace {

kernel_launch sample_launch() {
  kernel_launch launch;
  launch.symbol = "rpl_sgemm_tiled";
  launch.grid = {32, 16, 1};
  launch.block = {256, 1, 1};
  launch.shared_bytes = 1024;
  kernel_arg a;
  a.name = "A";
  a.count = 4096;
  a.init.fill = buffer_fill::random;
  a.init.seed = 9;
  a.init.min = -1.0;
  kernel_arg c;
  c.name = "C";
  c.count = 4096;
  c.output = true;
  c.tolerance = {1e-3, 1e-3};
  kernel_arg k;
  k.name = "k";
  k.kind = kernel_arg_kind::scalar;
  k.type = element_type::i32;
  k.int_value = 2048;
  launch.args = {a, c, k};
  launch.reference = kernel_reference{"", "rpl_sgemm_reference", {128, 128, 1}, {16, 16, 1}, 0};
  return launch;
}

TEST(messages_kernel_lane, frames_carry_a_big_endian_length) {
  const std::string bytes = frame_bytes("abc");
  ASSERT_EQ(bytes.size(), 7u);
  EXPECT_EQ(bytes.substr(0, 4), std::string("\0\0\0\3", 4));
  std::string buffer = bytes;
  EXPECT_EQ(take_frame(buffer), "abc");
  EXPECT_TRUE(buffer.empty());
  EXPECT_EQ(frame_bytes(std::string(300, 'x')).substr(0, 4), std::string("\0\0\x01\x2c", 4));
}

TEST(messages_kernel_lane, a_frame_is_taken_only_once_complete_and_one_at_a_time) {
  const std::string stream = frame_bytes("first") + frame_bytes("") + frame_bytes("third");
  std::string buffer;
  std::vector<std::string> got;
  for (const char byte : stream) { // one byte at a time, as a pipe may deliver them
    buffer.push_back(byte);
    while (auto frame = take_frame(buffer))
      got.push_back(*frame);
  }
  EXPECT_EQ(got, (std::vector<std::string>{"first", "", "third"}));
  EXPECT_TRUE(buffer.empty());
}

TEST(messages_kernel_lane, an_impossible_length_is_an_error_not_an_allocation) {
  std::string buffer("\xff\xff\xff\xffjunk", 8);
  EXPECT_THROW(take_frame(buffer), frame_error);
  std::string limit = frame_bytes(std::string(16, 'x'));
  limit[0] = '\x01'; // 16 MiB + 16: just over the limit
  EXPECT_THROW(take_frame(limit), frame_error);
}

TEST(messages_kernel_lane, a_request_round_trips_with_its_launch_and_reference) {
  kernel_lane_request request;
  request.sequence = 42;
  request.candidate_key = "k1";
  request.code_object_path = "/a/b.cubin";
  request.launch = sample_launch();
  request.sampling = {3, 10, 100, 2000};
  const auto back = decode<kernel_lane_request>(encode(request));
  EXPECT_EQ(back.protocol, kernel_lane_protocol);
  EXPECT_EQ(back.sequence, 42u);
  EXPECT_EQ(back.code_object_path, "/a/b.cubin");
  EXPECT_EQ(back.launch.grid.y, 16u);
  EXPECT_EQ(back.launch.shared_bytes, 1024u);
  ASSERT_EQ(back.launch.args.size(), 3u);
  EXPECT_EQ(back.launch.args[0].init.fill, buffer_fill::random);
  EXPECT_EQ(back.launch.args[0].init.seed, 9u);
  EXPECT_TRUE(back.launch.args[1].output);
  EXPECT_DOUBLE_EQ(back.launch.args[1].tolerance.rel, 1e-3);
  EXPECT_EQ(back.launch.args[2].kind, kernel_arg_kind::scalar);
  EXPECT_EQ(back.launch.args[2].int_value, 2048);
  ASSERT_TRUE(back.launch.reference);
  EXPECT_EQ(back.launch.reference->symbol, "rpl_sgemm_reference");
  EXPECT_EQ(back.launch.reference->block.y, 16u);
  EXPECT_EQ(back.sampling.max_samples, 100u);
  EXPECT_EQ(back.sampling.time_cap_ms, 2000u);
}

TEST(messages_kernel_lane, a_reply_and_a_hello_round_trip) {
  kernel_lane_reply reply;
  reply.sequence = 7;
  reply.status = kernel_lane_status::wrong_result;
  reply.error_name = "";
  reply.reason = "wrong result";
  reply.samples_ns = {1000, 2000};
  reply.mismatch = {"C", 17, 1.5, 2.0, 3, 4096};
  reply.device = {"cuda", 0, "NVIDIA H100", "GPU-1234", "sm_90", 1980000, 80ull << 30};
  reply.lane_exiting = true;
  reply.allocations = 3;
  const auto back = decode<kernel_lane_reply>(encode(reply));
  EXPECT_EQ(back.status, kernel_lane_status::wrong_result);
  EXPECT_EQ(back.samples_ns, (std::vector<std::int64_t>{1000, 2000}));
  EXPECT_EQ(back.mismatch.index, 17u);
  EXPECT_EQ(back.mismatch.count, 3u);
  EXPECT_EQ(back.device.uuid, "GPU-1234");
  EXPECT_EQ(back.device.sm_clock_khz, 1980000);
  EXPECT_TRUE(back.lane_exiting);
  EXPECT_EQ(back.allocations, 3u);

  kernel_lane_hello hello;
  hello.pid = 99;
  hello.status = kernel_lane_status::ok;
  hello.device.arch = "gfx90a";
  const auto hello_back = decode<kernel_lane_hello>(encode(hello));
  EXPECT_EQ(hello_back.pid, 99);
  EXPECT_EQ(hello_back.status, kernel_lane_status::ok);
  EXPECT_EQ(hello_back.device.arch, "gfx90a");
}

TEST(messages_kernel_lane, readers_ignore_unknown_keys_and_keep_defaults_for_missing_ones) {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> packer(buffer);
  packer.pack_map(3);
  packer.pack(std::string("sequence"));
  packer.pack(5);
  packer.pack(std::string("from_a_newer_engine"));
  packer.pack(std::string("ignored"));
  packer.pack(std::string("status"));
  packer.pack(0);
  const auto reply = decode<kernel_lane_reply>(std::string_view(buffer.data(), buffer.size()));
  EXPECT_EQ(reply.sequence, 5u);
  EXPECT_EQ(reply.status, kernel_lane_status::ok);
  EXPECT_EQ(reply.protocol, kernel_lane_protocol);
  EXPECT_TRUE(reply.samples_ns.empty());
}

TEST(messages_kernel_lane, measure_request_carries_an_optional_launch) {
  measure_request request;
  request.argv = {"/x.cubin"};
  EXPECT_FALSE(decode<measure_request>(encode(request)).launch) << "absent stays absent";
  request.launch = sample_launch();
  const auto back = decode<measure_request>(encode(request));
  ASSERT_TRUE(back.launch);
  EXPECT_EQ(back.launch->symbol, "rpl_sgemm_tiled");
  EXPECT_EQ(back.launch->args.size(), 3u);

  // A request from a writer that knows no launch field: the key is simply missing.
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> packer(buffer);
  packer.pack_map(1);
  packer.pack(std::string("runs"));
  packer.pack(9);
  const auto old = decode<measure_request>(std::string_view(buffer.data(), buffer.size()));
  EXPECT_EQ(old.runs, 9u);
  EXPECT_FALSE(old.launch);
}

TEST(messages_kernel_lane, statuses_and_types_have_names_and_sizes) {
  EXPECT_STREQ(to_string(kernel_lane_status::kernel_fault), "kernel_fault");
  EXPECT_STREQ(to_string(kernel_lane_status::out_of_memory), "out_of_memory");
  EXPECT_STREQ(to_string(element_type::f16), "f16");
  EXPECT_EQ(element_size(element_type::f16), 2u);
  EXPECT_EQ(element_size(element_type::i64), 8u);
  EXPECT_EQ(element_size(element_type::u32), 4u);
  EXPECT_EQ(element_size(static_cast<element_type>(99)), 0u) << "unknown types have no size";
  EXPECT_TRUE(is_float(element_type::f16));
  EXPECT_FALSE(is_float(element_type::i32));
  // Wire numbers are fixed forever.
  EXPECT_EQ(static_cast<int>(kernel_lane_status::out_of_memory), 9);
  EXPECT_EQ(static_cast<int>(element_type::f16), 6);
  EXPECT_EQ(static_cast<int>(buffer_fill::file), 3);
}

} // namespace
} // namespace rpl::messages
