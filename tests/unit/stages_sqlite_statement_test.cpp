#include <chrono>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "stages/sqlite/sqlite_statement.hpp"
#include "support/test_support.hpp"

namespace rpl::stages::sqlite {
namespace {

using rpl::testing::temp_dir;

constexpr int create = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;

connection with_table(const temp_dir& dir) {
  connection db(dir / "t.db", create);
  db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER, x REAL, s TEXT)");
  return db;
}

TEST(stages_sqlite_statement, binds_steps_and_reads_every_column_type) {
  temp_dir dir;
  connection db = with_table(dir);
  statement insert(db, "INSERT INTO t (n, x, s) VALUES (?, ?, ?)");
  std::string text = "first";
  insert.bind_int64(1, -7).bind_double(2, 2.5).bind_text(3, text);
  text = "changed"; // bind_text copied the value
  EXPECT_FALSE(insert.step());
  EXPECT_EQ(db.last_insert_rowid(), 1);
  insert.reset();
  insert.bind_int64(1, 1ll << 40).bind_null(2).bind_static_text(3, text);
  EXPECT_FALSE(insert.step());
  EXPECT_EQ(db.last_insert_rowid(), 2);

  statement select(db, "SELECT id, n, x, s FROM t ORDER BY id");
  EXPECT_EQ(select.column_count(), 4);
  ASSERT_TRUE(select.step());
  EXPECT_EQ(select.column_int64(1), -7);
  EXPECT_DOUBLE_EQ(select.column_double(2), 2.5);
  EXPECT_EQ(select.column_text(3), "first");
  EXPECT_FALSE(select.column_is_null(2));
  ASSERT_TRUE(select.step());
  EXPECT_EQ(select.column_int64(1), 1ll << 40);
  EXPECT_TRUE(select.column_is_null(2));
  EXPECT_EQ(select.column_text_view(2), ""); // NULL reads as empty text
  EXPECT_EQ(select.column_text_view(3), "changed");
  EXPECT_FALSE(select.step());
  EXPECT_EQ(select.sql(), "SELECT id, n, x, s FROM t ORDER BY id");
}

TEST(stages_sqlite_statement, reset_runs_a_statement_again_with_its_bindings) {
  temp_dir dir;
  connection db = with_table(dir);
  statement insert(db, "INSERT INTO t (n) VALUES (?)", SQLITE_PREPARE_PERSISTENT);
  insert.bind_int64(1, 5);
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(insert.step());
    insert.reset();
  }
  insert.clear_bindings();
  EXPECT_FALSE(insert.step());
  statement count(db, "SELECT COUNT(*), SUM(n), COUNT(n) FROM t");
  ASSERT_TRUE(count.step());
  EXPECT_EQ(count.column_int64(0), 4);
  EXPECT_EQ(count.column_int64(1), 15);
  EXPECT_EQ(count.column_int64(2), 3); // the cleared binding inserted NULL
}

