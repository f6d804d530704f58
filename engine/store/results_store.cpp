#include "engine/store/results_store.hpp"

#include <chrono>
#include <cmath>
#include <ctime>

#include "engine/store/utc_time.hpp"
#include "stages/sqlite/sqlite_statement.hpp"

namespace rpl::engine {

namespace sqlite = stages::sqlite;

namespace {

constexpr const char* schema_sql = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
-- 2 added candidate_sampling and final_rounds, 3 candidate_clocks, 4 candidate_processes, 5
-- compile_cache, 6 determinism_checks, 7 candidate_intervals; an older file gains them when
-- opened (its candidates simply have no row there).
INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', '7');
-- The median interval (95 %, sign test) of a candidate's samples where its lane computed one (the
-- kernel lane), and for a raced candidate (candidate_sampling.sampling = 'raced') the bound it
-- was shown slower than: the smallest interval upper end measured before it.
CREATE TABLE IF NOT EXISTS candidate_intervals(
  run_id TEXT NOT NULL,
  key TEXT NOT NULL,
  low_ns REAL NOT NULL,
  high_ns REAL NOT NULL,
  race_bound_ns REAL,
  PRIMARY KEY (run_id, key));
-- The determinism check (--determinism-check): a build compiled twice, on two workers, and the
-- SHA of each artifact (content_hash); same = 1 when they are byte-identical.
CREATE TABLE IF NOT EXISTS determinism_checks(
  run_id TEXT NOT NULL,
  build_key TEXT NOT NULL,
  worker_a TEXT NOT NULL,
  worker_b TEXT NOT NULL,
  hash_a TEXT NOT NULL,
  hash_b TEXT NOT NULL,
  same INTEGER NOT NULL,
  recorded_at TEXT NOT NULL,
  PRIMARY KEY (run_id, build_key));
-- The artifact cache's index (engine/autotune/cached_compile_service.hpp): a build key (sources,
-- build argv, toolchain identity) to the artifact (<db>.artifacts/<artifact_hash>) and the
-- compile reply that made it (msgpack, hex; its artifact bytes left out). Shared by every run.
CREATE TABLE IF NOT EXISTS compile_cache(
  build_key TEXT PRIMARY KEY,
  artifact_hash TEXT NOT NULL,
  reply_hex TEXT NOT NULL,
  recorded_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS candidate_processes(
  run_id TEXT NOT NULL,
  key TEXT NOT NULL,
  leftover_processes INTEGER NOT NULL,
  PRIMARY KEY (run_id, key));
CREATE TABLE IF NOT EXISTS candidate_clocks(
  run_id TEXT NOT NULL,
  key TEXT NOT NULL,
  sm_mhz_before INTEGER,
  sm_mhz_after INTEGER,
  reasons_before INTEGER,
  reasons_after INTEGER,
  power_violation_ns INTEGER,
  thermal_violation_ns INTEGER,
  throttled INTEGER NOT NULL,
  PRIMARY KEY (run_id, key));
CREATE TABLE IF NOT EXISTS candidate_sampling(
  run_id TEXT NOT NULL,
  key TEXT NOT NULL,
  sampling TEXT,
  noise REAL,
  noisy INTEGER,
  device_model TEXT,
  device_uuid TEXT,
  PRIMARY KEY (run_id, key));
CREATE TABLE IF NOT EXISTS final_rounds(
  run_id TEXT PRIMARY KEY,
  decision_json TEXT NOT NULL,
  recorded_at TEXT NOT NULL);
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

/// A failed SQLite call as the store_error it has always been reported as.
store_error to_store_error(const sqlite::sqlite_error& error) {
  if (error.action() == "prepare") {
    return store_error("results store: cannot prepare statement: " + error.sqlite_message());
  }
  if (error.action() == "exec") {
    return store_error(error.sqlite_message());
  }
  return store_error("results store: " + error.sqlite_message()); // step, bind
}

nlohmann::json argv_json(const std::vector<std::string>& argv) {
  return nlohmann::json(argv);
}

} // namespace

