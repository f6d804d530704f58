// The Perfetto/Chrome trace writer, checked against the trace-event format's rules (the JSON
// Object Format of the Trace Event Format document, which ui.perfetto.dev and chrome://tracing
// read): ui.perfetto.dev is not reachable here, so the rules a viewer relies on are checked here.
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "stages/analysis/perfetto_trace.hpp"

namespace rpl::stages::analysis {
namespace {

using nlohmann::json;

/// Everything a trace-event viewer needs, as a list of violations (empty: valid). Complete events
/// need name, pid, tid, numeric ts and dur >= 0; metadata events a known name and args; flow
/// events an id, and each flow start one finish with a later or equal ts; a flow event's ts must
/// fall inside a complete event on its pid/tid (that is how the format binds arrows to slices).
std::vector<std::string> trace_event_violations(const json& doc) {
  std::vector<std::string> out;
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array())
    return {"no traceEvents array"};
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> slices;
  for (const auto& e : doc["traceEvents"]) {
    if (!e.contains("ph") || !e["ph"].is_string()) {
      out.push_back("event without ph: " + e.dump());
      continue;
    }
    const std::string ph = e["ph"];
    if (!e.contains("pid") || !e["pid"].is_number_integer())
      out.push_back("event without integer pid: " + e.dump());
    if (ph == "X") {
      for (const char* key : {"name", "tid", "ts", "dur"})
        if (!e.contains(key))
          out.push_back(std::string("X event without ") + key + ": " + e.dump());
      if (e.contains("dur") && (!e["dur"].is_number() || e["dur"].get<double>() < 0))
        out.push_back("X event with a negative dur: " + e.dump());
      if (e.contains("ts") && e.contains("dur") && e.contains("tid"))
        slices[{e["pid"], e["tid"]}].push_back(
            {e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()});
    } else if (ph == "M") {
      static const std::set<std::string> names = {"process_name", "thread_name",
                                                  "process_sort_index", "thread_sort_index"};
      if (!e.contains("name") || !names.count(e["name"].get<std::string>()) || !e.contains("args"))
        out.push_back("bad metadata event: " + e.dump());
    } else if (ph != "s" && ph != "f") {
      out.push_back("unexpected phase " + ph);
    }
  }
  std::map<int, double> starts, finishes;
  for (const auto& e : doc["traceEvents"]) {
    const std::string ph = e.value("ph", "");
    if (ph != "s" && ph != "f")
      continue;
    if (!e.contains("id") || !e.contains("ts") || !e.contains("tid")) {
      out.push_back("flow event without id/ts/tid: " + e.dump());
      continue;
    }
    const int id = e["id"];
    const double ts = e["ts"];
    auto& target = ph == "s" ? starts : finishes;
    if (target.count(id))
      out.push_back("flow id used twice: " + std::to_string(id));
    target[id] = ts;
    if (ph == "f" && e.value("bp", "") != "e")
      out.push_back("flow finish not bound to its enclosing slice (bp e): " + e.dump());
    bool enclosed = false;
    for (const auto& [begin, end] : slices[{e["pid"], e["tid"]}])
      enclosed = enclosed || (begin <= ts && ts <= end);
    if (!enclosed)
      out.push_back("flow event outside every slice of its track: " + e.dump());
  }
  for (const auto& [id, ts] : starts) {
    if (!finishes.count(id))
      out.push_back("flow " + std::to_string(id) + " starts but never finishes");
    else if (finishes[id] < ts)
      out.push_back("flow " + std::to_string(id) + " finishes before it starts");
  }
  for (const auto& [id, ts] : finishes)
    if (!starts.count(id))
      out.push_back("flow " + std::to_string(id) + " finishes without a start");
  return out;
}

timeline_op op(std::string name,
               std::string stream,
               std::int64_t start,
               std::int64_t end,
               bool critical = false) {
  timeline_op o;
  o.name = std::move(name);
  o.device = "GPU 0 (sm_90)";
  o.stream = std::move(stream);
  o.start_ns = start;
  o.end_ns = end;
  o.critical = critical;
  return o;
}

TEST(stages_perfetto_trace, two_streams_a_wait_and_the_critical_path_make_a_valid_trace) {
  // Stream 1: produce [1000, 4000) ns, then tail [4000, 4500). Stream 2: consume waits for produce:
  // [4200, 9200). Critical: produce -> consume.
  std::vector<timeline_op> ops = {op("produce", "Stream 1", 1000, 4000, true),
                                  op("tail", "Stream 1", 4000, 4500),
                                  op("consume", "Stream 2", 4200, 9200, true)};
  ops[1].slack_ns = 4700; // could end at 9200 instead of 4500
  const json doc = perfetto_trace(ops, {{0, 2, "event_wait"}});
  EXPECT_EQ(trace_event_violations(doc), std::vector<std::string>{});

  std::vector<json> slices, flows;
  std::map<std::pair<int, int>, std::string> thread_names;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "X")
      slices.push_back(e);
    if (e["ph"] == "s" || e["ph"] == "f")
      flows.push_back(e);
    if (e["ph"] == "M" && e["name"] == "thread_name")
      thread_names[{e["pid"], e["tid"]}] = e["args"]["name"];
  }
  // 3 slices + 2 copies on the critical-path track.
  ASSERT_EQ(slices.size(), 5u);
  EXPECT_EQ(thread_names.at({1, 0}), "critical path");
  EXPECT_EQ(thread_names.at({1, 1}), "Stream 1");
  EXPECT_EQ(thread_names.at({1, 2}), "Stream 2");
  // produce: ts 0 us (the origin is the earliest start, 1000 ns), dur 3 us; critical.
  EXPECT_EQ(slices[0]["name"], "produce");
  EXPECT_DOUBLE_EQ(slices[0]["ts"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(slices[0]["dur"].get<double>(), 3.0);
  EXPECT_EQ(slices[0]["cat"], "kernel,critical_path");
  EXPECT_EQ(slices[0]["args"]["critical"], 1);
  EXPECT_EQ(slices[1]["tid"], 0); // its copy on the critical-path track
  // tail: ts (4000 - 1000) / 1000 = 3 us, slack 4.7 us, not critical.
  EXPECT_EQ(slices[2]["name"], "tail");
  EXPECT_DOUBLE_EQ(slices[2]["ts"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(slices[2]["args"]["slack_us"].get<double>(), 4.7);
  EXPECT_EQ(slices[2]["args"]["critical"], 0);
  // The arrow leaves produce 1 ns before its end (3999 ns -> 2.999 us) and enters consume at
  // its start (4200 ns -> 3.2 us).
  ASSERT_EQ(flows.size(), 2u);
  EXPECT_DOUBLE_EQ(flows[0]["ts"].get<double>(), 2.999);
  EXPECT_EQ(flows[0]["tid"], 1);
  EXPECT_DOUBLE_EQ(flows[1]["ts"].get<double>(), 3.2);
  EXPECT_EQ(flows[1]["tid"], 2);
  EXPECT_EQ(doc["otherData"]["origin_ns"], 1000);
}

TEST(stages_perfetto_trace, devices_are_processes_and_the_same_input_gives_the_same_trace) {
  std::vector<timeline_op> ops = {op("a", "Stream 1", 0, 10), op("b", "Stream 1", 10, 20)};
  ops[1].device = "GPU 1 (sm_90)";
  const json doc = perfetto_trace(ops, {});
  EXPECT_EQ(trace_event_violations(doc), std::vector<std::string>{});
  std::set<int> pids;
  for (const auto& e : doc["traceEvents"])
    if (e["ph"] == "X")
      pids.insert(e["pid"].get<int>());
  EXPECT_EQ(pids, (std::set<int>{1, 2}));
  EXPECT_EQ(perfetto_trace(ops, {}).dump(), doc.dump());
}

TEST(stages_perfetto_trace, a_flow_that_cannot_be_drawn_is_counted_not_written) {
  // Out of range, onto itself, and a wait that ends (at 5 ns) before its source ends (at 50 ns).
  std::vector<timeline_op> ops = {op("late", "Stream 1", 0, 50), op("early", "Stream 2", 0, 5)};
  const json doc = perfetto_trace(ops, {{0, 7, "x"}, {1, 1, "x"}, {0, 1, "x"}});
  EXPECT_EQ(trace_event_violations(doc), std::vector<std::string>{});
  EXPECT_EQ(doc["otherData"]["skipped_flows"], 3);
  for (const auto& e : doc["traceEvents"])
    EXPECT_NE(e["ph"], "s");
}

TEST(stages_perfetto_trace, the_validator_rejects_what_a_viewer_cannot_draw) {
  // The checks above must be able to fail: a dangling flow and a slice without dur.
  const json bad = {{"traceEvents",
                     {{{"ph", "X"}, {"name", "k"}, {"pid", 1}, {"tid", 1}, {"ts", 0.0}},
                      {{"ph", "s"}, {"id", 1}, {"pid", 1}, {"tid", 1}, {"ts", 5.0}}}}};
  const auto violations = trace_event_violations(bad);
  EXPECT_EQ(violations.size(), 3u) << ::testing::PrintToString(violations);
  EXPECT_EQ(trace_event_violations(json::object()),
            std::vector<std::string>{"no traceEvents array"});
}

TEST(stages_perfetto_trace, an_empty_timeline_is_an_empty_valid_trace) {
  const json doc = perfetto_trace({}, {});
  EXPECT_EQ(trace_event_violations(doc), std::vector<std::string>{});
  EXPECT_TRUE(doc["traceEvents"].empty());
}

} // namespace
} // namespace rpl::stages::analysis
