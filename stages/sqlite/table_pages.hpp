#pragma once
/// A table's rows read straight from the database file's B-tree pages (SQLite's file format,
/// sqlite.org/fileformat2.html, sections 1.6 and 2.1), for scans of millions of small rows where
/// SQLite's per-row virtual machine costs several times what the caller does with a row (rocpd's
/// counter values: 21 rows per kernel dispatch). Integer and real columns only. Where only SQLite
/// reads the file right, open() gives nullopt or a row throws `unreadable`, and the caller reads
/// with SQL instead: a write-ahead log or a journal beside the file, a header it does not know, a
/// row spilling to overflow pages or shorter than the columns asked (added by ALTER TABLE), a text
/// or blob value in a column asked, a damaged tree. Every offset is checked against the page.

#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "stages/sqlite/sqlite_statement.hpp"

namespace rpl::stages::sqlite {

class table_pages {
public:
  /// A row or page only SQLite reads right (see above).
  struct unreadable : std::exception {
    const char* what() const noexcept override { return "row not readable from the pages"; }
  };

  /// Opens `path` read-only and lists the leaf pages of `table` in rowid order (its root page
  /// from `db`'s sqlite_master; the interior pages read, the leaves only by the cursors). `db`,
  /// opened on the same file, must hold a read transaction for as long as rows are read (in
  /// rollback-journal mode no writer commits meanwhile). nullopt where the file needs SQLite (see
  /// above).
  static std::optional<table_pages>
  open(connection& db, const std::filesystem::path& path, const std::string& table);

  table_pages(table_pages&& other) noexcept;
  table_pages& operator=(table_pages&& other) noexcept;
  table_pages(const table_pages&) = delete;
  table_pages& operator=(const table_pages&) = delete;
  ~table_pages();

  std::size_t leaves() const { return leaves_.size(); }
  std::uint32_t page_bytes() const { return page_size_; }
  /// The rowid of the first row of leaf `leaf` (< leaves()). Throws unreadable.
  std::int64_t first_rowid(std::size_t leaf) const;

  /// One column's value as SQLite stores it.
  struct value {
    enum class type : std::uint8_t { null, integer, real } kind = type::null;
    std::int64_t integer = 0;
    double real = 0;
  };

  /// The rows from leaf `leaf` on, in rowid order to the table's end, with the columns at
  /// `columns` (indices in the table's declaration; a rowid alias column reads as NULL there, its
  /// value is rowid()). Any number of cursors may read one table_pages at once, each with its own
  /// buffer: runs of consecutive leaf pages are read with one pread each (up to 1 MiB; no mapping:
  /// memory stays at the buffer's size whatever the table's).
  class cursor {
  public:
    /// `buffer`: one an earlier cursor gave back (take_buffer), to read into without allocating
    /// and faulting in a fresh one per cursor.
    cursor(const table_pages& pages,
           std::size_t leaf,
           std::vector<int> columns,
           std::vector<std::uint8_t> buffer = {});

    /// The read buffer, for the next cursor; this one is spent.
    std::vector<std::uint8_t> take_buffer() {
      page_ = block_ = nullptr;
      block_pages_ = 0;
      leaf_ = pages_.leaves_.size();
      return std::move(buffer_);
    }

    /// The next row: false past the table's last. Throws unreadable.
    bool next();
    std::int64_t rowid() const { return rowid_; }
    const value& column(std::size_t i) const { return values_[i]; }

  private:
    const table_pages& pages_;
    std::vector<std::uint8_t> buffer_;    ///< its size only grows: the largest run read so far
    const std::uint8_t* block_ = nullptr; ///< the pages held (in buffer_)
    std::uint32_t block_first_ = 0;       ///< the first page held
    std::size_t block_pages_ = 0;
    std::size_t leaf_;
    std::size_t cell_ = 0;
    std::size_t cells_ = 0;
    const std::uint8_t* page_ = nullptr;
    const std::uint8_t* pointers_ = nullptr;
    std::vector<int> columns_;
    std::vector<int> asked_; ///< by column index: its index in columns_, or -1
    int last_column_ = 0;
    std::int64_t rowid_ = 0;
    std::vector<value> values_;
    bool enter_leaf();
  };

private:
  table_pages() = default;
  /// Reads `count` pages from page `first` (1-based) into `into`. Throws unreadable.
  void read(std::uint32_t first, std::size_t count, std::uint8_t* into) const;
  /// Adds the leaves under `page_number`; the leaves' depth is found on the leftmost path, and
  /// pages at that depth are not read here (the cursors check them).
  void collect_leaves(std::uint32_t page_number, int depth, int& leaf_depth);

  int fd_ = -1;
  std::size_t size_ = 0;
  std::uint32_t page_size_ = 0;
  std::uint32_t usable_ = 0; ///< page size less the reserved bytes
  std::vector<std::uint32_t> leaves_;
};

} // namespace rpl::stages::sqlite