/// record()'s statements, prepared once (SQLITE_PREPARE_PERSISTENT): parsing them again for every
/// candidate cost more than running them.
struct results_store::record_statements {
  explicit record_statements(const sqlite::connection& db)
      : begin(db, "BEGIN IMMEDIATE", SQLITE_PREPARE_PERSISTENT),
        commit(db, "COMMIT", SQLITE_PREPARE_PERSISTENT),
        candidate(db,
                  "INSERT OR REPLACE INTO candidates(run_id, key, space_index, "
                  "params_json, build_argv_json, run_argv_json, status, reason, "
                  "measure_status, exit_code, term_signal, failed_run, lane, n, "
                  "median_ns, mean_ns, stddev_ns, cv, min_ns, max_ns, stability, "
                  "completed_at) "
                  "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                  SQLITE_PREPARE_PERSISTENT),
        sampling(db,
                 "INSERT OR REPLACE INTO candidate_sampling(run_id, key, sampling, noise, "
                 "noisy, device_model, device_uuid) VALUES (?,?,?,?,?,?,?)",
                 SQLITE_PREPARE_PERSISTENT),
        intervals(db,
                  "INSERT OR REPLACE INTO candidate_intervals(run_id, key, low_ns, high_ns, "
                  "race_bound_ns) VALUES (?,?,?,?,?)",
                  SQLITE_PREPARE_PERSISTENT),
        clocks(db,
               "INSERT OR REPLACE INTO candidate_clocks(run_id, key, "
               "sm_mhz_before, sm_mhz_after, reasons_before, reasons_after, "
               "power_violation_ns, thermal_violation_ns, throttled) VALUES "
               "(?,?,?,?,?,?,?,?,?)",
               SQLITE_PREPARE_PERSISTENT),
        processes(db,
                  "INSERT OR REPLACE INTO candidate_processes(run_id, key, "
                  "leftover_processes) VALUES (?,?,?)",
                  SQLITE_PREPARE_PERSISTENT),
        artifact(db,
                 "INSERT OR REPLACE INTO artifacts(run_id, key, compile_status, hash, "
                 "size, exit_code, term_signal, compile_ns, worker_id, error, "
                 "compiler_output, resources_json) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                 SQLITE_PREPARE_PERSISTENT),
        delete_samples(
            db, "DELETE FROM measurements WHERE run_id = ? AND key = ?", SQLITE_PREPARE_PERSISTENT),
        sample(db,
               "INSERT INTO measurements(run_id, key, sample_index, duration_ns) "
               "VALUES (?,?,?,?)",
               SQLITE_PREPARE_PERSISTENT),
        verdict(db,
                "INSERT OR REPLACE INTO verdicts(run_id, key, verdict, reason, best_key, "
                "median_ns, relative_change) VALUES (?,?,?,?,?,?,?)",
                SQLITE_PREPARE_PERSISTENT),
        touch_run(
            db, "UPDATE runs SET updated_at = ? WHERE run_id = ?", SQLITE_PREPARE_PERSISTENT) {}

  sqlite::statement begin, commit, candidate, sampling, intervals, clocks, processes, artifact,
      delete_samples, sample, verdict, touch_run;
};

namespace {
/// A reused statement, ready for new bindings (the previous use may have ended in an error).
sqlite::statement& fresh(sqlite::statement& s) {
  s.reset();
  s.clear_bindings();
  return s;
}
} // namespace

results_store::results_store(const std::filesystem::path& path) : path_(path) {
  try {
    db_ = std::make_unique<sqlite::connection>(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  } catch (const sqlite::sqlite_error& error) {
    throw store_error("--db " + path.string() + ": cannot open: " + error.sqlite_message() +
                      "; fix: choose a writable path");
  }
  db_->busy_timeout(std::chrono::milliseconds(5000));
  try {
    exec("PRAGMA journal_mode=WAL");
    exec("PRAGMA synchronous=NORMAL");
    exec(schema_sql);
  } catch (const store_error& error) {
    db_.reset();
    throw store_error("--db " + path.string() + ": " + error.what() +
                      "; fix: point --db at a rocm-perf results database or a new file");
  }
}

results_store::~results_store() = default;

void results_store::exec(const char* sql) const {
  try {
    db_->exec(sql);
  } catch (const sqlite::sqlite_error& error) {
    throw to_store_error(error);
  }
}

namespace {

constexpr const char* run_columns = "SELECT run_id, fingerprint, status, started_at, space_file, "
                                    "strategy, seed, budget, planned, settings_json FROM runs";

run_record read_run(const sqlite::statement& s) {
  run_record run;
  run.run_id = s.column_text(0);
  run.fingerprint = s.column_text(1);
  run.status = s.column_text(2);
  run.started_at = s.column_text(3);
  run.space_file = s.column_text(4);
  run.strategy = s.column_text(5);
  run.seed = static_cast<std::uint64_t>(s.column_int64(6));
  run.budget = s.column_int64(7);
  run.planned = static_cast<std::size_t>(s.column_int64(8));
  run.settings = nlohmann::json::parse(s.column_text(9), nullptr, false);
  return run;
}

} // namespace

std::optional<run_record> results_store::find_run(const std::string& fingerprint) const try {
  sqlite::statement s(*db_, std::string(run_columns) +
                                " WHERE fingerprint = ? ORDER BY rowid DESC LIMIT 1");
  s.bind_text(1, fingerprint);
  if (!s.step()) {
    return std::nullopt;
  }
  return read_run(s);
} catch (const sqlite::sqlite_error& error) {
  throw to_store_error(error);
}

std::vector<run_record> results_store::runs() const try {
  sqlite::statement s(*db_, std::string(run_columns) + " ORDER BY rowid");
  std::vector<run_record> out;
  while (s.step())
    out.push_back(read_run(s));
  return out;
} catch (const sqlite::sqlite_error& error) {
  throw to_store_error(error);
}

void results_store::create_run(const run_record& run) try {
  sqlite::statement s(*db_, "INSERT INTO runs(run_id, fingerprint, status, started_at, updated_at, "
                            "space_file, strategy, seed, budget, planned, settings_json) VALUES "
                            "(?,?,?,?,?,?,?,?,?,?,?)");
  const auto now = utc_timestamp();
  s.bind_text(1, run.run_id).bind_text(2, run.fingerprint).bind_text(3, run.status);
  s.bind_text(4, now).bind_text(5, now);
  s.bind_text(6, run.space_file).bind_text(7, run.strategy);
  s.bind_int64(8, static_cast<std::int64_t>(run.seed)).bind_int64(9, run.budget);
  s.bind_int64(10, static_cast<std::int64_t>(run.planned)).bind_text(11, run.settings.dump());
  s.step();
} catch (const sqlite::sqlite_error& error) {
  throw to_store_error(error);
}

void results_store::set_run_status(const std::string& run_id, const std::string& status) try {
  sqlite::statement s(*db_, "UPDATE runs SET status = ?, updated_at = ? WHERE run_id = ?");
  s.bind_text(1, status).bind_text(2, utc_timestamp()).bind_text(3, run_id);
  s.step();
} catch (const sqlite::sqlite_error& error) {
  throw to_store_error(error);
}

namespace {

// record()'s rows, one function per table; each is given its statement fresh.

void write_candidate_row(sqlite::statement& s,
                         const std::string& run_id,
                         const candidate_record& c) {
  const bool valid = c.verdict.decision != messages::verdict_kind::invalid;
  s.bind_text(1, run_id).bind_text(2, c.key);
  s.bind_int64(3, static_cast<std::int64_t>(c.space_index));
  s.bind_text(4, c.params.dump()).bind_text(5, argv_json(c.build_argv).dump());
  s.bind_text(6, argv_json(c.run_argv).dump()).bind_text(7, valid ? "ok" : "invalid");
  if (valid) {
    s.bind_null(8);
  } else {
    s.bind_text(8, c.verdict.reason);
  }
  s.bind_text(9, messages::to_string(c.measure.status));
  s.bind_int64(10, c.measure.exit_code).bind_int64(11, c.measure.term_signal);
  s.bind_int64(12, c.measure.failed_run).bind_text(13, c.measure.lane);
  s.bind_int64(14, static_cast<std::int64_t>(c.stats.n)).bind_double(15, c.stats.median);
  s.bind_double(16, c.stats.mean).bind_double(17, c.stats.stddev).bind_double(18, c.stats.cv);
  s.bind_double(19, c.stats.min).bind_double(20, c.stats.max);
  s.bind_text(21, stages::to_string(c.stats.stability)).bind_text(22, utc_timestamp());
  s.step();
}

void write_sampling_row(sqlite::statement& s,
                        const std::string& run_id,
                        const candidate_record& c) {
  s.bind_text(1, run_id).bind_text(2, c.key).bind_text(3, c.measure.sampling);
  if (std::isfinite(c.measure.noise)) {
    s.bind_double(4, c.measure.noise);
  } else {
    s.bind_null(4);
  }
  s.bind_int64(5, c.measure.noisy ? 1 : 0);
  s.bind_text(6, c.measure.device_model).bind_text(7, c.measure.device_uuid);
  s.step();
}

/// Only for a candidate measured with an interval (interval_high_ns > 0).
void write_interval_row(sqlite::statement& s,
                        const std::string& run_id,
                        const candidate_record& c) {
  s.bind_text(1, run_id).bind_text(2, c.key);
  s.bind_double(3, c.measure.interval_low_ns).bind_double(4, c.measure.interval_high_ns);
  if (c.measure.race_bound_ns > 0.0) {
    s.bind_double(5, c.measure.race_bound_ns);
  } else {
    s.bind_null(5);
  }
  s.step();
}

/// Only for a candidate whose lane read the GPU clocks.
void write_clock_row(sqlite::statement& s,
                     const std::string& run_id,
                     const std::string& key,
                     const messages::gpu_clocks& k) {
  s.bind_text(1, run_id).bind_text(2, key);
  s.bind_int64(3, k.sm_mhz_before).bind_int64(4, k.sm_mhz_after);
  s.bind_int64(5, static_cast<std::int64_t>(k.reasons_before));
  s.bind_int64(6, static_cast<std::int64_t>(k.reasons_after));
  s.bind_int64(7, k.power_violation_ns).bind_int64(8, k.thermal_violation_ns);
  s.bind_int64(9, k.throttled ? 1 : 0);
  s.step();
}

void write_processes_row(sqlite::statement& s,
                         const std::string& run_id,
                         const candidate_record& c) {
  s.bind_text(1, run_id).bind_text(2, c.key);
  s.bind_int64(3, c.measure.leftover_processes);
  s.step();
}

/// The artifacts row's resources_json: each kernel's resources as the compiler reported them.
nlohmann::json kernel_resources_json(const candidate_record& c) {
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
  // The static screen's findings go with the kernel it screened; a code object's kernel,
  // which the compiler did not report, gets an entry of its own.
  if (c.screen.is_object()) {
    bool placed = false;
    for (auto& k : resources) {
      if (k["name"] == c.screen.value("kernel", "") && k["arch"] == c.screen.value("arch", "")) {
        k["screen"] = c.screen;
        placed = true;
      }
    }
    if (!placed) {
      resources.push_back({{"name", c.screen.value("kernel", "")},
                           {"arch", c.screen.value("arch", "")},
                           {"screen", c.screen}});
    }
  }
  return resources;
}

void write_artifact_row(sqlite::statement& s,
                        const std::string& run_id,
                        const candidate_record& c) {
  s.bind_text(1, run_id).bind_text(2, c.key);
  s.bind_text(3, messages::to_string(c.compile.status));
  if (c.artifact_hash.empty()) {
    s.bind_null(4).bind_null(5);
  } else {
    s.bind_text(4, c.artifact_hash);
    std::error_code ec;
    const auto size = std::filesystem::file_size(c.artifact_path, ec);
    s.bind_int64(5, static_cast<std::int64_t>(ec ? 0 : size));
  }
  s.bind_int64(6, c.compile.exit_code).bind_int64(7, c.compile.term_signal);
  s.bind_int64(8, c.compile.compile_ns).bind_text(9, c.compile.worker_id);
  s.bind_text(10, c.compile.error).bind_text(11, c.compile.output);
  s.bind_text(12, kernel_resources_json(c).dump());
  s.step();
}

/// The candidate's samples replace those an earlier record() stored for it.
void write_sample_rows(sqlite::statement& delete_samples,
                       sqlite::statement& sample,
                       const std::string& run_id,
                       const candidate_record& c) {
  sqlite::statement& del = fresh(delete_samples);
  del.bind_text(1, run_id).bind_text(2, c.key);
  del.step();
  sqlite::statement& s = sample;
  for (std::size_t i = 0; i < c.measure.samples_ns.size(); ++i) {
    fresh(s);
    s.bind_text(1, run_id).bind_text(2, c.key).bind_int64(3, static_cast<std::int64_t>(i));
    s.bind_int64(4, c.measure.samples_ns[i]);
    s.step();
  }
}

void write_verdict_row(sqlite::statement& s, const std::string& run_id, const candidate_record& c) {
  s.bind_text(1, run_id).bind_text(2, c.key);
  s.bind_text(3, messages::to_string(c.verdict.decision));
  s.bind_text(4, c.verdict.reason).bind_text(5, c.verdict.best_key);
  s.bind_double(6, c.verdict.median_ns).bind_double(7, c.verdict.relative_change);
  s.step();
}

} // namespace

void results_store::record(const std::string& run_id, const candidate_record& c) try {
  const std::lock_guard lock(record_mutex_);
  if (!record_statements_) {
    record_statements_ = std::make_unique<record_statements>(*db_);
  }
  record_statements& q = *record_statements_;
  fresh(q.begin).step();
  try {
    write_candidate_row(fresh(q.candidate), run_id, c);
    write_sampling_row(fresh(q.sampling), run_id, c);
    if (c.measure.interval_high_ns > 0.0) {
      write_interval_row(fresh(q.intervals), run_id, c);
    }
    if (c.measure.clocks.read) {
      write_clock_row(fresh(q.clocks), run_id, c.key, c.measure.clocks);
    }
    write_processes_row(fresh(q.processes), run_id, c);
    write_artifact_row(fresh(q.artifact), run_id, c);
    write_sample_rows(q.delete_samples, q.sample, run_id, c);
    write_verdict_row(fresh(q.verdict), run_id, c);
    sqlite::statement& touch = fresh(q.touch_run);
    touch.bind_text(1, utc_timestamp()).bind_text(2, run_id);
    touch.step();
    fresh(q.commit).step();
  } catch (...) {
    try {
      db_->exec("ROLLBACK");
    } catch (const sqlite::sqlite_error&) {
      // Nothing to roll back (SQLite may have ended the transaction itself); the error that got
      // here is the one to report.
    }
    throw;
  }
} catch (const sqlite::sqlite_error& error) {
  throw to_store_error(error);
}

std::vector<stored_candidate> results_store::candidates(const std::string& run_id) const try {
  sqlite::statement s(*db_,
                      "SELECT c.key, c.space_index, c.params_json, c.status, c.reason, v.verdict, "
                      "v.reason, c.n, c.median_ns, c.mean_ns, c.stddev_ns, c.cv, c.min_ns, "
                      "c.max_ns, a.compile_ns, a.compile_status, v.best_key, c.lane, p.sampling, "
                      "p.noise, p.noisy, p.device_model, p.device_uuid, a.hash, k.sm_mhz_before, "
                      "k.sm_mhz_after, k.reasons_before, k.reasons_after, k.power_violation_ns, "
                      "k.thermal_violation_ns, k.throttled, x.leftover_processes, i.low_ns, "
                      "i.high_ns, i.race_bound_ns FROM candidates c "
                      "LEFT JOIN candidate_intervals i ON i.run_id = c.run_id AND i.key = c.key "
                      "LEFT JOIN candidate_sampling p ON p.run_id = c.run_id AND p.key = c.key "
                      "LEFT JOIN candidate_processes x ON x.run_id = c.run_id AND x.key = c.key "
                      "LEFT JOIN candidate_clocks k ON k.run_id = c.run_id AND k.key = c.key "
                      "LEFT JOIN verdicts v ON v.run_id = c.run_id AND v.key = c.key "
                      "LEFT JOIN artifacts a ON a.run_id = c.run_id AND a.key = c.key "
                      "WHERE c.run_id = ? ORDER BY c.rowid");
  s.bind_text(1, run_id);
  std::vector<stored_candidate> out;
  while (s.step()) {
    stored_candidate c;
    c.key = s.column_text(0);
    c.space_index = static_cast<std::size_t>(s.column_int64(1));
    c.params = nlohmann::json::parse(s.column_text(2), nullptr, false);
    c.status = s.column_text(3);
    c.reason = s.column_text(4);
    c.verdict = s.column_text(5);
    c.verdict_reason = s.column_text(6);
    c.stats.n = static_cast<std::size_t>(s.column_int64(7));
    c.stats.median = s.column_double(8);
    c.stats.mean = s.column_double(9);
    c.stats.stddev = s.column_double(10);
    c.stats.cv = s.column_double(11);
    c.stats.min = s.column_double(12);
    c.stats.max = s.column_double(13);
    c.stats.stability = stages::classify_cv(c.stats.cv);
    c.compile_ns = s.column_int64(14);
    c.compile_status = s.column_text(15);
    c.best_key = s.column_text(16);
    c.lane = s.column_text(17);
    c.sampling = s.column_text(18);
    c.noise = s.column_is_null(19) ? std::optional<double>() : s.column_double(19);
    c.noisy = s.column_int64(20) != 0;
    c.device_model = s.column_text(21);
    c.device_uuid = s.column_text(22);
    c.artifact_hash = s.column_text(23);
    if (!s.column_is_null(30)) {
      messages::gpu_clocks& k = c.clocks;
      k.read = true;
      k.sm_mhz_before = static_cast<std::uint32_t>(s.column_int64(24));
      k.sm_mhz_after = static_cast<std::uint32_t>(s.column_int64(25));
      k.reasons_before = static_cast<std::uint64_t>(s.column_int64(26));
      k.reasons_after = static_cast<std::uint64_t>(s.column_int64(27));
      k.power_violation_ns = s.column_int64(28);
      k.thermal_violation_ns = s.column_int64(29);
      k.throttled = s.column_int64(30) != 0;
    }
    if (!s.column_is_null(31)) {
      c.leftover_processes = static_cast<std::uint32_t>(s.column_int64(31));
    }
    if (!s.column_is_null(32)) {
      c.interval_low_ns = s.column_double(32);
      c.interval_high_ns = s.column_double(33);
    }
    if (!s.column_is_null(34)) {
      c.race_bound_ns = s.column_double(34);
    }
    out.push_back(std::move(c));
  }
  return out;
} catch (const sqlite::sqlite_error& error) {
  throw to_store_error(error);
}

std::vector<std::int64_t> results_store::samples(const std::string& run_id,
                                                 const std::string& key) const try {
  sqlite::statement s(*db_, "SELECT duration_ns FROM measurements WHERE run_id = ? AND key = ? "
                            "ORDER BY sample_index");
  s.bind_text(1, run_id).bind_text(2, key);
  std::vector<std::int64_t> out;
  while (s.step()) {
    out.push_back(s.column_int64(0));
  }
  return out;
} catch (const sqlite::sqlite_error& error) {
  throw to_store_error(error);
}

std::optional<nlohmann::json> results_store::final_round(const std::string& run_id) const try {
  sqlite::statement s(*db_, "SELECT decision_json FROM final_rounds WHERE run_id = ?");
  s.bind_text(1, run_id);
  if (!s.step()) {
    return std::nullopt;
  }
  auto doc = nlohmann::json::parse(s.column_text(0), nullptr, false);
  return doc.is_discarded() ? std::nullopt : std::optional<nlohmann::json>(std::move(doc));
} catch (const sqlite::sqlite_error& error) {
  throw to_store_error(error);
}

void results_store::record_final_round(const std::string& run_id,
                                       const nlohmann::json& decision) try {
  sqlite::statement s(*db_,
                      "INSERT OR REPLACE INTO final_rounds(run_id, decision_json, recorded_at) "
                      "VALUES (?,?,?)");
  s.bind_text(1, run_id).bind_text(2, decision.dump()).bind_text(3, utc_timestamp());
  s.step();
} catch (const sqlite::sqlite_error& error) {
  throw to_store_error(error);
}

std::optional<cached_compile> results_store::find_compile(const std::string& build_key) const try {
  sqlite::statement s(*db_,
                      "SELECT artifact_hash, reply_hex FROM compile_cache WHERE build_key = ?");
  s.bind_text(1, build_key);
  if (!s.step())
    return std::nullopt;
  return cached_compile{std::string(s.column_text_view(0)), std::string(s.column_text_view(1))};
} catch (const sqlite::sqlite_error& error) {
  throw to_store_error(error);
}

void results_store::record_determinism_check(const std::string& run_id,
                                             const determinism_check& check) try {
  sqlite::statement s(*db_,
                      "INSERT OR REPLACE INTO determinism_checks(run_id, build_key, worker_a, "
                      "worker_b, hash_a, hash_b, same, recorded_at) VALUES (?,?,?,?,?,?,?,?)");
  s.bind_text(1, run_id)
      .bind_text(2, check.build_key)
      .bind_text(3, check.worker_a)
      .bind_text(4, check.worker_b)
      .bind_text(5, check.hash_a)
      .bind_text(6, check.hash_b)
      .bind_int64(7, check.hash_a == check.hash_b ? 1 : 0)
      .bind_text(8, utc_timestamp());
  s.step();
} catch (const sqlite::sqlite_error& error) {
  throw to_store_error(error);
}

void results_store::remember_compile(const std::string& build_key,
                                     const cached_compile& entry) try {
  sqlite::statement s(*db_,
                      "INSERT OR REPLACE INTO compile_cache(build_key, artifact_hash, reply_hex, "
                      "recorded_at) VALUES (?,?,?,?)");
  s.bind_text(1, build_key)
      .bind_text(2, entry.artifact_hash)
      .bind_text(3, entry.reply_hex)
      .bind_text(4, utc_timestamp());
  s.step();
} catch (const sqlite::sqlite_error& error) {
  throw to_store_error(error);
}

} // namespace rpl::engine
