#include "engine/store/results_store.hpp"

#include <sqlite3.h>

#include <chrono>
#include <ctime>

namespace rpl::engine {

namespace {

constexpr const char* schema_sql = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', '1');
CREATE TABLE IF NOT EXISTS runs(
  run_id TEXT PRIMARY KEY,
  fingerprint TEXT NOT NULL,
  status TEXT NOT NULL,
  started_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  space_file TEXT,
  strategy TEXT,
  seed INTEGER,
  budget INTEGER,
  planned INTEGER,
  settings_json TEXT);
CREATE TABLE IF NOT EXISTS candidates(
  run_id TEXT NOT NULL REFERENCES runs(run_id),
  key TEXT NOT NULL,
  space_index INTEGER NOT NULL,
  params_json TEXT NOT NULL,
  build_argv_json TEXT NOT NULL,
  run_argv_json TEXT NOT NULL,
  status TEXT NOT NULL,
  reason TEXT,
  measure_status TEXT,
  exit_code INTEGER,
  term_signal INTEGER,
  failed_run INTEGER,
  lane TEXT,
  n INTEGER, median_ns REAL, mean_ns REAL, stddev_ns REAL, cv REAL, min_ns REAL, max_ns REAL,
  stability TEXT,
  completed_at TEXT NOT NULL,
  PRIMARY KEY (run_id, key));
CREATE TABLE IF NOT EXISTS artifacts(
  run_id TEXT NOT NULL,
  key TEXT NOT NULL,
  compile_status TEXT NOT NULL,
  hash TEXT,
  size INTEGER,
  exit_code INTEGER,
  term_signal INTEGER,
  compile_ns INTEGER,
  worker_id TEXT,
  error TEXT,
  compiler_output TEXT,
  resources_json TEXT,
  PRIMARY KEY (run_id, key));
CREATE TABLE IF NOT EXISTS measurements(
  run_id TEXT NOT NULL,
  key TEXT NOT NULL,
  sample_index INTEGER NOT NULL,
  duration_ns INTEGER NOT NULL,
  PRIMARY KEY (run_id, key, sample_index));
CREATE TABLE IF NOT EXISTS verdicts(
  run_id TEXT NOT NULL,
  key TEXT NOT NULL,
  verdict TEXT NOT NULL,
  reason TEXT,
  best_key TEXT,
  median_ns REAL,
  relative_change REAL,
  PRIMARY KEY (run_id, key));
)sql";

std::string now_utc() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

/// RAII prepared statement with positional binding.
class statement {
public:
  statement(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) {
      throw store_error(std::string("results store: cannot prepare statement: ") + sqlite3_errmsg(db));
    }
  }
  ~statement() { sqlite3_finalize(stmt_); }
  statement(const statement&) = delete;
  statement& operator=(const statement&) = delete;

  statement& bind(int index, const std::string& value) {
    sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
    return *this;
  }
  statement& bind(int index, std::int64_t value) {
    sqlite3_bind_int64(stmt_, index, value);
    return *this;
  }
  statement& bind(int index, double value) {
    sqlite3_bind_double(stmt_, index, value);
    return *this;
  }
  statement& bind_null(int index) {
    sqlite3_bind_null(stmt_, index);
    return *this;
  }
  /// Returns true while there is a row.
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) {
      return true;
    }
    if (rc != SQLITE_DONE) {
      throw store_error(std::string("results store: ") + sqlite3_errmsg(db_));
    }
    return false;
  }
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  std::string text(int column) const {
    const auto* p = sqlite3_column_text(stmt_, column);
    return p == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(p));
  }
  std::int64_t integer(int column) const { return sqlite3_column_int64(stmt_, column); }
  double real(int column) const { return sqlite3_column_double(stmt_, column); }

private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

nlohmann::json argv_json(const std::vector<std::string>& argv) { return nlohmann::json(argv); }

}  // namespace

results_store::results_store(const std::filesystem::path& path) : path_(path) {
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    const std::string why = db_ != nullptr ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw store_error("--db " + path.string() + ": cannot open: " + why +
                      "; fix: choose a writable path");
  }
  sqlite3_busy_timeout(db_, 5000);
  try {
    exec("PRAGMA journal_mode=WAL");
    exec("PRAGMA synchronous=NORMAL");
    exec(schema_sql);
  } catch (const store_error& error) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw store_error("--db " + path.string() + ": " + error.what() +
                      "; fix: point --db at a rocm-perf results database or a new file");
  }
}

