#include <map>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "stages/trace/rocpd_reader.hpp"
#include "stages/trace/rocpd_schema.hpp"
#include "support/rocpd_fixtures.hpp"
#include "support/test_support.hpp"

namespace rpl::stages::rocpd {
namespace {

using rpl::testing::sqlite_db;
using rpl::testing::temp_dir;

constexpr const char* guid_a = "0197abcd-1234-7abc-8def-0123456789ab";
constexpr const char* guid_b = "0197abcd-5678-7abc-8def-ba9876543210";

/// Expects `open` to throw a rocpd_error naming `file` and carrying a fix; returns the message.
std::string refusal(const std::vector<std::filesystem::path>& paths, const std::string& file) {
  try {
    (void)reader::open(paths);
  } catch (const rocpd_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(file), std::string::npos) << message;
    EXPECT_NE(message.find("fix"), std::string::npos) << message;
    return message;
  }
  ADD_FAILURE() << "expected a rocpd_error for " << file;
  return {};
}

TEST(stages_rocpd_reader, reads_dispatches_and_info_tables) {
  temp_dir dir;
  rpl::testing::write_process_trace(dir / "t.db", 4242, {"gemm", "softmax"}, 6, 1, 1000, guid_a);
  const reader r = reader::open({dir / "t.db"});
  ASSERT_EQ(r.paths().size(), 1u);
  EXPECT_EQ(r.databases()[0].schema_version, "3");
  EXPECT_EQ(r.databases()[0].uuids,
            (std::vector<std::string>{"_0197abcd_1234_7abc_8def_0123456789ab"}));
  EXPECT_EQ(r.dispatch_count(), 6u);

  sqlite_db db(dir / "t.db");
  const auto expected =
      db.rows("SELECT start, \"end\", kernel_id, agent_id, queue_id, stream_id, dispatch_id, "
              "grid_size_x FROM rocpd_kernel_dispatch ORDER BY id");
  std::vector<dispatch_row> rows;
  std::vector<std::string> names;
  r.for_each_dispatch([&](const dispatch_row& row) {
    rows.push_back(row);
    names.emplace_back(row.kernel_name);
  });
  ASSERT_EQ(rows.size(), 6u);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(std::to_string(rows[i].start_ns), expected[i][0]);
    EXPECT_EQ(std::to_string(rows[i].end_ns), expected[i][1]);
    EXPECT_EQ(std::to_string(rows[i].kernel_id), expected[i][2]);
    EXPECT_EQ(std::to_string(rows[i].agent_id), expected[i][3]);
    EXPECT_EQ(std::to_string(rows[i].queue_id), expected[i][4]);
    EXPECT_EQ(std::to_string(rows[i].stream_id), expected[i][5]);
    EXPECT_EQ(std::to_string(rows[i].dispatch_id), expected[i][6]);
    EXPECT_EQ(std::to_string(rows[i].grid[0]), expected[i][7]);
    EXPECT_EQ(rows[i].workgroup[0], 256u);
    EXPECT_EQ(rows[i].grid[1], 1u);
    EXPECT_EQ(rows[i].pid, 4242);
    EXPECT_EQ(rows[i].tid, 4243);
    EXPECT_EQ(rows[i].database, 0u);
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{"gemm", "softmax", "gemm", "softmax", "gemm", "softmax"}));

  const auto agents = r.agents();
  ASSERT_EQ(agents.size(), 3u);
  EXPECT_EQ(agents[1].id, 1);
  EXPECT_EQ(agents[1].type, "GPU");
  EXPECT_EQ(agents[1].name, "gfx90a");
  EXPECT_EQ(agents[1].product_name, "AMD Instinct MI250X");
  EXPECT_EQ(agents[1].logical_index, 1);
  EXPECT_EQ(agents[1].extdata.at("cu_count"), 110);
  EXPECT_EQ(agents[0].type, "CPU");

  const auto symbols = r.kernel_symbols();
  ASSERT_EQ(symbols.size(), 2u);
  EXPECT_EQ(symbols[0].display_name, "gemm");
  EXPECT_EQ(symbols[0].kernel_name, "_Z4gemmPfi");
  EXPECT_EQ(symbols[0].sgpr_count, 32);
  EXPECT_EQ(symbols[0].arch_vgpr_count, 64);
  EXPECT_EQ(symbols[0].accum_vgpr_count, 4);
  EXPECT_EQ(symbols[0].group_segment_size, 4096);
  EXPECT_EQ(symbols[0].kernarg_segment_size, 24);

  const auto queues = r.queues();
  ASSERT_EQ(queues.size(), 3u);
  EXPECT_EQ(queues[0].name, "Default Queue");
  EXPECT_EQ(queues[2].id, 0x20);
  EXPECT_EQ(queues[2].name, "Queue 2");
  const auto streams = r.streams();
  ASSERT_EQ(streams.size(), 3u);
  EXPECT_EQ(streams[1].name, "Stream 1");
  const auto processes = r.processes();
  ASSERT_EQ(processes.size(), 1u);
  EXPECT_EQ(processes[0].pid, 4242);
  EXPECT_EQ(processes[0].hostname, "testhost");
}

