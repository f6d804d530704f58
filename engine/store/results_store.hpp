#pragma once
/// The campaign database (SQLite, WAL): runs, candidates, artifacts, raw measurements and verdicts.
/// Each candidate is written in one transaction when its verdict is final, so a killed engine loses
/// at most the candidates in flight, and `--resume` knows exactly which ones are done.

#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/store/candidate_record.hpp"
#include "messages/wire.hpp"

namespace rpl::stages::sqlite {
class connection;
} // namespace rpl::stages::sqlite

namespace rpl::engine {

/// A results-store failure, its text naming the database or the failed SQLite call.
class store_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct run_record {
  std::string run_id;
  std::string fingerprint; ///< hash of everything that defines the candidates
  std::string status;      ///< running | finished | interrupted | failed
  std::string started_at;
  std::string space_file;
  std::string strategy;
  std::uint64_t seed = 0;
  std::int64_t budget = -1;
  std::size_t planned = 0;
  nlohmann::json settings;
};

/// What the store gives back about a completed candidate.
struct stored_candidate {
  std::string key;
  std::size_t space_index = 0;
  nlohmann::json params;
  std::string status; ///< ok | invalid
  std::string reason;
  std::string verdict;
  std::string verdict_reason;
  std::string best_key; ///< the incumbent after this candidate's verdict
  stages::sample_stats stats;
  std::int64_t compile_ns = 0;
  std::string compile_status;
  std::string lane;
  std::string sampling;        ///< "fixed" or how adaptive sampling ended; empty in old files
  std::optional<double> noise; ///< achieved relative noise
  bool noisy = false;
  std::string device_model;
  std::string device_uuid;
  std::string artifact_hash;   ///< empty without an artifact
  messages::gpu_clocks clocks; ///< read false without clock evidence (CPU lanes, no NVML)
  /// Processes its runs left running, killed by the lane; nullopt in files older than schema 4.
  std::optional<std::uint32_t> leftover_processes;
  /// The samples' median interval (95 %) where the lane computed it (kernel lane, schema 7), and
  /// for a raced candidate the bound it was shown slower than.
  std::optional<double> interval_low_ns;
  std::optional<double> interval_high_ns;
  std::optional<double> race_bound_ns;
};

/// One entry of the artifact cache's index: the artifact's content hash and the compile reply
/// that made it (msgpack, hex-encoded, without the artifact's bytes).
struct cached_compile {
  std::string artifact_hash;
  std::string reply_hex;
};

/// A build compiled on two workers and the content hash of each artifact.
struct determinism_check {
  std::string build_key;
  std::string worker_a, worker_b;
  std::string hash_a, hash_b;
};

class results_store {
public:
  /// Opens or creates the database. Throws store_error naming the file and the fix.
  explicit results_store(const std::filesystem::path& path);
  ~results_store();
  results_store(const results_store&) = delete;
  results_store& operator=(const results_store&) = delete;

  const std::filesystem::path& path() const { return path_; }

  /// The most recent run with this fingerprint, if any.
  std::optional<run_record> find_run(const std::string& fingerprint) const;
  /// Every run, oldest first.
  std::vector<run_record> runs() const;
  void create_run(const run_record& run);
  void set_run_status(const std::string& run_id, const std::string& status);

  /// Writes the candidate, its artifact, its samples and its verdict in one transaction. Its
  /// statements are prepared once per store and reused (one candidate at a time).
  void record(const std::string& run_id, const candidate_record& candidate);

  std::vector<stored_candidate> candidates(const std::string& run_id) const;

  /// The timed samples stored for one candidate, in order.
  std::vector<std::int64_t> samples(const std::string& run_id, const std::string& key) const;

  /// The final round's decision (finalists, rounds, winner, tie set) as one JSON document.
  void record_final_round(const std::string& run_id, const nlohmann::json& decision);
  /// The decision record_final_round() stored for the run, if any.
  std::optional<nlohmann::json> final_round(const std::string& run_id) const;

  /// The artifact cache's entry for a build key, if any (every run of the file shares them).
  std::optional<cached_compile> find_compile(const std::string& build_key) const;
  void remember_compile(const std::string& build_key, const cached_compile& entry);

  /// One determinism check's outcome (engine/autotune/determinism_check_service.hpp).
  void record_determinism_check(const std::string& run_id, const determinism_check& check);

private:
  /// Runs SQL without results; a failure is a store_error with SQLite's message.
  void exec(const char* sql) const;

  struct record_statements;

  std::filesystem::path path_;
  std::unique_ptr<stages::sqlite::connection> db_; // a pointer: sqlite3.h stays out of this header
  /// record()'s prepared statements, made on its first call; finalized before db_ closes.
  std::unique_ptr<record_statements> record_statements_;
  std::mutex record_mutex_; ///< one record() at a time: they share the statements
};

} // namespace rpl::engine
