#pragma once
/// Where an optimize run keeps everything it did: a SQLite database (`DIR/optimize.sqlite`:
/// optimize_runs, optimize_targets, optimize_attempts) and the same attempts as JSON lines
/// (`DIR/attempts.jsonl`, one object per attempt, appended and flushed as each ends), so that a
/// killed run loses at most the attempt in flight and `--resume` takes up where it stopped: an
/// attempt whose diff was already judged is not judged again.

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/optimize/attempt_record.hpp"

namespace rpl::engine {

class optimize_journal {
public:
  /// Opens (creating) DIR/optimize.sqlite and DIR/attempts.jsonl. Throws std::runtime_error
  /// naming the file and a fix.
  explicit optimize_journal(const std::filesystem::path& dir);
  ~optimize_journal();
  optimize_journal(const optimize_journal&) = delete;
  optimize_journal& operator=(const optimize_journal&) = delete;

  /// Thread-safe. Stores the attempt (row and JSON line).
  void record(const attempt_record& attempt);
  /// Thread-safe. The target's summary row (replaced on each call).
  void record_target(const std::string& kernel,
                     const std::string& source,
                     const std::string& status,
                     double original_ns,
                     double best_ns,
                     const std::string& summary,
                     const std::string& accepted_diff);
  /// A target's summary row as an earlier run left it.
  struct target_row {
    std::string status; ///< improved, unchanged, failed, interrupted
    double original_ns = 0.0;
    double best_ns = 0.0;
    std::string summary;
    std::string accepted_diff;
  };
  std::optional<target_row> earlier_target(const std::string& kernel) const;
  /// Attempts of earlier runs in this folder for `kernel`, by diff hash (the latest one wins).
  std::map<std::string, attempt_record> earlier_attempts(const std::string& kernel) const;
  /// The accepted attempts of earlier runs for `kernel`, in the order they were accepted.
  std::vector<attempt_record> earlier_accepted(const std::string& kernel) const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// The identity of a diff or a code object: stages::content_hash (32 hex digits).
std::string text_hash(std::string_view text);

/// A stored JSON text as JSON again (null when empty; the text itself when it does not parse).
nlohmann::json json_or_text(const std::string& text);

} // namespace rpl::engine
