#include "engine/optimize/optimize_journal.hpp"

#include <chrono>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "engine/store/utc_time.hpp"
#include "stages/search/candidate_key.hpp"
#include "stages/sqlite/sqlite_statement.hpp"

namespace rpl::engine {

namespace sql = stages::sqlite;

namespace {

constexpr const char* schema = R"sql(
CREATE TABLE IF NOT EXISTS optimize_targets (
  kernel TEXT PRIMARY KEY, source TEXT, status TEXT, original_ns REAL, best_ns REAL,
  summary TEXT, accepted_diff TEXT, updated_at TEXT);
CREATE TABLE IF NOT EXISTS optimize_attempts (
  id INTEGER PRIMARY KEY, kernel TEXT NOT NULL, sequence INTEGER, iteration INTEGER,
  proposer TEXT, proposal_id TEXT, title TEXT, rationale TEXT, diff TEXT, diff_hash TEXT,
  repair_round INTEGER, stage TEXT, verdict TEXT, guard TEXT, detail TEXT, compile_ns INTEGER,
  validation TEXT, measurement TEXT, speedup REAL, created_at TEXT, worker TEXT);
CREATE INDEX IF NOT EXISTS optimize_attempts_kernel ON optimize_attempts(kernel, diff_hash);
)sql";

attempt_record read_attempt(const sql::statement& row) {
  attempt_record a;
  a.kernel = row.column_text(0);
  a.sequence = static_cast<std::uint32_t>(row.column_int64(1));
  a.iteration = static_cast<std::uint32_t>(row.column_int64(2));
  a.proposer = row.column_text(3);
  a.proposal_id = row.column_text(4);
  a.title = row.column_text(5);
  a.rationale = row.column_text(6);
  a.diff = row.column_text(7);
  a.diff_hash = row.column_text(8);
  a.repair_round = static_cast<std::uint32_t>(row.column_int64(9));
  // A name this version does not know reads as none: such an attempt is judged again.
  a.stage = parse_stage(row.column_text(10)).value_or(attempt_stage::none);
  a.verdict = parse_verdict(row.column_text(11)).value_or(attempt_verdict::none);
  a.guard = parse_finding(row.column_text(12)).value_or(attempt_finding::none);
  a.detail = row.column_text(13);
  a.compile_ns = row.column_int64(14);
  a.validation = row.column_text(15);
  a.measurement = row.column_text(16);
  a.speedup = row.column_double(17);
  a.worker = row.column_text(18);
  return a;
}

constexpr const char* attempt_columns =
    "kernel, sequence, iteration, proposer, proposal_id, title, rationale, diff, diff_hash, "
    "repair_round, stage, verdict, guard, detail, compile_ns, validation, measurement, speedup, "
    "worker";

/// A journal written before optimize_attempts had `worker` gets the column (NULL in old rows),
/// so that --resume reads it as it reads a new one.
void add_worker_column(sql::connection& db) {
  sql::statement has(db, "SELECT COUNT(*) FROM pragma_table_info('optimize_attempts') WHERE "
                         "name = 'worker'");
  if (has.step() && has.column_int64(0) == 0) {
    db.exec("ALTER TABLE optimize_attempts ADD COLUMN worker TEXT");
  }
}

} // namespace

nlohmann::json json_or_text(const std::string& text) {
  if (text.empty()) {
    return nullptr;
  }
  auto parsed = nlohmann::json::parse(text, nullptr, false);
  return parsed.is_discarded() ? nlohmann::json(text) : parsed;
}

std::string text_hash(std::string_view text) {
  return stages::content_hash(text);
}

struct optimize_journal::impl {
  mutable std::mutex mutex;
  sql::connection db;
  std::ofstream jsonl;
  std::filesystem::path jsonl_path;
};

optimize_journal::optimize_journal(const std::filesystem::path& dir) : impl_(new impl) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    throw std::runtime_error("--out " + dir.string() + ": cannot create the folder: " +
                             ec.message() + "; fix: name a writable folder");
  }
  impl_->db = sql::connection(dir / "optimize.sqlite", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  impl_->db.busy_timeout(std::chrono::milliseconds(5000));
  impl_->db.exec(schema);
  add_worker_column(impl_->db);
  impl_->jsonl_path = dir / "attempts.jsonl";
  impl_->jsonl.open(impl_->jsonl_path, std::ios::app);
  if (!impl_->jsonl) {
    throw std::runtime_error(impl_->jsonl_path.string() +
                             ": cannot open for appending; fix: make --out writable");
  }
}

