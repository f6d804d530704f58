#include "stages/sqlite/table_pages.hpp"

#include <algorithm>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>
#include <utility>

namespace rpl::stages::sqlite {

namespace {

std::uint32_t be16(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) << 8 | p[1];
}
std::uint32_t be32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) << 24 | static_cast<std::uint32_t>(p[1]) << 16 |
         static_cast<std::uint32_t>(p[2]) << 8 | p[3];
}

/// The varint at `p` (1 to 9 bytes, none at or past `end`); `p` moves past it.
inline std::uint64_t varint(const std::uint8_t*& p, const std::uint8_t* end) {
  if (p < end && *p < 0x80) // one byte: most serial types and small sizes
    return *p++;
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) {
    if (p >= end)
      throw table_pages::unreadable{};
    const std::uint8_t b = *p++;
    v = v << 7 | (b & 0x7f);
    if ((b & 0x80) == 0)
      return v;
  }
  if (p >= end)
    throw table_pages::unreadable{};
  return v << 8 | *p++;
}

/// The bytes a value of serial type `t` takes in a record.
inline std::size_t serial_length(std::uint64_t t) {
  static constexpr std::size_t fixed[] = {0, 1, 2, 3, 4, 6, 8, 8, 0, 0};
  if (t < 10)
    return fixed[t];
  if (t < 12)
    throw table_pages::unreadable{}; // reserved
  return static_cast<std::size_t>((t - 12) / 2);
}

/// The big-endian value of the `n` bytes at `p` (1 to 8), read with whole loads where they fit.
inline std::uint64_t big_endian(const std::uint8_t* p, std::size_t n) {
  switch (n) {
  case 1: return p[0];
  case 2: return be16(p);
  case 3: return std::uint64_t{be16(p)} << 8 | p[2];
  case 4: return be32(p);
  case 6: return std::uint64_t{be16(p)} << 32 | be32(p + 2);
  default: {
    std::uint64_t bits = 0;
    std::memcpy(&bits, p, sizeof bits);
    return __builtin_bswap64(bits);
  }
  }
}

/// The value of serial type `t` at `p` (an integer or real; text and blobs are unreadable).
inline table_pages::value decode(std::uint64_t t, const std::uint8_t* p) {
  table_pages::value v;
  if (t - 1 < 6) {
    // A big-endian two's-complement integer of 1, 2, 3, 4, 6 or 8 bytes, sign-extended.
    const std::size_t n = serial_length(t);
    const unsigned shift = static_cast<unsigned>(64 - 8 * n);
    v.kind = table_pages::value::type::integer;
    v.integer = static_cast<std::int64_t>(big_endian(p, n) << shift) >> shift;
    return v;
  }
  switch (t) {
  case 0: return v;
  case 7: {
    const std::uint64_t bits = big_endian(p, 8);
    v.kind = table_pages::value::type::real;
    std::memcpy(&v.real, &bits, sizeof v.real);
    return v;
  }
  case 8:
  case 9:
    v.kind = table_pages::value::type::integer;
    v.integer = static_cast<std::int64_t>(t - 8);
    return v;
  default: throw table_pages::unreadable{};
  }
}

bool holds_data(const std::filesystem::path& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  return !ec && size > 0;
}

} // namespace

