#include "workers/lanes/kernel/process/device_buffers.hpp"

#include <array>
#include <cstring>

namespace rpl::workers::kernel_process {

namespace {

/// Host bytes for one slot's two zones as read back (the front zone grows with the offset).
constexpr std::size_t host_zone_bytes =
    2 * device_buffers::red_zone_bytes + device_buffers::max_offset_bytes;

} // namespace

std::byte red_zone_byte(std::size_t position) {
  // Neither zeros, ones, a small integer nor a common float: a stray write of any value a kernel
  // computes is unlikely to leave it unchanged.
  static constexpr std::array<unsigned char, 8> pattern{0xa5, 0x5a, 0xc3, 0x3c,
                                                        0x96, 0x69, 0xf0, 0x0f};
  return static_cast<std::byte>(pattern[position % pattern.size()]);
}

namespace {

/// The pattern from allocation offset 0 on, long enough for any zone at any phase of it.
const std::array<std::byte, host_zone_bytes + 8>& pattern_bytes() {
  static const auto bytes = [] {
    std::array<std::byte, host_zone_bytes + 8> b{};
    for (std::size_t i = 0; i < b.size(); ++i)
      b[i] = red_zone_byte(i);
    return b;
  }();
  return bytes;
}

/// `bytes` read back from allocation offset `position` on still hold the pattern.
bool zone_intact(const std::byte* zone, std::size_t position, std::size_t bytes) {
  return std::memcmp(zone, pattern_bytes().data() + position % 8, bytes) == 0;
}

} // namespace

device_buffers::~device_buffers() {
  release_all();
}

std::size_t device_buffers::front_bytes(const slot& s) const {
  return red_zones_ ? red_zone_bytes + s.offset : 0;
}

std::size_t device_buffers::allocation_bytes(std::size_t bytes) const {
  // Without red zones, exactly the buffer: a sanitizer must see its true end.
  return red_zones_ ? bytes + 2 * red_zone_bytes + max_offset_bytes : bytes;
}

void device_buffers::release(slot& s) {
  if (s.base != 0)
    api_.release(s.base);
  if (s.host != nullptr)
    api_.release_host(s.host);
  s = slot{};
}

void device_buffers::release_all() {
  for (slot& s : slots_)
    release(s);
}

device_status device_buffers::fill_zones(slot& s) {
  if (!red_zones_)
    return std::nullopt;
  const std::size_t front = front_bytes(s);
  std::array<std::byte, host_zone_bytes> zone{};
  for (std::size_t i = 0; i < front; ++i)
    zone[i] = red_zone_byte(i);
  if (device_status error = api_.copy_to_device(s.base, zone.data(), front))
    return error;
  const std::size_t back = front + s.bytes;
  for (std::size_t i = 0; i < red_zone_bytes; ++i)
    zone[i] = red_zone_byte(back + i);
  return api_.copy_to_device(s.base + back, zone.data(), red_zone_bytes);
}

device_status device_buffers::prepare(const std::vector<messages::kernel_arg>& args,
                                      std::uint32_t offset_bytes,
                                      std::uint32_t& allocations) {
  for (std::size_t i = args.size(); i < slots_.size(); ++i)
    release(slots_[i]);
  slots_.resize(args.size());
  for (std::size_t i = 0; i < args.size(); ++i) {
    const bool buffer = args[i].kind == messages::kernel_arg_kind::buffer;
    const std::size_t bytes = buffer ? args[i].count * messages::element_size(args[i].type) : 0;
    slot& s = slots_[i];
    if (s.bytes == bytes && (s.offset == offset_bytes || bytes == 0))
      continue;
    if (s.bytes != bytes) {
      release(s);
      if (bytes == 0)
        continue;
      if (device_status error = api_.allocate(allocation_bytes(bytes), s.base))
        return error;
      s.bytes = bytes;
      ++allocations;
      if (red_zones_)
        if (device_status error = api_.allocate_host(host_zone_bytes, s.host))
          return error;
    }
    s.offset = offset_bytes;
    if (device_status error = fill_zones(s))
      return error;
  }
  return std::nullopt;
}

device_pointer device_buffers::pointer(std::size_t index) const {
  if (index >= slots_.size() || slots_[index].base == 0)
    return 0;
  return slots_[index].base + front_bytes(slots_[index]);
}

device_status device_buffers::queue_red_zones() {
  if (!red_zones_)
    return std::nullopt;
  for (slot& s : slots_) {
    s.queued = false;
    if (s.base == 0)
      continue;
    auto* host = static_cast<std::byte*>(s.host);
    const std::size_t front = front_bytes(s);
    if (device_status error = api_.copy_to_host_queued(host, s.base, front))
      return error;
    if (device_status error =
            api_.copy_to_host_queued(host + front, s.base + front + s.bytes, red_zone_bytes))
      return error;
    s.queued = true;
  }
  return std::nullopt;
}

std::optional<messages::kernel_red_zone_violation>
device_buffers::check_red_zones(const std::vector<messages::kernel_arg>& args) {
  std::optional<messages::kernel_red_zone_violation> first;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    slot& s = slots_[i];
    if (!s.queued)
      continue;
    s.queued = false;
    const auto* host = static_cast<const std::byte*>(s.host);
    const std::size_t front = front_bytes(s);
    if (zone_intact(host, 0, front) && zone_intact(host + front, front + s.bytes, red_zone_bytes))
      continue; // the common case, at memcmp speed; the byte-wise scan below only on a change
    std::uint64_t changed = 0;
    std::optional<std::int64_t> where;
    // The byte nearest the buffer first: the back zone upwards, then the front zone downwards.
    for (std::size_t j = 0; j < red_zone_bytes; ++j) {
      if (host[front + j] != red_zone_byte(front + s.bytes + j)) {
        ++changed;
        if (!where)
          where = static_cast<std::int64_t>(s.bytes + j);
      }
    }
    std::optional<std::size_t> nearest_front; // the lowest byte of the run nearest the buffer
    for (std::size_t j = front; j-- > 0;) {
      if (host[j] != red_zone_byte(j)) {
        ++changed;
        if (!nearest_front || *nearest_front == j + 1)
          nearest_front = j;
      }
    }
    if (!where && nearest_front) // named by the element's first byte: out[-1] is 4 bytes before
      where = static_cast<std::int64_t>(*nearest_front) - static_cast<std::int64_t>(front);
    if (changed == 0)
      continue;
    fill_zones(s); // the next launch starts from clean zones (a failure shows as a new violation)
    if (!first) {  // the first buffer with a change is named
      messages::kernel_red_zone_violation v;
      v.buffer = i < args.size() ? args[i].name : "args[" + std::to_string(i) + "]";
      v.side = *where < 0 ? "before" : "after";
      v.offset = *where;
      v.changed = changed;
      first = v;
    }
  }
  return first;
}

} // namespace rpl::workers::kernel_process
