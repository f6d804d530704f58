#pragma once
/// The campaign database (SQLite, WAL): runs, candidates, artifacts, raw measurements and verdicts.
/// Each candidate is written in one transaction when its verdict is final, so a killed engine loses
/// at most the candidates in flight, and `--resume` knows exactly which ones are done.

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/store/candidate_record.hpp"

struct sqlite3;

namespace rpl::engine {

class store_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct run_record {
  std::string run_id;
  std::string fingerprint;  ///< hash of everything that defines the candidates
  std::string status;       ///< running | finished | interrupted | failed
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
  std::string status;  ///< ok | invalid
  std::string reason;
  std::string verdict;
  std::string verdict_reason;
  std::string best_key;  ///< the incumbent after this candidate's verdict
  stages::sample_stats stats;
  std::int64_t compile_ns = 0;
  std::string compile_status;
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
  void create_run(const run_record& run);
  void set_run_status(const std::string& run_id, const std::string& status);

  /// Writes the candidate, its artifact, its samples and its verdict in one transaction.
  void record(const std::string& run_id, const candidate_record& candidate);

  std::vector<stored_candidate> candidates(const std::string& run_id) const;

private:
  void exec(const char* sql) const;

  std::filesystem::path path_;
  sqlite3* db_ = nullptr;
};

}  // namespace rpl::engine