std::optional<table_pages>
table_pages::open(connection& db, const std::filesystem::path& path, const std::string& table) {
  // A write-ahead log or a journal may hold what the file itself does not (yet).
  if (holds_data(path.string() + "-wal") || holds_data(path.string() + "-journal"))
    return std::nullopt;
  std::int64_t root = 0;
  {
    statement find(db, "SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = ?1");
    find.bind_text(1, table);
    if (!find.step())
      return std::nullopt;
    root = find.column_int64(0);
  }
  table_pages pages;
  pages.fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat info {};
  if (pages.fd_ < 0 || fstat(pages.fd_, &info) != 0 || info.st_size < 512)
    return std::nullopt;
  pages.size_ = static_cast<std::size_t>(info.st_size);
  std::uint8_t header[100];
  if (pread(pages.fd_, header, sizeof header, 0) != static_cast<ssize_t>(sizeof header) ||
      std::memcmp(header, "SQLite format 3", 16) != 0)
    return std::nullopt;
  pages.page_size_ = be16(header + 16) == 1 ? 65536 : be16(header + 16);
  if (pages.page_size_ < 512 || (pages.page_size_ & (pages.page_size_ - 1)) != 0 ||
      header[20] > pages.page_size_ - 480)
    return std::nullopt;
  pages.usable_ = pages.page_size_ - header[20];
  if (root <= 0 || static_cast<std::uint64_t>(root) > pages.size_ / pages.page_size_)
    return std::nullopt;
  try {
    int leaf_depth = -1;
    pages.collect_leaves(static_cast<std::uint32_t>(root), 0, leaf_depth);
  } catch (const unreadable&) {
    return std::nullopt;
  }
  return pages;
}

table_pages::table_pages(table_pages&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), size_(other.size_), page_size_(other.page_size_),
      usable_(other.usable_), leaves_(std::move(other.leaves_)) {}

table_pages& table_pages::operator=(table_pages&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = other.size_;
    page_size_ = other.page_size_;
    usable_ = other.usable_;
    leaves_ = std::move(other.leaves_);
  }
  return *this;
}

table_pages::~table_pages() {
  if (fd_ >= 0)
    ::close(fd_);
}

void table_pages::read(std::uint32_t first, std::size_t count, std::uint8_t* into) const {
  if (first == 0 || (static_cast<std::uint64_t>(first) - 1 + count) * page_size_ > size_)
    throw unreadable{};
  std::size_t done = 0;
  const std::size_t bytes = count * page_size_;
  const auto offset = static_cast<off_t>(static_cast<std::uint64_t>(first - 1) * page_size_);
  while (done < bytes) {
    const ssize_t n = pread(fd_, into + done, bytes - done, offset + static_cast<off_t>(done));
    if (n <= 0)
      throw unreadable{};
    done += static_cast<std::size_t>(n);
  }
}

void table_pages::collect_leaves(std::uint32_t page_number, int depth, int& leaf_depth) {
  // A tree deeper than 40 or with more leaves than pages is a loop: the file is damaged.
  if (depth > 40 || leaves_.size() > size_ / page_size_)
    throw unreadable{};
  if (depth == leaf_depth) {
    leaves_.push_back(page_number);
    return;
  }
  std::vector<std::uint8_t> buffer(page_size_);
  read(page_number, 1, buffer.data());
  const std::uint8_t* p = buffer.data();
  const std::uint8_t* h = p + (page_number == 1 ? 100 : 0);
  if (h[0] == 0x0D) { // a table leaf: every leaf is at this depth
    if (leaf_depth >= 0)
      throw unreadable{};
    leaf_depth = depth;
    leaves_.push_back(page_number);
    return;
  }
  if (h[0] != 0x05) // not a table interior page (an index: a WITHOUT ROWID table)
    throw unreadable{};
  const std::uint32_t cells = be16(h + 3);
  const std::uint8_t* pointers = h + 12;
  if (pointers + 2 * std::size_t{cells} > p + usable_)
    throw unreadable{};
  for (std::uint32_t i = 0; i < cells; ++i) {
    const std::uint32_t offset = be16(pointers + 2 * i);
    if (offset + 4 > usable_)
      throw unreadable{};
    collect_leaves(be32(p + offset), depth + 1, leaf_depth);
  }
  collect_leaves(be32(h + 8), depth + 1, leaf_depth);
}

std::int64_t table_pages::first_rowid(std::size_t leaf) const {
  const std::uint32_t number = leaves_.at(leaf);
  std::vector<std::uint8_t> buffer(page_size_);
  read(number, 1, buffer.data());
  const std::uint8_t* p = buffer.data();
  const std::uint8_t* h = p + (number == 1 ? 100 : 0);
  if (h[0] != 0x0D || be16(h + 3) == 0)
    throw unreadable{};
  const std::uint32_t offset = be16(h + 8);
  if (offset >= usable_)
    throw unreadable{};
  const std::uint8_t* cell = p + offset;
  varint(cell, p + usable_); // the payload's size
  return static_cast<std::int64_t>(varint(cell, p + usable_));
}