results_store::~results_store() { sqlite3_close(db_); }

void results_store::exec(const char* sql) const {
  char* message = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &message) != SQLITE_OK) {
    std::string why = message != nullptr ? message : "unknown error";
    sqlite3_free(message);
    throw store_error(why);
  }
}

std::optional<run_record> results_store::find_run(const std::string& fingerprint) const {
  statement s(db_,
              "SELECT run_id, fingerprint, status, started_at, space_file, strategy, seed, budget, "
              "planned, settings_json FROM runs WHERE fingerprint = ? ORDER BY rowid DESC LIMIT 1");
  s.bind(1, fingerprint);
  if (!s.step()) {
    return std::nullopt;
  }
  run_record run;
  run.run_id = s.text(0);
  run.fingerprint = s.text(1);
  run.status = s.text(2);
  run.started_at = s.text(3);
  run.space_file = s.text(4);
  run.strategy = s.text(5);
  run.seed = static_cast<std::uint64_t>(s.integer(6));
  run.budget = s.integer(7);
  run.planned = static_cast<std::size_t>(s.integer(8));
  run.settings = nlohmann::json::parse(s.text(9), nullptr, false);
  return run;
}

void results_store::create_run(const run_record& run) {
  statement s(db_,
              "INSERT INTO runs(run_id, fingerprint, status, started_at, updated_at, space_file, "
              "strategy, seed, budget, planned, settings_json) VALUES (?,?,?,?,?,?,?,?,?,?,?)");
  const auto now = now_utc();
  s.bind(1, run.run_id).bind(2, run.fingerprint).bind(3, run.status).bind(4, now).bind(5, now);
  s.bind(6, run.space_file).bind(7, run.strategy).bind(8, static_cast<std::int64_t>(run.seed));
  s.bind(9, run.budget).bind(10, static_cast<std::int64_t>(run.planned)).bind(11, run.settings.dump());
  s.step();
}

void results_store::set_run_status(const std::string& run_id, const std::string& status) {
  statement s(db_, "UPDATE runs SET status = ?, updated_at = ? WHERE run_id = ?");
  s.bind(1, status).bind(2, now_utc()).bind(3, run_id);
  s.step();
}

