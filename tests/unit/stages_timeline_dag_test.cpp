// The critical path on hand-built timelines; every expected value is worked out in a comment.
#include <gtest/gtest.h>

#include "stages/analysis/timeline_dag.hpp"

namespace rpl::stages::analysis {
namespace {

using rocpd::sync_kind;
using rocpd::timeline;

/// Tracks: stream s of process 1 in database 0, named "S<s>".
timeline make(std::vector<std::tuple<std::string, int, std::int64_t, std::int64_t>> ops) {
  timeline t;
  std::map<int, std::int32_t> tracks;
  std::map<std::string, std::int32_t> names;
  for (const auto& [name, stream, start, end] : ops) {
    if (!tracks.count(stream)) {
      tracks[stream] = static_cast<std::int32_t>(t.tracks.size());
      t.tracks.push_back({0, 1, 0, stream, "S" + std::to_string(stream)});
    }
    if (!names.count(name)) {
      names[name] = static_cast<std::int32_t>(t.names.size());
      t.names.push_back(name);
    }
    t.ops.push_back({start, end, names[name], tracks[stream], false});
  }
  return t;
}

rocpd::sync_row sync(sync_kind kind, std::int64_t start, std::int64_t end, std::int64_t stream) {
  rocpd::sync_row s;
  s.kind = kind;
  s.start_ns = start;
  s.end_ns = end;
  s.pid = 1;
  s.stream_id = stream;
  s.from_tracer_record = stream >= 0;
  return s;
}

const kernel_path_time& named(const critical_path_result& r, const std::string& name) {
  for (const auto& k : r.kernels)
    if (k.name == name)
      return k;
  throw std::runtime_error(name);
}

TEST(stages_timeline_dag, independent_streams_follow_the_stream_that_ends_last) {
  // S1: a1 [0,100], a2 [110,300]; S2: b1 [0,50], b2 [60,200]. No waits: the path is S1's chain,
  // a2 <- a1: span 300 - 0 = 300, busy 100 + 190 = 290 (10 ns idle between them).
  const timeline t =
      make({{"a1", 1, 0, 100}, {"a2", 1, 110, 300}, {"b1", 2, 0, 50}, {"b2", 2, 60, 200}});
  const auto r = critical_path(t);
  EXPECT_DOUBLE_EQ(r.path_ns, 300);
  EXPECT_DOUBLE_EQ(r.busy_ns, 290);
  EXPECT_DOUBLE_EQ(r.makespan_ns, 300);
  EXPECT_EQ(r.segments, 1u);
  EXPECT_EQ(r.on_path, (std::vector<std::uint8_t>{1, 1, 0, 0}));
  // Slack (ops may end later without moving 300; successors may start right after them):
  // a2: 300 - 300 = 0. a1: its successor a2 could start at 300 - 190 = 110: 110 - 100 = 10.
  // b2: 300 - 200 = 100. b1: b2 could start at 300 - 140 = 160: 160 - 50 = 110.
  EXPECT_EQ(r.slack_ns, (std::vector<double>{10, 0, 110, 100}));
  EXPECT_DOUBLE_EQ(named(r, "a2").critical_path_ns, 190);
  EXPECT_DOUBLE_EQ(named(r, "b2").critical_path_ns, 0);
  EXPECT_EQ(r.kernels.front().name, "a2");
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes[0].find("no stream-wait records"), std::string::npos);
  // What-if: b2 50 % faster saves nothing (off the path); a2 50 % faster: 95 ns shorter, and S1
  // then ends at 205 while S2 ends at 200: the span is 205, saving 95.
  EXPECT_DOUBLE_EQ(what_if_saving(t, "b2", 50), 0);
  EXPECT_DOUBLE_EQ(what_if_saving(t, "a2", 50), 95);
  // a2 100 % faster: S1 ends at 110, S2 at 200: the saving stops at 100 (S2 takes over).
  EXPECT_DOUBLE_EQ(what_if_saving(t, "a2", 100), 100);
  // The same questions asked of critical_path for its top kernel (a2), on one DAG.
  const auto asked = critical_path(t, 1, {50, 100});
  EXPECT_EQ(asked.kernels.front().what_if,
            (std::vector<std::pair<double, double>>{{50, 95}, {100, 100}}));
  EXPECT_TRUE(asked.kernels[1].what_if.empty());
}

TEST(stages_timeline_dag, a_recorded_stream_wait_links_the_streams) {
  // S1: p [0,100]. S2: q [0,30], then a wait on S2 called at 40, then w [105,205]. The waiter is
  // S2's first op starting at or after 40 (w); its source the op of another stream that ended
  // last by 105 (p). Path: w <- p (p ended at 100, after q's 30): span 205, busy 200.
  timeline t = make({{"p", 1, 0, 100}, {"q", 2, 0, 30}, {"w", 2, 105, 205}});
  t.syncs.push_back(sync(sync_kind::stream_wait_event, 40, 41, 2));
  const auto r = critical_path(t);
  ASSERT_EQ(r.cross_edges.size(), 1u);
  EXPECT_EQ(r.cross_edges[0].from, 0u);
  EXPECT_EQ(r.cross_edges[0].to, 2u);
  EXPECT_EQ(r.on_path, (std::vector<std::uint8_t>{1, 0, 1}));
  EXPECT_DOUBLE_EQ(r.path_ns, 205);
  EXPECT_DOUBLE_EQ(r.busy_ns, 200);
  // Slack: w 0; p: w could start at 205 - 100 = 105: 105 - 100 = 5; q: the same bound, 105 - 30.
  EXPECT_EQ(r.slack_ns, (std::vector<double>{5, 75, 0}));
  EXPECT_NE(r.notes[0].find("1 of 1 recorded stream waits became cross-stream edges"),
            std::string::npos);
  // p 50 % faster: p ends at 50, w starts 5 ns later (its gap after p) at 55 and ends at 155:
  // saving 205 - 155 = 50. Without the wait edge the saving would be 0 (q's chain).
  EXPECT_DOUBLE_EQ(what_if_saving(t, "p", 50), 50);
  EXPECT_DOUBLE_EQ(what_if_saving(t, "q", 50), 0);
}

rocpd::sync_row event_sync(sync_kind kind,
                           std::int64_t at,
                           std::int64_t stream,
                           std::string event,
                           std::int64_t sync_id = -1,
                           std::int64_t device_ns = -1) {
  rocpd::sync_row s = sync(kind, at, at + 1, stream);
  s.event = std::move(event);
  s.event_sync_id = sync_id;
  s.device_ns = device_ns;
  return s;
}

TEST(stages_timeline_dag, a_wait_follows_the_stream_that_recorded_its_event) {
  // S1: p [0,100]. S3: z [0,103] (ends later than p). S2: w [105,205]. The event is recorded on
  // S1 at 50 and S2 waits for it at 60: the edge is p -> w, although z ended last before w (by
  // timing alone z -> w). Path: p, 5 ns gap, w: 205. z: no successor, 205 - 103 = 102 slack.
  timeline t = make({{"p", 1, 0, 100}, {"z", 3, 0, 103}, {"w", 2, 105, 205}});
  t.syncs.push_back(event_sync(sync_kind::event_record, 50, 1, "cuda:7"));
  t.syncs.push_back(event_sync(sync_kind::stream_wait_event, 60, 2, "cuda:7"));
  const auto r = critical_path(t);
  ASSERT_EQ(r.cross_edges.size(), 1u);
  EXPECT_EQ(r.cross_edges[0].from, 0u);
  EXPECT_EQ(r.cross_edges[0].to, 2u);
  EXPECT_TRUE(r.cross_edges[0].from_event_record);
  EXPECT_EQ(r.on_path, (std::vector<std::uint8_t>{1, 0, 1}));
  EXPECT_DOUBLE_EQ(r.path_ns, 205);
  EXPECT_DOUBLE_EQ(r.slack_ns[1], 102);
  EXPECT_NE(r.notes[0].find("1 of 1 recorded stream waits became cross-stream edges: 1 from the "
                            "event record"),
            std::string::npos);
  // Without the record the same wait is matched by timing, to z.
  timeline u = make({{"p", 1, 0, 100}, {"z", 3, 0, 103}, {"w", 2, 105, 205}});
  u.syncs.push_back(event_sync(sync_kind::stream_wait_event, 60, 2, "cuda:7"));
  const auto v = critical_path(u);
  ASSERT_EQ(v.cross_edges.size(), 1u);
  EXPECT_EQ(v.cross_edges[0].from, 1u);
  EXPECT_FALSE(v.cross_edges[0].from_event_record);
  EXPECT_NE(v.notes[0].find("0 from the event record"), std::string::npos);
  EXPECT_NE(v.notes[0].find("1 by timing"), std::string::npos);
}

TEST(stages_timeline_dag, the_record_instance_and_its_device_time_pick_the_source) {
  // S1: p1 [0,40], p2 [45,100]; S2: w [105,205]. Two records of the event on S1: sync id 1 at
  // host 10 (the GPU reached it at 42, after p1) and sync id 2 at host 30 (reached at 101). The
  // wait (host 35) names sync id 1: its source is p1 (ended 40 <= 42), not p2 (100 > 42), even
  // though record 2 is the last one called before the wait.
  timeline t = make({{"p1", 1, 0, 40}, {"p2", 1, 45, 100}, {"w", 2, 105, 205}});
  t.syncs.push_back(event_sync(sync_kind::event_record, 10, 1, "cuda:3", 1, 42));
  t.syncs.push_back(event_sync(sync_kind::event_record, 30, 1, "cuda:3", 2, 101));
  t.syncs.push_back(event_sync(sync_kind::stream_wait_event, 35, 2, "cuda:3", 1));
  const auto r = critical_path(t);
  ASSERT_EQ(r.cross_edges.size(), 1u);
  EXPECT_EQ(r.cross_edges[0].from, 0u);
  // The same wait without a sync id takes the last record called before it (sync id 2): p2.
  t.syncs.back().event_sync_id = -1;
  const auto q = critical_path(t);
  ASSERT_EQ(q.cross_edges.size(), 1u);
  EXPECT_EQ(q.cross_edges[0].from, 1u);
  // An event recorded before anything ran on its stream releases the waiter at once: no edge.
  timeline e = make({{"p", 1, 50, 100}, {"w", 2, 105, 205}});
  e.syncs.push_back(event_sync(sync_kind::event_record, 1, 1, "cuda:9", -1, 2));
  e.syncs.push_back(event_sync(sync_kind::stream_wait_event, 3, 2, "cuda:9"));
  const auto n = critical_path(e);
  EXPECT_TRUE(n.cross_edges.empty());
  EXPECT_NE(n.notes[0].find("1 waited for events recorded before any op of their stream"),
            std::string::npos);
}

TEST(stages_timeline_dag, a_host_synchronization_cuts_the_timeline_into_segments) {
  // S1: x [0,100]; the host waits (device synchronize, [50,120]); y [130,180] after it.
  // Segments: x (starts before 120) and y: the path is 100 + 50 = 150 of a 180 ns makespan;
  // the 30 ns between them is the host's, not on any GPU path.
  timeline t = make({{"x", 1, 0, 100}, {"y", 1, 130, 180}});
  t.syncs.push_back(sync(sync_kind::device_synchronize, 50, 120, -1));
  const auto r = critical_path(t);
  EXPECT_EQ(r.segments, 2u);
  EXPECT_DOUBLE_EQ(r.path_ns, 150);
  EXPECT_DOUBLE_EQ(r.makespan_ns, 180);
  EXPECT_EQ(r.on_path, (std::vector<std::uint8_t>{1, 1}));
  EXPECT_EQ(r.slack_ns, (std::vector<double>{0, 0}));
  bool said = false;
  for (const auto& note : r.notes)
    said = said || note.find("1 host synchronizations cut the timeline into 2 segments") !=
                       std::string::npos;
  EXPECT_TRUE(said);
  // x 50 % faster: its segment is 50 shorter; y's segment does not move.
  EXPECT_DOUBLE_EQ(what_if_saving(t, "x", 50), 50);
}

TEST(stages_timeline_dag, a_wait_without_its_stream_is_counted_not_guessed) {
  timeline t = make({{"p", 1, 0, 100}, {"w", 2, 105, 205}});
  t.syncs.push_back(sync(sync_kind::stream_wait_event, 40, 41, -1));
  const auto r = critical_path(t);
  EXPECT_TRUE(r.cross_edges.empty());
  bool said = false;
  for (const auto& note : r.notes)
    said =
        said || note.find("1 stream waits were recorded without their stream") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(stages_timeline_dag, a_million_op_chain_is_linear_and_the_json_is_bounded) {
  std::vector<std::tuple<std::string, int, std::int64_t, std::int64_t>> ops;
  for (std::int64_t i = 0; i < 1'000'000; ++i)
    ops.emplace_back(i % 2 ? "odd" : "even", static_cast<int>(i % 4), i * 10, i * 10 + 9);
  const timeline t = make(std::move(ops));
  const auto r = critical_path(t);
  // Four streams, each op 9 ns long, 40 ns apart per stream: the path is the stream whose last op
  // ends last (stream 3: last op [9,999,990, 9,999,999]), starting at its first op (30).
  EXPECT_DOUBLE_EQ(r.path_ns, 9'999'999 - 30);
  EXPECT_DOUBLE_EQ(r.busy_ns, 250'000.0 * 9);
  const auto j = to_json(t, r, 100);
  EXPECT_EQ(j["critical_ops"].size(), 100u);
  EXPECT_EQ(j["critical_ops_total"], 250'000u);
}

} // namespace
} // namespace rpl::stages::analysis

namespace rpl::stages::analysis {
namespace {

rocpd::sync_row placed(rocpd::sync_row s, std::int64_t op) {
  s.ordered = true;
  s.op = op;
  return s;
}

TEST(stages_timeline_dag, records_and_waits_placed_in_enqueue_order_are_taken_as_placed) {
  // S1: a [0,100], b [300,400]; S2: c [500,600]. A device synchronize [150,250] cuts after a.
  // Record 1 (placed on a) waited for by c: a is in the segment before the cut, which already
  // orders it: no edge. Record 2 (placed on b) waited for by c: b -> c.
  timeline t = make({{"a", 1, 0, 100}, {"b", 1, 300, 400}, {"c", 2, 500, 600}});
  t.syncs.push_back(sync(sync_kind::device_synchronize, 150, 250, -1));
  t.syncs.push_back(placed(event_sync(sync_kind::event_record, 10, 1, "cuda:1", 1), 0));
  t.syncs.push_back(placed(event_sync(sync_kind::stream_wait_event, 20, 2, "cuda:1", 1), 2));
  auto r = critical_path(t);
  EXPECT_TRUE(r.cross_edges.empty());
  EXPECT_NE(r.notes[0].find("1 waited for ops before a host synchronization, which already "
                            "orders them (no edge)"),
            std::string::npos)
      << r.notes[0];
  t.syncs.push_back(placed(event_sync(sync_kind::event_record, 260, 1, "cuda:1", 2), 1));
  t.syncs.push_back(placed(event_sync(sync_kind::stream_wait_event, 270, 2, "cuda:1", 2), 2));
  r = critical_path(t);
  ASSERT_EQ(r.cross_edges.size(), 1u);
  EXPECT_EQ(r.cross_edges[0].from, 1u);
  EXPECT_EQ(r.cross_edges[0].to, 2u);
  EXPECT_TRUE(r.cross_edges[0].from_event_record);
  EXPECT_NE(r.notes[0].find("1 of 2 recorded stream waits became cross-stream edges: 1 from the "
                            "event record"),
            std::string::npos)
      << r.notes[0];
  // A wait with nothing enqueued after it on its stream holds nothing back; a record with nothing
  // enqueued before it marks nothing.
  timeline e = make({{"p", 1, 0, 100}, {"w", 2, 105, 205}});
  e.syncs.push_back(placed(event_sync(sync_kind::event_record, 1, 1, "cuda:9", 5), -1));
  e.syncs.push_back(placed(event_sync(sync_kind::stream_wait_event, 3, 2, "cuda:9", 5), 1));
  e.syncs.push_back(placed(event_sync(sync_kind::stream_wait_event, 300, 2, "cuda:9", 5), -1));
  const auto n = critical_path(e);
  EXPECT_TRUE(n.cross_edges.empty());
  EXPECT_NE(n.notes[0].find("1 waited for events recorded before any op of their stream"),
            std::string::npos)
      << n.notes[0];
  EXPECT_NE(n.notes[0].find("1 held back no later op of their stream"), std::string::npos)
      << n.notes[0];
}

} // namespace
} // namespace rpl::stages::analysis
