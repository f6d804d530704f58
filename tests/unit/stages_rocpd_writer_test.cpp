#include <regex>
#include <string>

#include <gtest/gtest.h>

#include "stages/trace/rocpd_schema.hpp"
#include "stages/trace/rocpd_writer.hpp"
#include "support/rocpd_fixtures.hpp"
#include "support/test_support.hpp"

namespace rpl::stages::rocpd {
namespace {

using rpl::testing::sqlite_db;
using rpl::testing::temp_dir;

constexpr const char* guid = "0197abcd-1234-7abc-8def-0123456789ab";
constexpr const char* suffix = "_0197abcd_1234_7abc_8def_0123456789ab";

TEST(stages_rocpd_writer, creates_suffixed_tables_views_and_metadata) {
  temp_dir dir;
  { writer w(dir / "t.db", guid); }
  sqlite_db db(dir / "t.db");
  for (const std::string_view table : table_names) {
    const std::string name = std::string(table) + suffix;
    EXPECT_EQ(db.scalar("SELECT type FROM sqlite_master WHERE name = '" + name + "'"), "table")
        << name;
    EXPECT_EQ(db.scalar("SELECT type FROM sqlite_master WHERE name = '" + std::string(table) + "'"),
              "view")
        << table;
  }
  for (const std::string_view view : analysis_view_names) {
    EXPECT_EQ(db.scalar("SELECT type FROM sqlite_master WHERE name = '" + std::string(view) + "'"),
              "view")
        << view;
  }
  EXPECT_EQ(
      db.integer("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name LIKE 'rocpd_%'"),
      20);
  EXPECT_EQ(db.scalar("SELECT value FROM rocpd_metadata WHERE tag = 'schema_version'"), "3");
  EXPECT_EQ(db.scalar("SELECT value FROM rocpd_metadata WHERE tag = 'uuid'"), suffix);
  EXPECT_EQ(db.scalar("SELECT value FROM rocpd_metadata WHERE tag = 'guid'"), guid);
  // rocprofv3 always writes the empty string row.
  EXPECT_EQ(db.integer("SELECT COUNT(*) FROM rocpd_string WHERE string = ''"), 1);
  // Every view compiles: selecting from each must not fail on an empty database.
  for (const std::string_view view : analysis_view_names) {
    EXPECT_NO_THROW(db.rows("SELECT * FROM " + std::string(view))) << view;
  }
}

TEST(stages_rocpd_writer, schema_runs_without_double_quoted_strings) {
  // The upstream templates rely on SQLite's DQS quirk; ours must run where it is disabled.
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &raw), SQLITE_OK);
  sqlite3_db_config(raw, SQLITE_DBCONFIG_DQS_DML, 0, nullptr);
  sqlite3_db_config(raw, SQLITE_DBCONFIG_DQS_DDL, 0, nullptr);
  char* message = nullptr;
  const int rc =
      sqlite3_exec(raw, rocpd_schema_sql(suffix, guid).c_str(), nullptr, nullptr, &message);
  EXPECT_EQ(rc, SQLITE_OK) << (message != nullptr ? message : "");
  sqlite3_free(message);
  sqlite3_close(raw);
}

TEST(stages_rocpd_writer, generates_uuid_v7_like_ids) {
  const std::string a = writer::generate_uuid();
  const std::string b = writer::generate_uuid();
  EXPECT_NE(a, b);
  EXPECT_TRUE(std::regex_match(
      a, std::regex("[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")))
      << a;
  temp_dir dir;
  writer w(dir / "t.db");
  EXPECT_EQ(w.uuid_suffix(), "_" + std::regex_replace(w.guid(), std::regex("-"), "_"));
}

TEST(stages_rocpd_writer, accepts_the_suffix_form_of_the_uuid) {
  temp_dir dir;
  writer w(dir / "t.db", suffix);
  EXPECT_EQ(w.guid(), guid);
  EXPECT_EQ(w.uuid_suffix(), suffix);
}

TEST(stages_rocpd_writer, uses_native_ids_like_rocprofv3) {
  temp_dir dir;
  rpl::testing::write_process_trace(dir / "t.db", 4242, {"gemm", "softmax"}, 6, 1, 1000, guid);
  sqlite_db db(dir / "t.db");
  EXPECT_EQ(db.scalar("SELECT id || ',' || pid FROM rocpd_info_process"), "4242,4242");
  EXPECT_EQ(db.scalar("SELECT id || ',' || tid || ',' || pid FROM rocpd_info_thread"),
            "4243,4243,4242");
  EXPECT_EQ(
      db.scalar("SELECT group_concat(id || ':' || name || ':' || type, ' ') FROM rocpd_info_agent"),
      "0:AMD EPYC 7763:CPU 1:gfx90a:GPU 2:gfx90a:GPU");
  EXPECT_EQ(db.scalar("SELECT group_concat(id || ':' || name, ',') FROM rocpd_info_queue"),
            "0:Default Queue,16:Queue 1,32:Queue 2");
  EXPECT_EQ(db.scalar("SELECT group_concat(id || ':' || name, ',') FROM rocpd_info_stream"),
            "0:Default Stream,256:Stream 1,512:Stream 2");
  EXPECT_EQ(
      db.scalar("SELECT group_concat(id || '=' || dispatch_id, ',') FROM rocpd_kernel_dispatch"),
      "1=1,2=2,3=3,4=4,5=5,6=6");
  EXPECT_EQ(db.scalar("SELECT COUNT(*) FROM rocpd_kernel_dispatch WHERE guid = '" +
                      std::string(guid) + "'"),
            "6");
  EXPECT_EQ(db.scalar("SELECT user_name FROM rocpd_info_agent WHERE id = 1"),
            "AMD Instinct MI250X");
  EXPECT_EQ(
      db.integer("SELECT JSON_EXTRACT(extdata, '$.cu_count') FROM rocpd_info_agent WHERE id = 2"),
      110);
  // The dispatch's event is KERNEL_DISPATCH with the launching call's correlation id as stack_id.
  EXPECT_EQ(
      db.scalar(
          "SELECT S.string || ':' || E.stack_id FROM rocpd_kernel_dispatch K JOIN rocpd_event E ON "
          "E.id = K.event_id JOIN rocpd_string S ON S.id = E.category_id WHERE K.id = 3"),
      "KERNEL_DISPATCH:3");
}

