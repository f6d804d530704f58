// Whether a rocpd database holds its process's whole trace (stages/trace/trace_completeness.hpp):
// the metadata rows the CUPTI tracer writes, read back through rocpd_writer and rocpd_reader, and
// the sentences profile prints for a partial one.

#include <map>
#include <string>

#include <gtest/gtest.h>

#include "stages/trace/rocpd_reader.hpp"
#include "stages/trace/rocpd_writer.hpp"
#include "stages/trace/trace_completeness.hpp"
#include "support/test_support.hpp"

namespace rpl::stages::rocpd {
namespace {

using rpl::testing::temp_dir;

/// Writes a database marked with `completeness` and reads its metadata back.
std::map<std::string, std::string> written_metadata(const temp_dir& dir,
                                                    const trace_completeness& completeness) {
  const auto path = dir / "1_results.db";
  {
    writer w(path);
    for (const auto& [tag, value] : completeness_metadata(completeness)) {
      w.add_metadata(tag, value);
    }
    node_info node;
    node.hostname = "host";
    w.add_node(node);
    process_info process;
    process.pid = 1;
    w.add_process(process);
    w.commit();
  }
  return reader::open({path}).databases().at(0).metadata;
}

TEST(stages_trace_completeness, round_trips_through_the_database_metadata) {
  temp_dir dir;
  const trace_completeness signalled{
      .end = trace_end::signal, .signal = "SIGABRT", .checkpoint_period_ms = 500};
  const auto metadata = written_metadata(dir, signalled);
  // The schema's own rows are still there, beside ours.
  EXPECT_EQ(metadata.at("schema_version"), "3");
  EXPECT_EQ(metadata.at("rpl_trace_state"), "signal");
  EXPECT_EQ(metadata.at("rpl_trace_signal"), "SIGABRT");
  EXPECT_EQ(metadata.at("rpl_checkpoint_period_ms"), "500");
  const trace_completeness back = read_completeness(metadata);
  EXPECT_EQ(back.end, trace_end::signal);
  EXPECT_EQ(back.signal, "SIGABRT");
  EXPECT_EQ(back.checkpoint_period_ms, 500);
  EXPECT_TRUE(back.partial());
}

TEST(stages_trace_completeness, a_file_without_the_mark_is_unmarked_and_not_partial) {
  temp_dir dir;
  const auto metadata = written_metadata(dir, {});
  EXPECT_EQ(metadata.count("rpl_trace_state"), 0u);
  const trace_completeness back = read_completeness(metadata);
  EXPECT_EQ(back.end, trace_end::unmarked);
  EXPECT_FALSE(back.partial());
  EXPECT_EQ(describe_partial(back), "");
}

TEST(stages_trace_completeness, complete_is_not_partial_and_an_unknown_state_is) {
  EXPECT_FALSE(read_completeness({{"rpl_trace_state", "complete"}}).partial());
  EXPECT_EQ(describe_partial(read_completeness({{"rpl_trace_state", "complete"}})), "");
  const trace_completeness odd = read_completeness({{"rpl_trace_state", "half-written"}});
  EXPECT_EQ(odd.end, trace_end::checkpoint);
  EXPECT_TRUE(odd.partial());
  EXPECT_FALSE(odd.checkpoint_period_ms.has_value());
  EXPECT_FALSE(
      read_completeness({{"rpl_trace_state", "checkpoint"}, {"rpl_checkpoint_period_ms", "5x"}})
          .checkpoint_period_ms.has_value());
}

TEST(stages_trace_completeness, says_what_a_partial_database_may_miss) {
  EXPECT_EQ(describe_partial({.end = trace_end::checkpoint, .checkpoint_period_ms = 250}),
            "the tracer's last checkpoint: the process ended without a final write (killed by "
            "SIGKILL, _exit(), or a crash the tracer could not catch), so kernels that ran within "
            "the last 250 ms (the checkpoint period) before it ended may be missing");
  EXPECT_EQ(describe_partial({.end = trace_end::checkpoint}),
            "the tracer's last checkpoint: the process ended without a final write (killed by "
            "SIGKILL, _exit(), or a crash the tracer could not catch), so kernels that ran since "
            "its last checkpoint may be missing");
  EXPECT_EQ(describe_partial({.end = trace_end::signal, .signal = "SIGTERM"}),
            "written when the process received SIGTERM, before it ended: kernels still running "
            "then are missing");
  EXPECT_EQ(completeness_metadata({.end = trace_end::complete}),
            (std::vector<std::pair<std::string, std::string>>{{"rpl_trace_state", "complete"}}));
}

} // namespace
} // namespace rpl::stages::rocpd
