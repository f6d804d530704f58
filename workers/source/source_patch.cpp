#include "workers/source/source_patch.hpp"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <optional>
#include <string_view>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

#include <nlohmann/json.hpp>

namespace rpl::workers {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view manifest_name = "manifest.json";
constexpr std::string_view manifest_format = "rocm-perf source backup";
constexpr int manifest_version = 1;

/// 64-bit FNV-1a: enough to tell whether a file still holds what we wrote (the original itself
/// is compared byte for byte against its copy).
std::uint64_t fnv1a64(std::string_view bytes) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

std::string hex64(std::uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

std::string octal_mode(unsigned mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", mode);
  return text;
}

std::string quoted(const fs::path& path) {
  return path.string();
}

std::string errno_text(int error) {
  return std::strerror(error);
}

/// Closes a descriptor when it goes out of scope.
class file_descriptor {
public:
  explicit file_descriptor(int fd) : fd_(fd) {}
  ~file_descriptor() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  file_descriptor(const file_descriptor&) = delete;
  file_descriptor& operator=(const file_descriptor&) = delete;
  int get() const { return fd_; }
  /// Closes now, reporting close(2)'s error (a late write error on some file systems).
  int close_now() {
    const int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }

private:
  int fd_;
};

/// The bytes of `path`; nullopt with `error` set ("<path>: cannot read: <reason>") when they
/// cannot be read, `missing` set when the file does not exist.
std::optional<std::string> read_bytes(const fs::path& path, std::string& error, bool* missing) {
  file_descriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (missing != nullptr) {
      *missing = errno == ENOENT;
    }
    error = quoted(path) + ": cannot read: " + errno_text(errno);
    return std::nullopt;
  }
  std::string bytes;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      error = quoted(path) + ": cannot read: " + errno_text(errno);
      return std::nullopt;
    }
    if (n == 0) {
      return bytes;
    }
    bytes.append(buffer, static_cast<std::size_t>(n));
  }
}

/// The permission bits (with setuid, setgid, sticky) of `path`, or nullopt with `error`.
std::optional<unsigned> mode_of(const fs::path& path, std::string& error) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    error = quoted(path) + ": cannot stat: " + errno_text(errno);
    return std::nullopt;
  }
  return static_cast<unsigned>(info.st_mode & 07777);
}

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return false;
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

/// Makes a rename in `folder` durable.
void sync_folder(const fs::path& folder) {
  file_descriptor fd(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() >= 0) {
    ::fsync(fd.get());
  }
}

/// Replaces `path` by `bytes` with permission bits `mode`: a temporary file in the same folder,
/// written, fsynced and renamed over it, so a reader sees the old file or the new, never half.
bool replace_atomically(const fs::path& path,
                        std::string_view bytes,
                        unsigned mode,
                        std::string& error) {
  const fs::path folder = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::string temp = (folder / ("." + path.filename().string() + ".rpl-XXXXXX")).string();
  file_descriptor fd(::mkstemp(temp.data()));
  if (fd.get() < 0) {
    error = quoted(path) + ": cannot create a temporary file in " + quoted(folder) + ": " +
            errno_text(errno) + "; fix: make the folder writable";
    return false;
  }
  const char* step = nullptr;
  if (!write_all(fd.get(), bytes)) {
    step = "write";
  } else if (::fchmod(fd.get(), static_cast<mode_t>(mode)) != 0) {
    step = "set the mode of";
  } else if (::fsync(fd.get()) != 0) {
    step = "fsync";
  } else if (fd.close_now() != 0) {
    step = "close";
  } else if (::rename(temp.c_str(), path.c_str()) != 0) {
    step = "rename over the file";
  }
  if (step != nullptr) {
    const int saved = errno;
    ::unlink(temp.c_str());
    error = quoted(path) + ": cannot " + step + " the temporary file " + temp + ": " +
            errno_text(saved) + "; fix: check the free space and permissions of " + quoted(folder);
    return false;
  }
  sync_folder(folder);
  return true;
}