TEST(stages_sqlite_statement, a_bad_statement_names_the_file_the_sql_and_sqlites_message) {
  temp_dir dir;
  connection db = with_table(dir);
  try {
    statement bad(db, "SELECT * FROM missing_table");
    FAIL() << "prepared a query over a missing table";
  } catch (const sqlite_error& error) {
    EXPECT_EQ(error.action(), "prepare");
    EXPECT_EQ(error.sql(), "SELECT * FROM missing_table");
    EXPECT_EQ(error.sqlite_message(), "no such table: missing_table");
    EXPECT_EQ(error.code(), SQLITE_ERROR);
    EXPECT_EQ(error.database(), (dir / "t.db").string());
    const std::string what = error.what();
    EXPECT_NE(what.find((dir / "t.db").string() + ": prepare: no such table: missing_table"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("[SQL: SELECT * FROM missing_table]"), std::string::npos) << what;
    EXPECT_NE(what.find("; fix: "), std::string::npos) << what;
  }
}

TEST(stages_sqlite_statement, a_failed_step_says_which_constraint_and_how_to_fix_it) {
  temp_dir dir;
  connection db = with_table(dir);
  statement insert(db, "INSERT INTO t (id) VALUES (?)");
  insert.bind_int64(1, 1);
  EXPECT_FALSE(insert.step());
  insert.reset();
  try {
    insert.step();
    FAIL() << "inserted a duplicate id";
  } catch (const sqlite_error& error) {
    EXPECT_EQ(error.action(), "step");
    EXPECT_EQ(error.code() & 0xff, SQLITE_CONSTRAINT);
    EXPECT_EQ(error.sqlite_message(), "UNIQUE constraint failed: t.id");
    EXPECT_EQ(error.database(), (dir / "t.db").string());
    EXPECT_NE(std::string(error.what()).find("fix: check that each id or key is unique"),
              std::string::npos)
        << error.what();
  }
}

TEST(stages_sqlite_statement, refuses_a_binding_index_the_statement_lacks) {
  temp_dir dir;
  connection db = with_table(dir);
  statement insert(db, "INSERT INTO t (n) VALUES (?)");
  try {
    insert.bind_int64(2, 1);
    FAIL() << "bound parameter 2 of a statement with one";
  } catch (const sqlite_error& error) {
    EXPECT_EQ(error.action(), "bind parameter 2");
    EXPECT_EQ(error.code(), SQLITE_RANGE);
  }
}

TEST(stages_sqlite_statement, opening_a_missing_file_read_only_fails_naming_it) {
  temp_dir dir;
  try {
    connection db(dir / "absent.db", SQLITE_OPEN_READONLY);
    FAIL() << "opened a missing file";
  } catch (const sqlite_error& error) {
    EXPECT_EQ(error.action(), "open");
    EXPECT_EQ(error.database(), (dir / "absent.db").string());
    EXPECT_EQ(error.code(), SQLITE_CANTOPEN);
    EXPECT_TRUE(error.sql().empty());
    EXPECT_NE(std::string(error.what()).find("fix: check the path"), std::string::npos)
        << error.what();
  }
}

TEST(stages_sqlite_statement, exec_failures_carry_the_sql) {
  temp_dir dir;
  connection db = with_table(dir);
  try {
    db.exec("CREATE TABLE t (id INTEGER)");
    FAIL() << "created a table twice";
  } catch (const sqlite_error& error) {
    EXPECT_EQ(error.action(), "exec");
    EXPECT_EQ(error.sql(), "CREATE TABLE t (id INTEGER)");
    EXPECT_EQ(error.sqlite_message(), "table t already exists");
  }
}

TEST(stages_sqlite_statement, a_busy_timeout_waits_for_a_lock_before_failing) {
  temp_dir dir;
  connection holder = with_table(dir);
  holder.exec("BEGIN EXCLUSIVE");
  connection waiter(dir / "t.db", SQLITE_OPEN_READWRITE);
  waiter.busy_timeout(std::chrono::milliseconds(50));
  const auto started = std::chrono::steady_clock::now();
  try {
    waiter.exec("INSERT INTO t (n) VALUES (1)");
    FAIL() << "wrote through an exclusive lock";
  } catch (const sqlite_error& error) {
    EXPECT_EQ(error.code() & 0xff, SQLITE_BUSY);
  }
  EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(50));
  holder.exec("COMMIT");
  waiter.exec("INSERT INTO t (n) VALUES (1)");
}

TEST(stages_sqlite_statement, moving_hands_over_the_handles) {
  temp_dir dir;
  connection db = with_table(dir);
  connection moved_db = std::move(db);
  EXPECT_FALSE(static_cast<bool>(db));
  ASSERT_TRUE(static_cast<bool>(moved_db));
  EXPECT_EQ(moved_db.name(), (dir / "t.db").string());
  statement first(moved_db, "SELECT 42");
  statement second = std::move(first);
  EXPECT_FALSE(static_cast<bool>(first));
  ASSERT_TRUE(second.step());
  EXPECT_EQ(second.column_int64(0), 42);
  first = std::move(second);
  EXPECT_EQ(first.column_int64(0), 42);
}

} // namespace
} // namespace rpl::stages::sqlite
