#pragma once
/// Device memory for a launch's buffer arguments, kept across candidates: a buffer is allocated
/// again only when its size changes, so measuring candidate after candidate of one launch file
/// allocates nothing (each reply counts what it allocated).
///
/// Red zones: every buffer sits between two guard bands of `red_zone_bytes`, filled with a
/// pattern (anchored at the allocation, so it reads the same whatever the offset). A kernel that
/// writes past either end of a buffer, even while every element inside it is right, changes a
/// byte of the pattern; check_red_zones() finds the first such byte after the zones were read back
/// (queue_red_zones(), in order with the launches). The zones keep the buffer's alignment (the
/// front zone is a multiple of 256 bytes) unless the launch asks for an offset. They are refilled
/// after a violation, and when the offset moves the buffer.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "messages/kernel_lane.hpp"
#include "workers/lanes/kernel/process/device_api.hpp"

namespace rpl::workers::kernel_process {

class device_buffers {
public:
  static constexpr std::size_t red_zone_bytes = 4096;
  /// The largest offset_bytes a launch may ask for (the slack allocated past the back zone).
  static constexpr std::uint32_t max_offset_bytes = 256;

  /// `red_zones`: allocate and check the guard bands (off: the buffers alone, exact sizes, as a
  /// sanitizer needs them to see an access past the end).
  device_buffers(device_api& api, bool red_zones) : api_(api), red_zones_(red_zones) {}
  ~device_buffers();
  device_buffers(const device_buffers&) = delete;
  device_buffers& operator=(const device_buffers&) = delete;

  bool red_zones() const { return red_zones_; }

  /// One allocation per buffer argument, by argument index (scalars hold none), each buffer
  /// `offset_bytes` past its aligned start (with red zones only: without, the lane refuses an
  /// offset). Adds the allocations it made to `allocations`. On
  /// failure, what was allocated stays for next time.
  device_status prepare(const std::vector<messages::kernel_arg>& args,
                        std::uint32_t offset_bytes,
                        std::uint32_t& allocations);
  /// The device address of buffer argument `index` (0 for a scalar).
  device_pointer pointer(std::size_t index) const;
  /// Frees everything, e.g. before retrying an allocation that did not fit.
  void release_all();

  /// Queues a copy of every red zone into page-locked host memory, behind the work queued so far
  /// (nothing without red zones). Read them with check_red_zones() once that work is done.
  device_status queue_red_zones();
  /// The first changed byte of the zones read back last (nullopt: none changed), naming the
  /// buffer by `args`; a changed zone is filled again for the next launch.
  std::optional<messages::kernel_red_zone_violation>
  check_red_zones(const std::vector<messages::kernel_arg>& args);

private:
  struct slot {
    device_pointer base = 0;  ///< the allocation
    std::size_t bytes = 0;    ///< the buffer's size
    std::uint32_t offset = 0; ///< the buffer's start past the front zone
    void* host = nullptr;     ///< page-locked: the two zones as read back, front then back
    bool queued = false;      ///< the zones were queued for reading back
  };
  std::size_t front_bytes(const slot& s) const;
  std::size_t allocation_bytes(std::size_t bytes) const;
  device_status fill_zones(slot& s);
  void release(slot& s);

  device_api& api_;
  bool red_zones_ = true;
  std::vector<slot> slots_;
};

/// The pattern byte at `position` bytes from an allocation's start.
std::byte red_zone_byte(std::size_t position);

} // namespace rpl::workers::kernel_process