void results_store::record(const std::string& run_id, const candidate_record& c) {
  exec("BEGIN IMMEDIATE");
  try {
    const bool valid = c.verdict.decision != messages::verdict_kind::invalid;
    {
      statement s(db_,
                  "INSERT OR REPLACE INTO candidates(run_id, key, space_index, params_json, "
                  "build_argv_json, run_argv_json, status, reason, measure_status, exit_code, "
                  "term_signal, failed_run, lane, n, median_ns, mean_ns, stddev_ns, cv, min_ns, "
                  "max_ns, stability, completed_at) "
                  "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
      s.bind(1, run_id).bind(2, c.key).bind(3, static_cast<std::int64_t>(c.space_index));
      s.bind(4, c.params.dump()).bind(5, argv_json(c.build_argv).dump());
      s.bind(6, argv_json(c.run_argv).dump()).bind(7, std::string(valid ? "ok" : "invalid"));
      if (valid) {
        s.bind_null(8);
      } else {
        s.bind(8, c.verdict.reason);
      }
      s.bind(9, std::string(messages::to_string(c.measure.status)));
      s.bind(10, static_cast<std::int64_t>(c.measure.exit_code));
      s.bind(11, static_cast<std::int64_t>(c.measure.term_signal));
      s.bind(12, static_cast<std::int64_t>(c.measure.failed_run)).bind(13, c.measure.lane);
      s.bind(14, static_cast<std::int64_t>(c.stats.n)).bind(15, c.stats.median);
      s.bind(16, c.stats.mean).bind(17, c.stats.stddev).bind(18, c.stats.cv);
      s.bind(19, c.stats.min).bind(20, c.stats.max);
      s.bind(21, std::string(stages::to_string(c.stats.stability))).bind(22, now_utc());
      s.step();
    }
    {
      statement s(db_,
                  "INSERT OR REPLACE INTO artifacts(run_id, key, compile_status, hash, size, "
                  "exit_code, term_signal, compile_ns, worker_id, error, compiler_output, "
                  "resources_json) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)");
      s.bind(1, run_id).bind(2, c.key).bind(3, std::string(messages::to_string(c.compile.status)));
      if (c.artifact_hash.empty()) {
        s.bind_null(4).bind_null(5);
      } else {
        s.bind(4, c.artifact_hash);
        std::error_code ec;
        const auto size = std::filesystem::file_size(c.artifact_path, ec);
        s.bind(5, static_cast<std::int64_t>(ec ? 0 : size));
      }
      s.bind(6, static_cast<std::int64_t>(c.compile.exit_code));
      s.bind(7, static_cast<std::int64_t>(c.compile.term_signal));
      s.bind(8, c.compile.compile_ns).bind(9, c.compile.worker_id).bind(10, c.compile.error);
      s.bind(11, c.compile.output);
      nlohmann::json resources = nlohmann::json::array();
      for (const auto& k : c.compile.resources) {
        resources.push_back({{"name", k.name},
                             {"arch", k.arch},
                             {"registers", k.registers},
                             {"barriers", k.barriers},
                             {"shared_bytes", k.shared_bytes},
                             {"local_bytes", k.local_bytes},
                             {"stack_bytes", k.stack_bytes},
                             {"spill_store_bytes", k.spill_store_bytes},
                             {"spill_load_bytes", k.spill_load_bytes}});
      }
      s.bind(12, resources.dump());
      s.step();
    }
    {
      statement del(db_, "DELETE FROM measurements WHERE run_id = ? AND key = ?");
      del.bind(1, run_id).bind(2, c.key);
      del.step();
      statement s(db_, "INSERT INTO measurements(run_id, key, sample_index, duration_ns) "
                       "VALUES (?,?,?,?)");
      for (std::size_t i = 0; i < c.measure.samples_ns.size(); ++i) {
        s.reset();
        s.bind(1, run_id).bind(2, c.key).bind(3, static_cast<std::int64_t>(i));
        s.bind(4, c.measure.samples_ns[i]);
        s.step();
      }
    }
    {
      statement s(db_, "INSERT OR REPLACE INTO verdicts(run_id, key, verdict, reason, best_key, "
                       "median_ns, relative_change) VALUES (?,?,?,?,?,?,?)");
      s.bind(1, run_id).bind(2, c.key).bind(3, std::string(messages::to_string(c.verdict.decision)));
      s.bind(4, c.verdict.reason).bind(5, c.verdict.best_key).bind(6, c.verdict.median_ns);
      s.bind(7, c.verdict.relative_change);
      s.step();
    }
    {
      statement s(db_, "UPDATE runs SET updated_at = ? WHERE run_id = ?");
      s.bind(1, now_utc()).bind(2, run_id);
      s.step();
    }
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

std::vector<stored_candidate> results_store::candidates(const std::string& run_id) const {
  statement s(db_,
              "SELECT c.key, c.space_index, c.params_json, c.status, c.reason, v.verdict, v.reason, "
              "c.n, c.median_ns, c.mean_ns, c.stddev_ns, c.cv, c.min_ns, c.max_ns, "
              "a.compile_ns, a.compile_status, v.best_key FROM candidates c "
              "LEFT JOIN verdicts v ON v.run_id = c.run_id AND v.key = c.key "
              "LEFT JOIN artifacts a ON a.run_id = c.run_id AND a.key = c.key "
              "WHERE c.run_id = ? ORDER BY c.rowid");
  s.bind(1, run_id);
  std::vector<stored_candidate> out;
  while (s.step()) {
    stored_candidate c;
    c.key = s.text(0);
    c.space_index = static_cast<std::size_t>(s.integer(1));
    c.params = nlohmann::json::parse(s.text(2), nullptr, false);
    c.status = s.text(3);
    c.reason = s.text(4);
    c.verdict = s.text(5);
    c.verdict_reason = s.text(6);
    c.stats.n = static_cast<std::size_t>(s.integer(7));
    c.stats.median = s.real(8);
    c.stats.mean = s.real(9);
    c.stats.stddev = s.real(10);
    c.stats.cv = s.real(11);
    c.stats.min = s.real(12);
    c.stats.max = s.real(13);
    c.stats.stability = stages::classify_cv(c.stats.cv);
    c.compile_ns = s.integer(14);
    c.compile_status = s.text(15);
    c.best_key = s.text(16);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace rpl::engine