source_patch_result failed(std::string error) {
  source_patch_result r;
  r.error = std::move(error);
  return r;
}

std::string plural(std::size_t n, std::string_view word) {
  return std::to_string(n) + " " + std::string(word) + (n == 1 ? "" : "s");
}

/// One file of a backup, as the manifest records it.
struct backup_entry {
  fs::path path;        ///< absolute, symbolic links resolved
  fs::path backup_file; ///< relative to the backup folder
  unsigned mode = 0;
  std::uint64_t before_size = 0;
  std::string before_fnv1a64;
  std::uint64_t after_size = 0;
  std::string after_fnv1a64;
};

nlohmann::json to_json(const backup_entry& e) {
  return {{"path", e.path.string()},
          {"backup", e.backup_file.string()},
          {"mode", e.mode},
          {"mode_octal", octal_mode(e.mode)},
          {"before", {{"size", e.before_size}, {"fnv1a64", e.before_fnv1a64}}},
          {"after", {{"size", e.after_size}, {"fnv1a64", e.after_fnv1a64}}}};
}

/// Removes what apply_with_backup wrote into `backup_dir` once no file needs it any more.
void discard_backup(const fs::path& backup_dir, const std::vector<backup_entry>& entries) {
  std::error_code ignored;
  fs::remove(backup_dir / manifest_name, ignored);
  for (const auto& e : entries) {
    fs::remove(backup_dir / e.backup_file, ignored);
  }
  fs::remove(backup_dir / "files", ignored); // only when empty
  fs::remove(backup_dir, ignored);           // only when empty
}

/// Reads `backup_dir`'s manifest; nullopt with `error` when it is missing or malformed.
std::optional<std::vector<backup_entry>> read_manifest(const fs::path& backup_dir,
                                                       std::string& error) {
  const fs::path manifest = backup_dir / manifest_name;
  bool missing = false;
  const std::optional<std::string> text = read_bytes(manifest, error, &missing);
  if (!text) {
    if (missing) {
      error = quoted(manifest) +
              ": not found, so this is not a backup folder; fix: pass the folder that the patch "
              "was backed up into";
    }
    return std::nullopt;
  }
  const std::string where = quoted(manifest) + ": ";
  const std::string fix = "; fix: restore the files by hand from " + quoted(backup_dir / "files");
  try {
    const nlohmann::json json = nlohmann::json::parse(*text);
    if (json.value("format", "") != manifest_format ||
        json.value("version", 0) != manifest_version) {
      error = where + "is not a version " + std::to_string(manifest_version) + " `" +
              std::string(manifest_format) + "` manifest" + fix;
      return std::nullopt;
    }
    std::vector<backup_entry> entries;
    for (const auto& item : json.at("files")) {
      backup_entry e;
      e.path = item.at("path").get<std::string>();
      e.backup_file = item.at("backup").get<std::string>();
      e.mode = item.at("mode").get<unsigned>();
      e.before_size = item.at("before").at("size").get<std::uint64_t>();
      e.before_fnv1a64 = item.at("before").at("fnv1a64").get<std::string>();
      e.after_size = item.at("after").at("size").get<std::uint64_t>();
      e.after_fnv1a64 = item.at("after").at("fnv1a64").get<std::string>();
      if (!e.path.is_absolute() || e.backup_file.is_absolute() ||
          e.backup_file.lexically_normal().string().starts_with("..")) {
        error = where + "entry for " + quoted(e.path) +
                " names its copy outside the backup folder, or a relative file" + fix;
        return std::nullopt;
      }
      entries.push_back(std::move(e));
    }
    return entries;
  } catch (const nlohmann::json::exception& e) {
    error = where + "cannot be read: " + e.what() + fix;
    return std::nullopt;
  }
}

} // namespace