TEST(stages_rocpd_reader, a_directory_means_every_db_inside_recursively) {
  temp_dir dir;
  const auto trace = rpl::testing::write_two_process_trace(dir.path());
  rpl::testing::write_file(dir / "notes.txt", "ignored");
  const reader r = reader::open({dir.path()});
  ASSERT_EQ(r.paths().size(), 2u);
  EXPECT_EQ(r.paths()[0], trace.first);
  EXPECT_EQ(r.paths()[1], trace.second);
  EXPECT_EQ(r.dispatch_count(), trace.first_dispatches + trace.second_dispatches);
  std::map<std::size_t, std::size_t> per_database;
  std::map<std::int64_t, std::size_t> per_pid;
  r.for_each_dispatch([&](const dispatch_row& row) {
    ++per_database[row.database];
    ++per_pid[row.pid];
  });
  EXPECT_EQ(per_database[0], trace.first_dispatches);
  EXPECT_EQ(per_database[1], trace.second_dispatches);
  EXPECT_EQ(per_pid[100], trace.first_dispatches);
  EXPECT_EQ(per_pid[200], trace.second_dispatches);
  EXPECT_EQ(r.agents().size(), 6u);
  EXPECT_EQ(r.queues().size(), 6u);
}

TEST(stages_rocpd_reader, zero_dispatches_is_not_an_error) {
  temp_dir dir;
  rpl::testing::write_process_trace(dir / "t.db", 1, {"gemm"}, 0, 1);
  const reader r = reader::open({dir / "t.db"});
  EXPECT_EQ(r.dispatch_count(), 0u);
  std::size_t calls = 0;
  r.for_each_dispatch([&](const dispatch_row&) { ++calls; });
  EXPECT_EQ(calls, 0u);
}

/// Rebuilds the dispatch table of `file` the way schema 3.0.2 lays it out (graph columns inserted
/// before region_name_id) plus a column of a future version, with the columns in another order.
void make_variant(const std::filesystem::path& file, const std::string& suffix) {
  sqlite_db db(file);
  const std::string table = "rocpd_kernel_dispatch" + suffix;
  const std::string columns =
      "id, guid, nid, pid, tid, agent_id, kernel_id, dispatch_id, queue_id, stream_id, start, "
      "\"end\", "
      "private_segment_size, group_segment_size, workgroup_size_x, workgroup_size_y, "
      "workgroup_size_z, "
      "grid_size_x, grid_size_y, grid_size_z, region_name_id, event_id, extdata";
  db.exec("CREATE TEMP TABLE saved AS SELECT * FROM " + table);
  db.exec("DROP TABLE " + table);
  db.exec(
      "CREATE TABLE " + table +
      " (id INTEGER PRIMARY KEY, guid TEXT NOT NULL, future_column TEXT DEFAULT 'x', nid INTEGER, "
      "pid INTEGER, tid INTEGER, agent_id INTEGER, kernel_id INTEGER, dispatch_id INTEGER, "
      "stream_id INTEGER, queue_id INTEGER, \"end\" BIGINT, start BIGINT, private_segment_size "
      "INTEGER, "
      "group_segment_size INTEGER, grid_size_z INTEGER, grid_size_y INTEGER, grid_size_x INTEGER, "
      "workgroup_size_z INTEGER, workgroup_size_y INTEGER, workgroup_size_x INTEGER, "
      "graph_exec_id INTEGER NOT NULL DEFAULT 0, graph_node_id INTEGER NOT NULL DEFAULT 0, "
      "region_name_id INTEGER, event_id INTEGER, extdata TEXT)");
  db.exec("INSERT INTO " + table + " (" + columns + ") SELECT " + columns + " FROM saved");
  db.exec("UPDATE rocpd_metadata" + suffix + " SET value = '3.0.2' WHERE tag = 'schema_version'");
  // 3.0.1 lets agents be NICs; a new column in the middle of the agent table must not matter.
  db.exec("ALTER TABLE rocpd_info_agent" + suffix + " ADD COLUMN nic_speed INTEGER");
}

