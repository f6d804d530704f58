#pragma once
/// Writing an accepted optimization into the user's source files, and taking it back. Before any
/// file changes, every original is copied byte for byte into a backup folder with a manifest
/// (manifest.json: path, mode, size and FNV-1a hash of the content before and after); each file is
/// then replaced atomically (a temporary file in the same folder, fsync, rename, the mode kept).
/// All or nothing: when one file cannot be written, those already written are put back.

#include <filesystem>
#include <string>
#include <vector>

namespace rpl::workers {

/// One file to change: the bytes the run read from it and the bytes to leave in it.
struct file_change {
  std::filesystem::path path;
  std::string expected_before; ///< refused unless the file still holds exactly these bytes
  std::string after;
};

/// What apply_with_backup or rollback did. `ok` false leaves every file as it was found (or, when
/// even restoring failed, says so in `error` with the backup to restore from).
struct source_patch_result {
  bool ok = false;
  std::string error;   ///< when not ok: the file, what is wrong, and a fix
  std::string message; ///< when ok: one line for the user ("patched 2 files; backup in ...")
  std::vector<std::filesystem::path> changed;   ///< files written (patched or restored)
  std::vector<std::filesystem::path> unchanged; ///< rollback: files that already were original
};

/// Checks that every file still holds its `expected_before`, backs each up into `backup_dir`
/// (created; refused if it already holds a backup), then writes every `after`. Paths are resolved
/// through symbolic links; the files must exist and be listed once each.
source_patch_result apply_with_backup(const std::vector<file_change>& changes,
                                      const std::filesystem::path& backup_dir);

struct rollback_options {
  /// Restore files even when they hold neither the patched nor the original content (the user
  /// edited them since; those edits are lost) or were deleted.
  bool force = false;
};

/// Puts back every file recorded in `backup_dir`'s manifest, byte for byte with its mode. Refuses
/// (changing nothing) when a file was edited since the patch, unless `options.force`. Idempotent:
/// files already original are left alone and listed in `unchanged`.
source_patch_result rollback(const std::filesystem::path& backup_dir,
                             const rollback_options& options = {});

} // namespace rpl::workers
