#include "stages/sqlite/sqlite_statement.hpp"

#include <utility>

namespace rpl::stages::sqlite {
namespace {

/// A fix that fits most failures with this result code; callers that know the context do better.
std::string_view suggested_fix(int code) {
  switch (code & 0xff) { // the primary code of an extended one
  case SQLITE_CONSTRAINT: return "check that each id or key is unique in its table";
  case SQLITE_FULL: return "free disk space and run again";
  case SQLITE_NOTADB:
  case SQLITE_CORRUPT:
    return "the file is not an SQLite database or is damaged; use another file or re-create it";
  case SQLITE_CANTOPEN:
  case SQLITE_PERM:
  case SQLITE_READONLY:
  case SQLITE_AUTH: return "check the path, that its folder exists and its permissions";
  case SQLITE_BUSY:
  case SQLITE_LOCKED: return "another connection holds the database; retry when it is done";
  case SQLITE_ERROR: return "the SQL does not fit this database's schema; check the file's version";
  default: return "see the SQLite message above";
  }
}

std::string describe(const std::string& database,
                     const std::string& action,
                     const std::string& sql,
                     const std::string& message,
                     int code) {
  std::string text = database + ": " + action + ": " + message;
  if (!sql.empty()) {
    text += " [SQL: " + sql + "]";
  }
  return text + "; fix: " + std::string(suggested_fix(code));
}

std::string database_name(sqlite3* db) {
  const char* file = db != nullptr ? sqlite3_db_filename(db, "main") : nullptr;
  return file != nullptr && *file != '\0' ? std::string(file) : std::string("(in-memory database)");
}

} // namespace

sqlite_error::sqlite_error(
    std::string database, std::string action, std::string sql, std::string message, int code)
    : std::runtime_error(describe(database, action, sql, message, code)),
      database_(std::move(database)), action_(std::move(action)), sql_(std::move(sql)),
      message_(std::move(message)), code_(code) {}

connection::connection(const std::filesystem::path& path, int flags) : name_(path.string()) {
  const int rc = sqlite3_open_v2(name_.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    // SQLite allocates a handle even when the open fails; it carries the message, then goes.
    std::string message = db_ != nullptr ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw sqlite_error(name_, "open", {}, std::move(message), rc);
  }
}

connection::~connection() {
  // close_v2: statements finalized later (members destroyed after this) still work until then.
  sqlite3_close_v2(db_);
}

connection::connection(connection&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), name_(std::move(other.name_)) {}

connection& connection::operator=(connection&& other) noexcept {
  if (this != &other) {
    sqlite3_close_v2(db_);
    db_ = std::exchange(other.db_, nullptr);
    name_ = std::move(other.name_);
  }
  return *this;
}

void connection::exec(std::string_view sql) {
  const std::string text(sql);
  char* message = nullptr;
  const int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &message);
  if (rc != SQLITE_OK) {
    std::string why = message != nullptr ? message : error_message();
    sqlite3_free(message);
    throw sqlite_error(name_, "exec", text, std::move(why), rc);
  }
}

statement::statement(const connection& db, std::string_view sql, unsigned prepare_flags) {
  const int rc = sqlite3_prepare_v3(db.handle(), sql.data(), static_cast<int>(sql.size()),
                                    prepare_flags, &stmt_, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt_);
    stmt_ = nullptr;
    throw sqlite_error(db.name(), "prepare", std::string(sql), db.error_message(), rc);
  }
}

statement& statement::operator=(statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    stmt_ = std::exchange(other.stmt_, nullptr);
  }
  return *this;
}

std::string statement::sql() const {
  const char* text = stmt_ != nullptr ? sqlite3_sql(stmt_) : nullptr;
  return text != nullptr ? std::string(text) : std::string();
}

void statement::fail_bind(int rc, int index) const {
  fail(rc, "bind parameter " + std::to_string(index));
}

void statement::fail(int rc, const std::string& action) const {
  sqlite3* db = sqlite3_db_handle(stmt_);
  throw sqlite_error(database_name(db), action, sql(), db != nullptr ? sqlite3_errmsg(db) : "", rc);
}

} // namespace rpl::stages::sqlite