TEST(stages_rocpd_reader, reads_3_0_x_variants_with_added_and_reordered_columns) {
  temp_dir dir;
  rpl::testing::write_process_trace(dir / "t.db", 9, {"gemm", "softmax", "norm"}, 30, 5, 1000,
                                    guid_a);
  const reader before = reader::open({dir / "t.db"});
  std::vector<std::tuple<std::int64_t, std::int64_t, std::string, std::int64_t, std::uint32_t>>
      expected;
  before.for_each_dispatch([&](const dispatch_row& row) {
    expected.emplace_back(row.start_ns, row.end_ns, std::string(row.kernel_name), row.queue_id,
                          row.grid[0]);
  });
  make_variant(dir / "t.db", "_0197abcd_1234_7abc_8def_0123456789ab");

  const reader after = reader::open({dir / "t.db"});
  EXPECT_EQ(after.databases()[0].schema_version, "3.0.2");
  std::vector<std::tuple<std::int64_t, std::int64_t, std::string, std::int64_t, std::uint32_t>>
      actual;
  after.for_each_dispatch([&](const dispatch_row& row) {
    actual.emplace_back(row.start_ns, row.end_ns, std::string(row.kernel_name), row.queue_id,
                        row.grid[0]);
  });
  EXPECT_EQ(actual, expected);
  EXPECT_EQ(after.agents().size(), 3u);
}

/// Copies every table of `from` (written with suffix `from_suffix`) into `into` under that suffix,
/// so `into` holds two uuid suffixes as a merged file does; its unsuffixed views keep pointing at
/// its own suffix.
void merge_suffix(const std::filesystem::path& into,
                  const std::filesystem::path& from,
                  const std::string& from_suffix,
                  const std::string& from_guid) {
  sqlite_db db(into);
  db.exec("ATTACH DATABASE '" + from.string() + "' AS other");
  db.exec("BEGIN");
  db.exec(rocpd_tables_sql(from_suffix, from_guid));
  for (const std::string_view table : table_names) {
    const std::string name = std::string(table) + from_suffix;
    db.exec("INSERT INTO main." + name + " SELECT * FROM other." + name);
  }
  db.exec("COMMIT");
  db.exec("DETACH DATABASE other");
}

