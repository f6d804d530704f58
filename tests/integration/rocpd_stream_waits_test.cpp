// Cross-stream edges of the critical path from a ROCm trace: rocprofv3 writes a HIP call's
// arguments to rocpd_arg (values as text), so a hipStreamWaitEvent names its stream and event only
// by handle. The handles resolve through the launches of the same trace (a dispatch shares the
// internal correlation id of its hipLaunchKernel, whose `stream` argument is the handle). The
// database is written with AMD's rocpd schema (our writer), then read back as `analyze` reads it.
#include <gtest/gtest.h>

#include "stages/analysis/timeline_dag.hpp"
#include "stages/trace/rocpd_reader.hpp"
#include "stages/trace/rocpd_timeline.hpp"
#include "stages/trace/rocpd_writer.hpp"
#include "support/rocpd_fixtures.hpp"
#include "support/test_support.hpp"

namespace rpl {
namespace {

namespace rocpd = stages::rocpd;

constexpr std::int64_t pid = 4242;
const char* const handle_a = "0x5a00001000"; // stream 1 (rocpd stream id 0x100)
const char* const handle_b = "0x5a00002000"; // stream 2 (0x200)
const char* const handle_c = "0x5a00003000"; // stream 3 (0x300)

struct trace_writer {
  rocpd::writer& w;
  std::int64_t correlation = 1;

  /// hipLaunchKernel(…, stream) at host time `call`, its dispatch [start, end] on `stream_id`.
  void launch(std::int64_t kernel,
              const char* handle,
              std::int64_t stream_id,
              std::int64_t call,
              std::int64_t start,
              std::int64_t end) {
    rocpd::region_info r;
    r.name = "hipLaunchKernel";
    r.correlation_id = correlation;
    r.start_ns = call;
    r.end_ns = call + 5;
    w.add_region(r);
    w.add_arg(w.last_event_id(), 0, "void const*", "function_address", "0x1234");
    w.add_arg(w.last_event_id(), 5, "hipStream_t", "stream", handle);
    rocpd::dispatch_info d;
    d.agent_id = 1;
    d.kernel_id = kernel;
    d.stream_id = stream_id;
    d.correlation_id = correlation++;
    d.start_ns = start;
    d.end_ns = end;
    w.add_dispatch(d);
  }

