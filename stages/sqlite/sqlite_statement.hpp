#pragma once
/// The one SQLite wrapper of the tree (rocpd reader and writer, results store, tests, benches): a
/// connection and a prepared statement, each closed or finalized by its destructor, with errors
/// thrown as sqlite_error (naming the database, the SQL and SQLite's message). Column access and
/// binding are inline because the rocpd reader and writer call them once per cell of millions of
/// rows.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <sqlite3.h>

namespace rpl::stages::sqlite {

/// A failed SQLite call. what() is "<database>: <action>: <SQLite message> [SQL: <sql>]; fix: ...",
/// the fix guessed from the result code; callers that know better catch it and rethrow their own
/// error with sqlite_message() inside.
class sqlite_error : public std::runtime_error {
public:
  sqlite_error(
      std::string database, std::string action, std::string sql, std::string message, int code);
  const std::string& database() const { return database_; }
  const std::string& action() const { return action_; } ///< "prepare", "step", "open", ...
  const std::string& sql() const { return sql_; }       ///< empty where no SQL was involved
  const std::string& sqlite_message() const { return message_; } ///< sqlite3_errmsg at the failure
  int code() const { return code_; }                             ///< the SQLite result code

private:
  std::string database_;
  std::string action_;
  std::string sql_;
  std::string message_;
  int code_ = 0;
};

/// An open database (sqlite3*), closed by the destructor. Move-only.
class connection {
public:
  connection() = default;
  /// Opens `path` with sqlite3_open_v2 `flags` (SQLITE_OPEN_READONLY, SQLITE_OPEN_READWRITE |
  /// SQLITE_OPEN_CREATE, ... with SQLITE_OPEN_NOMUTEX where one thread owns it). Throws
  /// sqlite_error.
  connection(const std::filesystem::path& path, int flags);
  ~connection();
  connection(connection&& other) noexcept;
  connection& operator=(connection&& other) noexcept;
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  /// Runs one or more statements without results (DDL, PRAGMA, BEGIN/COMMIT). Throws sqlite_error.
  void exec(std::string_view sql);
  /// Waits up to `timeout` for a lock another connection holds instead of failing at once with
  /// SQLITE_BUSY (sqlite3_busy_timeout); for databases that other processes write.
  void busy_timeout(std::chrono::milliseconds timeout) {
    sqlite3_busy_timeout(db_, static_cast<int>(timeout.count()));
  }
  std::int64_t last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }
  std::string error_message() const { return db_ != nullptr ? sqlite3_errmsg(db_) : "no database"; }
  /// The path it was opened with, for messages.
  const std::string& name() const { return name_; }
  sqlite3* handle() const { return db_; }
  explicit operator bool() const { return db_ != nullptr; }

private:
  sqlite3* db_ = nullptr;
  std::string name_;
};

/// A prepared statement (sqlite3_stmt*), finalized by the destructor. Move-only. Bind indices
/// start at 1 and column indices at 0, as in SQLite.
class statement {
public:
  statement() = default;
  /// Prepares `sql` (one statement). `prepare_flags`: sqlite3_prepare_v3 flags, e.g.
  /// SQLITE_PREPARE_PERSISTENT for a statement run many times. Throws sqlite_error.
  statement(const connection& db, std::string_view sql, unsigned prepare_flags = 0);
  ~statement() { sqlite3_finalize(stmt_); }
  statement(statement&& other) noexcept : stmt_(other.stmt_) { other.stmt_ = nullptr; }
  statement& operator=(statement&& other) noexcept;
  statement(const statement&) = delete;
  statement& operator=(const statement&) = delete;

  statement& bind_int64(int index, std::int64_t value) {
    check_bind(sqlite3_bind_int64(stmt_, index, value), index);
    return *this;
  }
  statement& bind_double(int index, double value) {
    check_bind(sqlite3_bind_double(stmt_, index, value), index);
    return *this;
  }
  /// Binds a copy of `text`.
  statement& bind_text(int index, std::string_view text) {
    check_bind(sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()),
                                 SQLITE_TRANSIENT),
               index);
    return *this;
  }
  /// Binds `text` without copying it: it must stay alive until the next step() or reset().
  statement& bind_static_text(int index, std::string_view text) {
    check_bind(
        sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_STATIC),
        index);
    return *this;
  }
  statement& bind_null(int index) {
    check_bind(sqlite3_bind_null(stmt_, index), index);
    return *this;
  }

  /// Runs to the next row: true while there is one, false when done. Throws sqlite_error.
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) {
      return true;
    }
    if (rc != SQLITE_DONE) [[unlikely]] {
      fail(rc, "step");
    }
    return false;
  }
  /// Makes the statement runnable again; bindings stay (an error of the last step was thrown
  /// there).
  void reset() { sqlite3_reset(stmt_); }
  void clear_bindings() { sqlite3_clear_bindings(stmt_); }

  int column_count() const { return sqlite3_column_count(stmt_); }
  bool column_is_null(int column) const {
    return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
  }
  std::int64_t column_int64(int column) const { return sqlite3_column_int64(stmt_, column); }
  double column_double(int column) const { return sqlite3_column_double(stmt_, column); }
  /// The text of a column (empty for NULL), valid until the next step(), reset() or column call
  /// that converts this column.
  std::string_view column_text_view(int column) const {
    return column_nullable_text(column).value_or(std::string_view());
  }
  /// The text of a column, or nullopt for NULL (one call into SQLite, unlike column_is_null and
  /// column_text_view together); valid as column_text_view.
  std::optional<std::string_view> column_nullable_text(int column) const {
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
    if (text == nullptr) {
      return std::nullopt;
    }
    return std::string_view(text, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column)));
  }
  std::string column_text(int column) const { return std::string(column_text_view(column)); }

  /// The SQL it was prepared from.
  std::string sql() const;
  sqlite3_stmt* handle() const { return stmt_; }
  explicit operator bool() const { return stmt_ != nullptr; }

private:
  void check_bind(int rc, int index) const {
    if (rc != SQLITE_OK) [[unlikely]] {
      fail_bind(rc, index); // out of line: the hot path stays a compare and a branch
    }
  }
  [[noreturn]] void fail_bind(int rc, int index) const;
  [[noreturn]] void fail(int rc, const std::string& action) const;

  sqlite3_stmt* stmt_ = nullptr;
};

} // namespace rpl::stages::sqlite