TEST(stages_rocpd_reader, unions_the_tables_of_several_uuid_suffixes_in_one_file) {
  temp_dir dir;
  rpl::testing::write_process_trace(dir / "a.db", 100, {"gemm", "softmax"}, 10, 1, 1000, guid_a);
  rpl::testing::write_process_trace(dir / "b.db", 200, {"reduce", "gemm", "scan"}, 7, 2, 5000,
                                    guid_b);
  merge_suffix(dir / "a.db", dir / "b.db", "_0197abcd_5678_7abc_8def_ba9876543210", guid_b);

  const reader r = reader::open({dir / "a.db"});
  EXPECT_EQ(r.databases()[0].uuids.size(), 2u);
  EXPECT_EQ(r.dispatch_count(), 17u);
  std::map<std::pair<std::int64_t, std::string>, std::size_t> counts;
  r.for_each_dispatch([&](const dispatch_row& row) {
    ++counts[{row.pid, std::string(row.kernel_name)}];
  });
  // Kernel ids 1 and 2 mean different kernels in the two suffixes; each joins its own symbols.
  const std::map<std::pair<std::int64_t, std::string>, std::size_t> expected{{{100, "gemm"}, 5},
                                                                             {{100, "softmax"}, 5},
                                                                             {{200, "reduce"}, 3},
                                                                             {{200, "gemm"}, 2},
                                                                             {{200, "scan"}, 2}};
  EXPECT_EQ(counts, expected);
  EXPECT_EQ(r.kernel_symbols().size(), 5u);
  EXPECT_EQ(r.queues().size(), 6u);
  EXPECT_EQ(r.processes().size(), 2u);
}

constexpr const char* suffix_a = "_0197abcd_1234_7abc_8def_0123456789ab";

TEST(stages_rocpd_reader, accounting_fields_read_as_with_all_fields) {
  temp_dir dir;
  rpl::testing::write_process_trace(dir / "t.db", 9, {"gemm", "softmax", "norm"}, 30, 5, 1000,
                                    guid_a);
  make_variant(dir / "t.db", suffix_a); // columns reordered: selected by name either way
  using fields = std::tuple<std::int64_t, std::int64_t, std::string, std::int64_t, std::int64_t,
                            std::int64_t, std::int64_t, std::int64_t, std::size_t>;
  auto accounting = [](const dispatch_row& row) {
    return fields{row.start_ns,  row.end_ns,   std::string(row.kernel_name),
                  row.kernel_id, row.agent_id, row.queue_id,
                  row.stream_id, row.pid,      row.database};
  };
  const reader r = reader::open({dir / "t.db"});
  std::vector<fields> expected;
  r.for_each_dispatch([&](const dispatch_row& row) { expected.push_back(accounting(row)); });
  std::vector<fields> actual;
  r.for_each_dispatch(
      [&](const dispatch_row& row) {
        actual.push_back(accounting(row));
        EXPECT_EQ(row.dispatch_id, 0); // not read
        EXPECT_EQ(row.grid[0], 0u);
      },
      dispatch_fields::accounting);
  EXPECT_EQ(actual.size(), 30u);
  EXPECT_EQ(actual, expected);
}

/// The kernel name of every dispatch the reader gives, in order, against SQLite's own LEFT JOIN of
/// the dispatch and symbol tables of `suffix`: the reader names dispatches without that join where
/// it can, and must agree with it everywhere (a missing name reads "<unknown kernel ID>").
void expect_names_match_the_join(const std::filesystem::path& file, const std::string& suffix) {
  std::vector<std::string> expected;
  {
    sqlite_db db(file);
    for (const auto& row :
         db.rows("SELECT CAST(K.kernel_id AS INTEGER), COALESCE(NULLIF(S.display_name, ''), "
                 "S.kernel_name) IS NULL, COALESCE(NULLIF(S.display_name, ''), S.kernel_name) FROM "
                 "rocpd_kernel_dispatch" +
                 suffix + " K LEFT JOIN rocpd_info_kernel_symbol" + suffix +
                 " S ON S.id = K.kernel_id AND S.guid = K.guid")) {
      expected.push_back(row[1] == "1" ? "<unknown kernel " + row[0] + ">" : row[2]);
    }
  }
  std::vector<std::string> actual;
  reader::open({file}).for_each_dispatch(
      [&](const dispatch_row& row) { actual.emplace_back(row.kernel_name); });
  EXPECT_EQ(actual, expected);
}

