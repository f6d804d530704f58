// A table's rows read from the file's B-tree pages against the same rows through SQL: every
// integer width, reals, NULLs, a tree several levels deep; and the files and rows only SQLite
// reads right refused.
#include <fstream>

#include <gtest/gtest.h>

#include "stages/sqlite/table_pages.hpp"
#include "support/test_support.hpp"

namespace rpl::stages::sqlite {
namespace {

using rpl::testing::temp_dir;

/// 20,000 rows of (id, text, a, b, c): `a` an integer of every serial width and sign, `b` a real
/// or NULL, `c` 0 or 1 (stored without bytes).
void write_numbers(const std::filesystem::path& path) {
  connection db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, label TEXT, a INTEGER, b REAL, c INTEGER)");
  db.exec("BEGIN");
  statement insert(db, "INSERT INTO t (id, label, a, b, c) VALUES (?1, ?2, ?3, ?4, ?5)");
  for (std::int64_t i = 1; i <= 20000; ++i) {
    insert.reset();
    const std::int64_t a = (i % 2 == 0 ? 1 : -1) * (std::int64_t{1} << (i % 63));
    insert.bind_int64(1, i * 3).bind_text(2, "row " + std::to_string(i)).bind_int64(3, a);
    if (i % 7 == 0)
      insert.bind_null(4);
    else
      insert.bind_double(4, static_cast<double>(i) / 8 - 1000);
    insert.bind_int64(5, i % 2);
    insert.step();
  }
  db.exec("COMMIT");
}

TEST(stages_table_pages, rows_from_the_pages_equal_sqls) {
  temp_dir dir;
  write_numbers(dir / "n.db");
  connection db(dir / "n.db", SQLITE_OPEN_READONLY);
  db.exec("BEGIN");
  const auto pages = table_pages::open(db, dir / "n.db", "t");
  ASSERT_TRUE(pages);
  ASSERT_GT(pages->leaves(), 50u);
  EXPECT_EQ(pages->first_rowid(0), 3);
  statement rows(db, "SELECT id, a, b, c FROM t");
  // From the middle of the table: the rows from that leaf's first on.
  const std::size_t middle = pages->leaves() / 2;
  table_pages::cursor from_middle(*pages, middle, {4, 2});
  ASSERT_TRUE(from_middle.next());
  EXPECT_EQ(from_middle.rowid(), pages->first_rowid(middle));
  table_pages::cursor cursor(*pages, 0, {2, 3, 4});
  std::size_t n = 0;
  while (rows.step()) {
    ASSERT_TRUE(cursor.next()) << n;
    ++n;
    EXPECT_EQ(cursor.rowid(), rows.column_int64(0));
    ASSERT_EQ(cursor.column(0).kind, table_pages::value::type::integer);
    EXPECT_EQ(cursor.column(0).integer, rows.column_int64(1));
    // A REAL column keeps an integral value as an integer (SQLite's file format does).
    const auto& b = cursor.column(1);
    if (rows.column_is_null(2)) {
      EXPECT_EQ(b.kind, table_pages::value::type::null);
    } else if (b.kind == table_pages::value::type::integer) {
      EXPECT_EQ(static_cast<double>(b.integer), rows.column_double(2));
    } else {
      ASSERT_EQ(b.kind, table_pages::value::type::real);
      EXPECT_EQ(b.real, rows.column_double(2));
    }
    EXPECT_EQ(cursor.column(2).integer, rows.column_int64(3));
  }
  EXPECT_FALSE(cursor.next());
  EXPECT_EQ(n, 20000u);
}

TEST(stages_table_pages, what_only_sqlite_reads_right_is_refused) {
  temp_dir dir;
  write_numbers(dir / "n.db");
  {
    connection db(dir / "n.db", SQLITE_OPEN_READWRITE);
    // A row spilling to overflow pages; text in a column asked; a table without rowids.
    db.exec("UPDATE t SET label = '" + std::string(10000, 'x') + "' WHERE id = 30000");
    db.exec("UPDATE t SET a = 'many' WHERE id = 60");
    db.exec("CREATE TABLE w (k INTEGER PRIMARY KEY, v REAL) WITHOUT ROWID");
    db.exec("INSERT INTO w VALUES (1, 2.0)");
  }
  connection db(dir / "n.db", SQLITE_OPEN_READONLY);
  db.exec("BEGIN");
  EXPECT_FALSE(table_pages::open(db, dir / "n.db", "w"));
  EXPECT_FALSE(table_pages::open(db, dir / "n.db", "no_such_table"));
  const auto pages = table_pages::open(db, dir / "n.db", "t");
  ASSERT_TRUE(pages);
  auto read_all = [&](std::vector<int> columns) {
    table_pages::cursor cursor(*pages, 0, std::move(columns));
    while (cursor.next()) {
    }
  };
  EXPECT_THROW(read_all({2}), table_pages::unreadable); // the text in a
  EXPECT_THROW(read_all({4}), table_pages::unreadable); // the row of 10,000 bytes
  // A write-ahead log beside the file may hold what the file does not.
  { std::ofstream(dir / "n.db-wal") << "frames"; }
  EXPECT_FALSE(table_pages::open(db, dir / "n.db", "t"));
}

} // namespace
} // namespace rpl::stages::sqlite