TEST(stages_rocpd_writer, analysis_views_return_the_rows) {
  temp_dir dir;
  rpl::testing::write_process_trace(dir / "t.db", 4242, {"gemm", "softmax"}, 6, 1, 1000, guid);
  sqlite_db db(dir / "t.db");
  EXPECT_EQ(db.integer("SELECT COUNT(*) FROM kernels"), 6);
  const auto row =
      db.rows("SELECT name, category, region, queue, stream, agent_abs_index, agent_type, "
              "duration = \"end\" - start, workgroup_x, lds_size, static_lds_size, pid, tid "
              "FROM kernels WHERE id = 2");
  ASSERT_EQ(row.size(), 1u);
  EXPECT_EQ(row[0],
            (std::vector<std::string>{"softmax", "KERNEL_DISPATCH", "", "Queue 1", "Default Stream",
                                      "2", "GPU", "1", "256", "4096", "4096", "4242", "4243"}));
  EXPECT_EQ(db.integer("SELECT COUNT(*) FROM regions WHERE name = 'hipLaunchKernel' AND category = "
                       "'HIP_RUNTIME_API_EXT'"),
            6);
  EXPECT_EQ(db.integer("SELECT COUNT(*) FROM regions_and_samples"), 6);
  EXPECT_EQ(db.integer("SELECT COUNT(*) FROM memory_copies"), 3);
  EXPECT_EQ(db.scalar("SELECT src_device || '>' || dst_device FROM memory_copies WHERE id = 3"),
            "gfx90a>AMD EPYC 7763");
  EXPECT_EQ(db.integer("SELECT COUNT(*) FROM top_kernels"), 2);
  EXPECT_DOUBLE_EQ(db.real("SELECT SUM(percentage) FROM top_kernels"), 100.0);
  EXPECT_EQ(db.integer("SELECT SUM(calls) FROM kernel_summary"), 6);
  EXPECT_EQ(db.integer("SELECT COUNT(*) FROM kernel_symbols"), 2);
  EXPECT_EQ(db.integer("SELECT COUNT(*) FROM processes"), 1);
  EXPECT_EQ(db.integer("SELECT COUNT(*) FROM threads"), 1);
  EXPECT_EQ(db.integer("SELECT COUNT(*) FROM code_objects"), 1);
  EXPECT_EQ(db.integer("SELECT COUNT(*) FROM pmc_events"), 8);
  // counters_collection sums the dimension instances of one counter per dispatch: 100 + 28.
  EXPECT_EQ(db.scalar("SELECT group_concat(value, ',') FROM counters_collection"),
            "128.0,128.0,128.0,128.0");
  EXPECT_EQ(db.integer("SELECT COUNT(*) FROM busy"),
            3); // two GPUs with kernels, the CPU receiving a copy
}

TEST(stages_rocpd_writer, replaces_an_existing_file) {
  temp_dir dir;
  rpl::testing::write_file(dir / "t.db", "not a database");
  { writer w(dir / "t.db"); }
  sqlite_db db(dir / "t.db");
  EXPECT_EQ(db.scalar("SELECT value FROM rocpd_metadata WHERE tag = 'schema_version'"), "3");
}

TEST(stages_rocpd_writer, interns_strings) {
  temp_dir dir;
  writer w(dir / "t.db");
  const std::int64_t a = w.add_string("hipMemcpy");
  EXPECT_EQ(w.add_string("hipMemcpy"), a);
  EXPECT_NE(w.add_string("hipMalloc"), a);
}

TEST(stages_rocpd_writer, reports_a_duplicate_id_with_the_file_and_a_fix) {
  temp_dir dir;
  writer w(dir / "t.db");
  rpl::testing::add_process_header(w, 7, 8);
  try {
    w.add_queue(7, "again", 0); // the default queue already has id 0
    FAIL() << "expected rocpd_error";
  } catch (const rocpd_error& e) {
    EXPECT_NE(std::string(e.what()).find("t.db"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("fix"), std::string::npos) << e.what();
  }
}

TEST(stages_rocpd_writer, refuses_an_unwritable_path) {
  EXPECT_THROW(writer("/nonexistent-dir/x/t.db"), rocpd_error);
}

} // namespace
} // namespace rpl::stages::rocpd