TEST(stages_rocpd_reader, names_dispatches_as_the_symbol_join_does) {
  temp_dir dir;
  rpl::testing::write_process_trace(dir / "t.db", 7, {"gemm", "softmax", "norm", "scan"}, 24, 3,
                                    1000, guid_a);
  {
    sqlite_db db(dir / "t.db");
    const std::string symbols = std::string("rocpd_info_kernel_symbol") + suffix_a;
    const std::string dispatches = std::string("rocpd_kernel_dispatch") + suffix_a;
    db.exec("UPDATE " + symbols + " SET display_name = '' WHERE id = 2"); // the kernel name then
    db.exec("UPDATE " + symbols + " SET display_name = NULL, kernel_name = NULL WHERE id = 3");
    db.exec("UPDATE " + dispatches + " SET kernel_id = 99 WHERE id = 1");          // no symbol
    db.exec("UPDATE " + dispatches + " SET guid = '" + guid_b + "' WHERE id = 2"); // other guid
    db.exec("UPDATE " + dispatches + " SET kernel_id = 1.5 WHERE id = 5");         // a real
    db.exec("UPDATE " + dispatches + " SET kernel_id = 'one' WHERE id = 6");       // text
    db.exec("UPDATE " + dispatches + " SET guid = upper(guid) WHERE id = 8");      // case differs
  }
  expect_names_match_the_join(dir / "t.db", suffix_a);
  std::map<std::string, std::size_t> counts;
  reader::open({dir / "t.db"}).for_each_dispatch([&](const dispatch_row& row) {
    ++counts[std::string(row.kernel_name)];
  });
  EXPECT_EQ(counts.count("<unknown kernel 99>"), 1u);
  EXPECT_EQ(counts.count("_Z7softmaxPfi"), 1u);
  EXPECT_EQ(counts.count("softmax"), 0u);
}

TEST(stages_rocpd_reader, symbol_tables_with_several_guids_or_repeated_ids_read_as_the_join) {
  temp_dir dir;
  rpl::testing::write_process_trace(dir / "t.db", 7, {"gemm", "softmax"}, 10, 3, 1000, guid_a);
  const std::string symbols = std::string("rocpd_info_kernel_symbol") + suffix_a;
  const std::string dispatches = std::string("rocpd_kernel_dispatch") + suffix_a;
  {
    // Two guids in one symbol table (ids are per guid): dispatch 3 belongs to the second.
    sqlite_db db(dir / "t.db");
    db.exec("INSERT INTO " + symbols +
            " (id, guid, nid, pid, code_object_id, kernel_name, display_name) SELECT 5, '" +
            guid_b + "', nid, pid, code_object_id, 'other', 'other' FROM " + symbols +
            " WHERE id = 1");
    db.exec("UPDATE " + dispatches + " SET guid = '" + guid_b + "', kernel_id = 5 WHERE id = 3");
  }
  expect_names_match_the_join(dir / "t.db", suffix_a);
  {
    // A symbol table without its primary key can repeat an id: the join yields such a dispatch
    // once per symbol row, and so does the reader.
    sqlite_db db(dir / "t.db");
    db.exec("DELETE FROM " + symbols + " WHERE id = 5");
    db.exec("CREATE TEMP TABLE saved AS SELECT * FROM " + symbols);
    db.exec("DROP TABLE " + symbols);
    db.exec("CREATE TABLE " + symbols + " AS SELECT * FROM saved");
    db.exec("INSERT INTO " + symbols + " SELECT * FROM saved WHERE id = 2");
  }
  expect_names_match_the_join(dir / "t.db", suffix_a);
  std::size_t rows = 0;
  reader::open({dir / "t.db"}).for_each_dispatch([&](const dispatch_row&) { ++rows; });
  EXPECT_EQ(rows, 15u); // 5 of the 10 dispatches run kernel 2
}

TEST(stages_rocpd_reader, refuses_a_file_that_is_not_sqlite) {
  temp_dir dir;
  std::string bytes(4096, '\0');
  std::mt19937 random(7);
  for (char& c : bytes) {
    c = static_cast<char>(random() & 0xff);
  }
  rpl::testing::write_file(dir / "random.db", bytes);
  const std::string message = refusal({dir / "random.db"}, "random.db");
  EXPECT_NE(message.find("not an SQLite database"), std::string::npos) << message;
}