source_patch_result apply_with_backup(const std::vector<file_change>& changes,
                                      const fs::path& backup_dir) {
  if (changes.empty()) {
    return failed("apply_with_backup: no files to change; fix: pass at least one file_change");
  }
  std::error_code ec;
  if (fs::exists(backup_dir / manifest_name, ec)) {
    return failed(quoted(backup_dir) +
                  ": already holds a backup (manifest.json); fix: roll it back or choose a new "
                  "backup folder");
  }

  // 1. Every file must still hold what the run read, and be named once.
  std::vector<backup_entry> entries;
  for (std::size_t i = 0; i < changes.size(); ++i) {
    const file_change& change = changes[i];
    const fs::path path = fs::canonical(change.path, ec);
    if (ec) {
      return failed(quoted(change.path) + ": cannot be found: " + ec.message() +
                    "; fix: rerun optimize on the files as they are now");
    }
    for (const auto& e : entries) {
      if (e.path == path) {
        return failed(quoted(change.path) + ": listed twice (as " + quoted(path) +
                      "); fix: give one file_change per file");
      }
    }
    std::string error;
    const std::optional<std::string> current = read_bytes(path, error, nullptr);
    if (!current) {
      return failed(error + "; fix: make the file readable");
    }
    if (*current != change.expected_before) {
      return failed(quoted(path) + ": changed since the run started (" +
                    plural(current->size(), "byte") + " now, " +
                    plural(change.expected_before.size(), "byte") +
                    " then); nothing was patched; fix: rerun optimize");
    }
    const std::optional<unsigned> mode = mode_of(path, error);
    if (!mode) {
      return failed(error);
    }
    backup_entry e;
    e.path = path;
    e.backup_file = fs::path("files") / (std::to_string(i) + "-" + path.filename().string());
    e.mode = *mode;
    e.before_size = change.expected_before.size();
    e.before_fnv1a64 = hex64(fnv1a64(change.expected_before));
    e.after_size = change.after.size();
    e.after_fnv1a64 = hex64(fnv1a64(change.after));
    entries.push_back(std::move(e));
  }

  // 2. The originals and the manifest, on disk before any file changes, so that a crash half way
  // through still leaves a backup rollback can use.
  fs::create_directories(backup_dir / "files", ec);
  if (ec) {
    return failed(quoted(backup_dir) + ": cannot create the backup folder: " + ec.message() +
                  "; fix: choose a writable backup folder");
  }
  nlohmann::json manifest = {{"format", manifest_format},
                             {"version", manifest_version},
                             {"files", nlohmann::json::array()}};
  for (std::size_t i = 0; i < entries.size(); ++i) {
    std::string error;
    if (!replace_atomically(backup_dir / entries[i].backup_file, changes[i].expected_before, 0600,
                            error)) {
      discard_backup(backup_dir, entries);
      return failed("cannot back up " + quoted(entries[i].path) + ": " + error);
    }
    manifest["files"].push_back(to_json(entries[i]));
  }
  std::string manifest_text;
  try {
    manifest_text = manifest.dump(2) + "\n";
  } catch (const nlohmann::json::exception& e) {
    discard_backup(backup_dir, entries);
    return failed(quoted(backup_dir / manifest_name) + ": cannot be written: " + e.what() +
                  "; fix: use file paths that are valid UTF-8");
  }
  std::string error;
  if (!replace_atomically(backup_dir / manifest_name, manifest_text, 0600, error)) {
    discard_backup(backup_dir, entries);
    return failed("cannot write the backup manifest: " + error);
  }

  // 3. The new contents; on the first failure, the files already written get their originals.
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (replace_atomically(entries[i].path, changes[i].after, entries[i].mode, error)) {
      continue;
    }
    std::string restore_errors;
    for (std::size_t j = 0; j < i; ++j) {
      std::string restore_error;
      if (!replace_atomically(entries[j].path, changes[j].expected_before, entries[j].mode,
                              restore_error)) {
        restore_errors += "; " + restore_error;
      }
    }
    if (!restore_errors.empty()) {
      return failed(error + "; putting back the files already patched failed too" + restore_errors +
                    "; fix: run rollback on " + quoted(backup_dir));
    }
    discard_backup(backup_dir, entries);
    return failed(error + "; no file was changed");
  }

  source_patch_result result;
  result.ok = true;
  for (const auto& e : entries) {
    result.changed.push_back(e.path);
  }
  result.message = "patched " + plural(entries.size(), "file") + "; originals backed up in " +
                   quoted(backup_dir);
  return result;
}