  /// A call with a stream and an event argument (hipEventRecord, hipStreamWaitEvent).
  void call(const char* name,
            std::int64_t at,
            const char* event,
            const char* stream,
            std::string_view stream_extdata = "{}") {
    rocpd::region_info r;
    r.name = name;
    r.correlation_id = correlation++;
    r.start_ns = at;
    r.end_ns = at + 3;
    w.add_region(r);
    const bool record = std::string_view(name).find("Record") != std::string_view::npos;
    w.add_arg(w.last_event_id(), record ? 0 : 1, "hipEvent_t", "event", event);
    w.add_arg(w.last_event_id(), record ? 1 : 0, "hipStream_t", "stream", stream, stream_extdata);
  }
};

/// A trace of process `pid` at `path` with `streams` (ids 0x100, 0x200, ...) and one code object
/// whose kernels are `symbols` (ids 1, 2, ...).
std::unique_ptr<rocpd::writer> start_trace(const std::filesystem::path& path,
                                           int streams,
                                           const std::vector<std::string>& symbols) {
  std::filesystem::create_directories(path.parent_path());
  auto w = std::make_unique<rocpd::writer>(path);
  testing::add_process_header(*w, pid, pid + 1);
  for (int s = 1; s <= streams; ++s)
    w->add_stream(pid, "Stream " + std::to_string(s), 0x100 * s);
  rocpd::code_object_info code_object;
  code_object.id = 1;
  code_object.agent_id = 1;
  code_object.uri = "file:///app#offset=0&size=4096";
  w->add_code_object(code_object);
  for (std::size_t k = 0; k < symbols.size(); ++k)
    testing::add_symbol(*w, static_cast<std::int64_t>(k + 1), 1, symbols[k]);
  return w;
}

/// Kernels: 1 produce (stream 1), 2 other (stream 3, ends later than produce), 3 consume
/// (stream 2, waits for the event recorded on stream 1 after produce).
std::filesystem::path write_trace(const std::filesystem::path& dir,
                                  std::string_view wait_stream_extdata) {
  const auto path = dir / "host" / "4242_results.db";
  const auto writer = start_trace(path, 3, {"produce", "other", "consume", "warmup"});
  rocpd::writer& w = *writer;
  trace_writer t{w};
  // Stream 2 has run a kernel before, so its handle is known from a launch.
  t.launch(4, handle_b, 0x200, 10, 20, 60);
  t.launch(1, handle_a, 0x100, 100, 1000, 2000);
  t.launch(2, handle_c, 0x300, 110, 1000, 2300);
  t.call("hipEventRecord", 120, "0xe0001", handle_a);
  t.call("hipStreamWaitEvent", 130, "0xe0001", handle_b, wait_stream_extdata);
  t.launch(3, handle_b, 0x200, 140, 2400, 3000);
  w.commit();
  return path;
}

std::string edge_names(const rocpd::timeline& t, const stages::analysis::critical_path_result& r) {
  std::string out;
  for (const auto& e : r.cross_edges)
    out += t.names[static_cast<std::size_t>(t.ops[e.from].name)] + "->" +
           t.names[static_cast<std::size_t>(t.ops[e.to].name)] +
           (e.from_event_record ? "(record)" : "(timing)") + ";";
  return out;
}

TEST(rocpd_stream_waits, a_hip_wait_is_linked_to_the_recording_stream_through_its_arguments) {
  testing::temp_dir dir;
  const auto path = write_trace(dir.path(), "{}");
  const auto files = rocpd::reader::open({path});
  const rocpd::timeline t = rocpd::read_timeline(files);
  // The record and the wait carry the streams their handles resolve to, and the event handle.
  std::size_t records = 0, waits = 0;
  for (const auto& s : t.syncs) {
    if (s.kind == rocpd::sync_kind::event_record) {
      ++records;
      EXPECT_EQ(s.stream_id, 0x100);
      EXPECT_EQ(s.event, "0xe0001");
    }
    if (s.kind == rocpd::sync_kind::stream_wait_event) {
      ++waits;
      EXPECT_EQ(s.stream_id, 0x200);
      EXPECT_EQ(s.event, "0xe0001");
      EXPECT_FALSE(s.from_tracer_record);
    }
  }
  EXPECT_EQ(records, 1u);
  EXPECT_EQ(waits, 1u);
  const auto r = stages::analysis::critical_path(t);
  // The edge comes from produce (the recording stream), not from other, which ended later (2300)
  // on stream 3; by timing alone it would have been other -> consume.
  EXPECT_EQ(edge_names(t, r), "produce->consume(record);");
  // Path: produce [1000,2000], 400 ns gap, consume [2400,3000]: 2000 ns; other [1000,2300] is
  // off it with 3000 - 2300 = 700 ns slack (no successor). warmup is its own segment start.
  bool other_off_path = false;
  for (std::size_t i = 0; i < t.ops.size(); ++i)
    if (t.names[static_cast<std::size_t>(t.ops[i].name)] == "other") {
      other_off_path = r.on_path[i] == 0;
      EXPECT_DOUBLE_EQ(r.slack_ns[i], 700);
    }
  EXPECT_TRUE(other_off_path);
  EXPECT_NE(r.notes[0].find("1 of 1 recorded stream waits became cross-stream edges: 1 from the "
                            "event record"),
            std::string::npos)
      << r.notes[0];
}

TEST(rocpd_stream_waits, a_stream_id_in_the_argument_extdata_is_taken_as_it_is) {
  // Later rocprofv3 releases put the stream's id into the argument's extdata (the stream_args
  // view reads $.stream_id), which is taken before the handles the launches resolve: here the
  // extdata names stream 0x300 although the handle launched on 0x200.
  testing::temp_dir dir;
  const auto path = write_trace(dir.path(), R"({"stream_id": 768})");
  const auto files = rocpd::reader::open({path});
  const rocpd::timeline t = rocpd::read_timeline(files);
  for (const auto& s : t.syncs) {
    if (s.kind == rocpd::sync_kind::stream_wait_event) {
      EXPECT_EQ(s.stream_id, 0x300);
    }
  }
}

TEST(rocpd_stream_waits, a_handle_that_no_launch_names_leaves_the_wait_without_its_stream) {
  testing::temp_dir dir;
  const auto path = dir.path() / "host" / "1_results.db";
  std::filesystem::create_directories(path.parent_path());
  {
    rocpd::writer w(path);
    testing::add_process_header(w, pid, pid + 1);
    w.add_stream(pid, "Stream 1", 0x100);
    rocpd::code_object_info code_object;
    code_object.id = 1;
    code_object.agent_id = 1;
    code_object.uri = "file:///app#offset=0&size=4096";
    w.add_code_object(code_object);
    testing::add_symbol(w, 1, 1, "produce");
    trace_writer t{w};
    t.launch(1, handle_a, 0x100, 100, 1000, 2000);
    t.call("hipStreamWaitEvent", 130, "0xe0001", "0xdead0000");
    w.commit();
  }
  const auto files = rocpd::reader::open({path});
  const rocpd::timeline t = rocpd::read_timeline(files);
  const auto r = stages::analysis::critical_path(t);
  EXPECT_TRUE(r.cross_edges.empty());
  bool said = false;
  for (const auto& note : r.notes)
    said =
        said || note.find("1 stream waits were recorded without their stream") != std::string::npos;
  EXPECT_TRUE(said);
}

} // namespace
} // namespace rpl