TEST(stages_rocpd_reader, refuses_a_legacy_rpd_file) {
  temp_dir dir;
  {
    sqlite_db db(dir / "legacy.rpd");
    // The rocmProfileData layout: same rocpd_ prefix, different schema.
    db.exec(
        "CREATE TABLE rocpd_string (id INTEGER PRIMARY KEY, string TEXT);"
        "CREATE TABLE rocpd_op (id INTEGER PRIMARY KEY, gpuId INTEGER, queueId INTEGER, sequenceId "
        "INTEGER, completionSignal TEXT, start INTEGER, end INTEGER, description_id INTEGER, "
        "opType_id INTEGER);"
        "CREATE TABLE rocpd_api (id INTEGER PRIMARY KEY, pid INTEGER, tid INTEGER, start INTEGER, "
        "end INTEGER, apiName_id INTEGER, args_id INTEGER);"
        "CREATE TABLE rocpd_api_ops (id INTEGER PRIMARY KEY, api_id INTEGER, op_id INTEGER);"
        "CREATE TABLE rocpd_kernelapi (api_ptr_id INTEGER PRIMARY KEY, stream TEXT, gridX INTEGER, "
        "gridY INTEGER, gridZ INTEGER, workgroupX INTEGER, workgroupY INTEGER, workgroupZ INTEGER, "
        "groupSegmentSize INTEGER, privateSegmentSize INTEGER, kernelArgAddress TEXT, aquireFence "
        "TEXT, releaseFence TEXT, codeObject_id INTEGER, kernelName_id INTEGER);"
        "CREATE TABLE rocpd_copyapi (api_ptr_id INTEGER PRIMARY KEY, stream TEXT, size INTEGER);"
        "CREATE TABLE rocpd_metadata (id INTEGER PRIMARY KEY, tag TEXT, value TEXT);"
        "INSERT INTO rocpd_metadata (tag, value) VALUES ('schema_version', '2');"
        "CREATE VIEW api AS SELECT * FROM rocpd_api;");
  }
  const std::string message = refusal({dir / "legacy.rpd"}, "legacy.rpd");
  EXPECT_NE(message.find("legacy RPD"), std::string::npos) << message;
  EXPECT_NE(message.find("rocprofv3 --output-format rocpd"), std::string::npos) << message;
}

TEST(stages_rocpd_reader, refuses_sqlite_that_is_not_rocpd) {
  temp_dir dir;
  {
    sqlite_db db(dir / "other.db");
    db.exec("CREATE TABLE results (id INTEGER PRIMARY KEY, value REAL)");
  }
  const std::string message = refusal({dir / "other.db"}, "other.db");
  EXPECT_NE(message.find("not a rocpd database"), std::string::npos) << message;
}

TEST(stages_rocpd_reader, refuses_an_unsupported_schema_version) {
  temp_dir dir;
  rpl::testing::write_process_trace(dir / "v2.db", 1, {"gemm"}, 2, 1, 1000, guid_a);
  {
    sqlite_db db(dir / "v2.db");
    db.exec(
        "UPDATE rocpd_metadata_0197abcd_1234_7abc_8def_0123456789ab SET value = '2' WHERE tag = "
        "'schema_version'");
  }
  const std::string message = refusal({dir / "v2.db"}, "v2.db");
  EXPECT_NE(message.find("schema_version 2"), std::string::npos) << message;
}

TEST(stages_rocpd_reader, refuses_an_empty_directory_and_a_missing_file) {
  temp_dir dir;
  std::filesystem::create_directories(dir / "empty" / "host");
  refusal({dir / "empty"}, "empty");
  const std::string message = refusal({dir / "missing.db"}, "missing.db");
  EXPECT_NE(message.find("no such file"), std::string::npos) << message;
  EXPECT_THROW((void)reader::open({}), rocpd_error);
}

TEST(stages_rocpd_reader, one_bad_file_in_a_directory_is_named) {
  temp_dir dir;
  rpl::testing::write_process_trace(dir / "a" / "1_results.db", 1, {"gemm"}, 2, 1);
  rpl::testing::write_file(dir / "a" / "2_results.db", std::string(100, 'x'));
  refusal({dir / "a"}, "2_results.db");
}

} // namespace
} // namespace rpl::stages::rocpd