source_patch_result rollback(const fs::path& backup_dir, const rollback_options& options) {
  std::string error;
  const std::optional<std::vector<backup_entry>> entries = read_manifest(backup_dir, error);
  if (!entries) {
    return failed(error);
  }

  // 1. Read every original and every current file; refuse before writing anything.
  enum class state { original, patched, edited, missing };
  std::vector<std::string> originals;
  std::vector<state> states;
  std::string refusals;
  for (const auto& e : *entries) {
    const fs::path copy = backup_dir / e.backup_file;
    std::optional<std::string> original = read_bytes(copy, error, nullptr);
    if (!original) {
      return failed(error + "; fix: the backup of " + quoted(e.path) +
                    " is gone, restore the file by hand");
    }
    if (original->size() != e.before_size || hex64(fnv1a64(*original)) != e.before_fnv1a64) {
      return failed(quoted(copy) + ": the backup of " + quoted(e.path) +
                    " is damaged (its size or hash differs from the manifest); nothing was "
                    "restored; fix: restore the file by hand");
    }
    bool missing = false;
    const std::optional<std::string> current = read_bytes(e.path, error, &missing);
    state s = state::edited;
    if (!current && !missing) {
      return failed(error + "; fix: make the file readable and rerun rollback");
    }
    if (!current) {
      s = state::missing;
    } else if (*current == *original) {
      s = state::original;
    } else if (current->size() == e.after_size && hex64(fnv1a64(*current)) == e.after_fnv1a64) {
      s = state::patched;
    }
    if (!options.force && (s == state::edited || s == state::missing)) {
      refusals += refusals.empty() ? "" : "; ";
      refusals += quoted(e.path) + (s == state::missing
                                        ? ": was deleted since the patch was applied"
                                        : ": was edited since the patch was applied (it holds "
                                          "neither the patched nor the original content)");
    }
    originals.push_back(std::move(*original));
    states.push_back(s);
  }
  if (!refusals.empty()) {
    return failed(refusals +
                  "; nothing was restored; fix: keep your edits elsewhere and roll back "
                  "with force, or take the originals from " +
                  quoted(backup_dir / "files"));
  }

  // 2. Restore.
  source_patch_result result;
  for (std::size_t i = 0; i < entries->size(); ++i) {
    const backup_entry& e = (*entries)[i];
    if (states[i] == state::original) {
      std::string mode_error;
      const std::optional<unsigned> mode = mode_of(e.path, mode_error);
      if (mode && *mode != e.mode) {
        ::chmod(e.path.c_str(), static_cast<mode_t>(e.mode));
      }
      result.unchanged.push_back(e.path);
      continue;
    }
    if (!replace_atomically(e.path, originals[i], e.mode, error)) {
      result.error = error + " (restored so far: " + plural(result.changed.size(), "file") +
                     "); fix: correct that and rerun rollback, which skips the files already "
                     "restored";
      return result;
    }
    result.changed.push_back(e.path);
  }
  result.ok = true;
  if (result.changed.empty()) {
    result.message = "every file backed up in " + quoted(backup_dir) + " (" +
                     std::to_string(result.unchanged.size()) +
                     ") already holds its original content; nothing to restore";
  } else {
    result.message = "restored " + plural(result.changed.size(), "file") + " from " +
                     quoted(backup_dir) +
                     (result.unchanged.empty()
                          ? std::string()
                          : "; " + std::to_string(result.unchanged.size()) + " already original");
  }
  return result;
}

} // namespace rpl::workers