namespace rpl {
namespace {

TEST(rocpd_stream_waits, the_enqueue_order_not_the_gpu_times_places_records_and_waits) {
  // As when an application holds its streams until a phase is enqueued: every op runs after every
  // call. s1: produce, the record, then late (after the record: not what the event marks). s2:
  // early (enqueued before the wait, so not held back by it), the wait, then consume. By GPU times
  // alone the waiter would be early (the first op to start after the wait call) and the source
  // late (the last op of s1 to end before it).
  testing::temp_dir dir;
  const auto path = dir.path() / "host" / "4242_results.db";
  {
    const auto writer = start_trace(path, 2, {"produce", "late", "early", "consume"});
    rocpd::writer& w = *writer;
    trace_writer t{w};
    t.launch(1, handle_a, 0x100, 100, 1000, 2000);
    t.launch(3, handle_b, 0x200, 110, 1000, 1100);
    t.call("hipEventRecord", 120, "0xe0001", handle_a);
    t.launch(2, handle_a, 0x100, 125, 2000, 2600);
    t.call("hipStreamWaitEvent", 130, "0xe0001", handle_b);
    t.launch(4, handle_b, 0x200, 140, 2700, 3000);
    w.commit();
  }
  const auto files = rocpd::reader::open({path});
  const rocpd::timeline t = rocpd::read_timeline(files);
  auto name_of = [&](std::int64_t op) {
    return op < 0 ? std::string("-") : t.names[static_cast<std::size_t>(t.ops[op].name)];
  };
  for (const auto& s : t.syncs) {
    if (s.kind == rocpd::sync_kind::event_record) {
      EXPECT_TRUE(s.ordered);
      EXPECT_EQ(name_of(s.op), "produce");
    }
    if (s.kind == rocpd::sync_kind::stream_wait_event) {
      EXPECT_TRUE(s.ordered);
      EXPECT_EQ(name_of(s.op), "consume");
    }
  }
  const auto r = stages::analysis::critical_path(t);
  EXPECT_EQ(edge_names(t, r), "produce->consume(record);");
  EXPECT_NE(r.notes[0].find("1 of the waits placed by the order the API calls enqueued the ops"),
            std::string::npos)
      << r.notes[0];
}

} // namespace
} // namespace rpl