optimize_journal::~optimize_journal() = default;

void optimize_journal::record(const attempt_record& a) {
  std::lock_guard lock(impl_->mutex);
  sql::statement insert(impl_->db, std::string("INSERT INTO optimize_attempts (") +
                                       attempt_columns +
                                       ", created_at) VALUES "
                                       "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  insert.bind_text(1, a.kernel)
      .bind_int64(2, a.sequence)
      .bind_int64(3, a.iteration)
      .bind_text(4, a.proposer)
      .bind_text(5, a.proposal_id)
      .bind_text(6, a.title)
      .bind_text(7, a.rationale)
      .bind_text(8, a.diff)
      .bind_text(9, a.diff_hash)
      .bind_int64(10, a.repair_round)
      .bind_text(11, std::string(to_string(a.stage)))
      .bind_text(12, std::string(to_string(a.verdict)))
      .bind_text(13, std::string(to_string(a.guard)))
      .bind_text(14, a.detail)
      .bind_int64(15, a.compile_ns)
      .bind_text(16, a.validation)
      .bind_text(17, a.measurement)
      .bind_double(18, a.speedup)
      .bind_text(19, a.worker)
      .bind_text(20, utc_timestamp());
  insert.step();
  nlohmann::json line = {{"kernel", a.kernel},
                         {"sequence", a.sequence},
                         {"iteration", a.iteration},
                         {"proposer", a.proposer},
                         {"worker", a.worker},
                         {"proposal_id", a.proposal_id},
                         {"title", a.title},
                         {"rationale", a.rationale},
                         {"diff_hash", a.diff_hash},
                         {"diff", a.diff},
                         {"repair_round", a.repair_round},
                         {"stage", to_string(a.stage)},
                         {"verdict", to_string(a.verdict)},
                         {"guard", to_string(a.guard)},
                         {"detail", a.detail},
                         {"compile_ns", a.compile_ns},
                         {"validation", json_or_text(a.validation)},
                         {"measurement", json_or_text(a.measurement)},
                         {"speedup", a.speedup}};
  impl_->jsonl << line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  impl_->jsonl.flush();
}

void optimize_journal::record_target(const std::string& kernel,
                                     const std::string& source,
                                     const std::string& status,
                                     double original_ns,
                                     double best_ns,
                                     const std::string& summary,
                                     const std::string& accepted_diff) {
  std::lock_guard lock(impl_->mutex);
  sql::statement upsert(impl_->db,
                        "INSERT OR REPLACE INTO optimize_targets VALUES (?,?,?,?,?,?,?,?)");
  upsert.bind_text(1, kernel)
      .bind_text(2, source)
      .bind_text(3, status)
      .bind_double(4, original_ns)
      .bind_double(5, best_ns)
      .bind_text(6, summary)
      .bind_text(7, accepted_diff)
      .bind_text(8, utc_timestamp());
  upsert.step();
}

std::optional<optimize_journal::target_row>
optimize_journal::earlier_target(const std::string& kernel) const {
  std::lock_guard lock(impl_->mutex);
  sql::statement row(impl_->db, "SELECT status, original_ns, best_ns, summary, accepted_diff FROM "
                                "optimize_targets WHERE kernel = ?");
  row.bind_text(1, kernel);
  if (!row.step()) {
    return std::nullopt;
  }
  return target_row{row.column_text(0), row.column_double(1), row.column_double(2),
                    row.column_text(3), row.column_text(4)};
}

std::map<std::string, attempt_record>
optimize_journal::earlier_attempts(const std::string& kernel) const {
  std::lock_guard lock(impl_->mutex);
  std::map<std::string, attempt_record> out;
  sql::statement rows(impl_->db, std::string("SELECT ") + attempt_columns +
                                     " FROM optimize_attempts WHERE kernel = ? ORDER BY id");
  rows.bind_text(1, kernel);
  while (rows.step()) {
    auto a = read_attempt(rows);
    out[a.diff_hash] = std::move(a);
  }
  return out;
}

std::vector<attempt_record> optimize_journal::earlier_accepted(const std::string& kernel) const {
  std::lock_guard lock(impl_->mutex);
  std::vector<attempt_record> out;
  sql::statement rows(impl_->db, std::string("SELECT ") + attempt_columns +
                                     " FROM optimize_attempts WHERE kernel = ? AND verdict = "
                                     "'accepted' ORDER BY id");
  rows.bind_text(1, kernel);
  while (rows.step()) {
    out.push_back(read_attempt(rows));
  }
  return out;
}

} // namespace rpl::engine