table_pages::cursor::cursor(const table_pages& pages,
                            std::size_t leaf,
                            std::vector<int> columns,
                            std::vector<std::uint8_t> buffer)
    : pages_(pages), buffer_(std::move(buffer)), leaf_(leaf), columns_(std::move(columns)),
      values_(columns_.size()) {
  for (const int c : columns_)
    last_column_ = std::max(last_column_, c);
  asked_.assign(static_cast<std::size_t>(last_column_) + 1, -1);
  for (std::size_t i = 0; i < columns_.size(); ++i)
    asked_[static_cast<std::size_t>(columns_[i])] = static_cast<int>(i);
}

bool table_pages::cursor::enter_leaf() {
  const std::vector<std::uint32_t>& leaves = pages_.leaves_;
  if (leaf_ >= leaves.size())
    return false;
  const std::uint32_t number = leaves[leaf_];
  if (number < block_first_ || number - block_first_ >= block_pages_) {
    // The run of consecutive pages the next leaves are (a table written in one go is mostly
    // one), up to 1 MiB, in one read (mapping them instead cost more here: a fault or a page
    // table fill per page, and the unmapping).
    std::size_t run = 1;
    const std::size_t most = (std::size_t{1} << 20) / pages_.page_size_;
    while (run < most && leaf_ + run < leaves.size() && leaves[leaf_ + run] == number + run)
      ++run;
    if (buffer_.size() < run * pages_.page_size_)
      buffer_.resize(run * pages_.page_size_);
    pages_.read(number, run, buffer_.data());
    block_ = buffer_.data();
    block_first_ = number;
    block_pages_ = run;
  }
  page_ = block_ + static_cast<std::size_t>(number - block_first_) * pages_.page_size_;
  const std::uint8_t* h = page_ + (number == 1 ? 100 : 0);
  if (h[0] != 0x0D)
    throw unreadable{};
  cells_ = be16(h + 3);
  pointers_ = h + 8;
  if (pointers_ + 2 * cells_ > page_ + pages_.usable_)
    throw unreadable{};
  cell_ = 0;
  return true;
}

bool table_pages::cursor::next() {
  while (page_ == nullptr || cell_ >= cells_) {
    if (page_ != nullptr)
      ++leaf_;
    if (!enter_leaf())
      return false;
  }
  const std::uint8_t* end = page_ + pages_.usable_;
  const std::uint32_t offset = be16(pointers_ + 2 * cell_++);
  if (offset >= pages_.usable_)
    throw unreadable{};
  const std::uint8_t* p = page_ + offset;
  const std::uint64_t payload = varint(p, end);
  rowid_ = static_cast<std::int64_t>(varint(p, end));
  // More than U - 35 bytes spill to overflow pages (the file format's rule for table leaves).
  if (payload > pages_.usable_ - 35 || payload > static_cast<std::uint64_t>(end - p))
    throw unreadable{};
  const std::uint8_t* record_end = p + payload;
  const std::uint8_t* types = p;
  const std::uint64_t header = varint(types, record_end);
  if (header > payload)
    throw unreadable{};
  const std::uint8_t* types_end = p + header;
  const std::uint8_t* data = types_end;
  for (int c = 0; c <= last_column_; ++c) {
    if (types >= types_end)
      throw unreadable{}; // a row shorter than the table: its defaults are SQLite's to give
    const std::uint64_t t = varint(types, types_end);
    const std::size_t length = serial_length(t);
    if (length > static_cast<std::size_t>(record_end - data))
      throw unreadable{};
    if (const int i = asked_[static_cast<std::size_t>(c)]; i >= 0)
      values_[static_cast<std::size_t>(i)] = decode(t, data);
    data += length;
  }
  return true;
}

} // namespace rpl::stages::sqlite
