#include "stages/capture/aql_dispatch.hpp"

#include <cstring>

namespace rpl::stages::capture {

namespace {

template <class T> T read_at(std::span<const std::uint8_t> bytes, std::size_t offset) {
  T value{};
  std::memcpy(&value, bytes.data() + offset, sizeof value);
  return value;
}

template <class T> void write_at(std::array<std::uint8_t, 64>& bytes, std::size_t offset, T value) {
  std::memcpy(bytes.data() + offset, &value, sizeof value);
}

} // namespace

std::array<std::uint32_t, 3> aql_dispatch::workgroups() const {
  std::array<std::uint32_t, 3> out{1, 1, 1};
  for (int i = 0; i < 3; ++i) {
    out[i] = (grid[i] + workgroup[i] - 1) / workgroup[i];
  }
  return out;
}

bool is_kernel_dispatch(std::span<const std::uint8_t> packet) {
  return packet.size() == 64 &&
         (read_at<std::uint16_t>(packet, 0) & 0xff) == aql_kernel_dispatch_type;
}

aql_dispatch decode_aql_dispatch(std::span<const std::uint8_t> packet) {
  if (packet.size() != 64) {
    throw capture_error("an AQL packet of " + std::to_string(packet.size()) +
                        " bytes (they are 64); fix: pass one whole packet");
  }
  aql_dispatch d;
  d.header = read_at<std::uint16_t>(packet, 0);
  if ((d.header & 0xff) != aql_kernel_dispatch_type) {
    throw capture_error("AQL packet type " + std::to_string(d.header & 0xff) +
                        " is not a kernel dispatch (2)");
  }
  d.setup = read_at<std::uint16_t>(packet, 2);
  for (int i = 0; i < 3; ++i) {
    d.workgroup[i] = read_at<std::uint16_t>(packet, 4 + 2 * i);
    d.grid[i] = read_at<std::uint32_t>(packet, 12 + 4 * i);
  }
  d.private_segment_size = read_at<std::uint32_t>(packet, 24);
  d.group_segment_size = read_at<std::uint32_t>(packet, 28);
  d.kernel_object = read_at<std::uint64_t>(packet, 32);
  d.kernarg_address = read_at<std::uint64_t>(packet, 40);
  d.completion_signal = read_at<std::uint64_t>(packet, 56);
  if (d.dimensions() < 1) {
    throw capture_error("an AQL kernel dispatch with 0 dimensions (setup " +
                        std::to_string(d.setup) + ")");
  }
  for (int i = 0; i < 3; ++i) {
    if (d.workgroup[i] == 0 || d.grid[i] == 0) {
      throw capture_error(
          "an AQL kernel dispatch with a zero grid or workgroup size in dimension " +
          std::to_string(i));
    }
  }
  return d;
}

std::array<std::uint8_t, 64> encode_aql_dispatch(const aql_dispatch& d) {
  std::array<std::uint8_t, 64> bytes{};
  write_at(bytes, 0, d.header);
  write_at(bytes, 2, d.setup);
  for (int i = 0; i < 3; ++i) {
    write_at(bytes, 4 + 2 * i, d.workgroup[i]);
    write_at(bytes, 12 + 4 * i, d.grid[i]);
  }
  write_at(bytes, 24, d.private_segment_size);
  write_at(bytes, 28, d.group_segment_size);
  write_at(bytes, 32, d.kernel_object);
  write_at(bytes, 40, d.kernarg_address);
  write_at(bytes, 56, d.completion_signal);
  return bytes;
}

dispatch_manifest hsa_manifest(const aql_dispatch& packet,
                               const stages::kernel_metadata& kernel,
                               const std::string& arch) {
  if (packet.group_segment_size < kernel.group_segment_fixed_size) {
    throw capture_error("the dispatch of " + kernel.name + " gives " +
                        std::to_string(packet.group_segment_size) +
                        " bytes of LDS, less than the kernel's static " +
                        std::to_string(kernel.group_segment_fixed_size));
  }
  if (kernel.kernarg_segment_size > 0 && kernel.args.empty()) {
    throw capture_error("the code object's metadata for " + kernel.name +
                        " has a kernarg segment but no argument layout");
  }
  dispatch_manifest m;
  m.backend = "hsa";
  m.kernel = kernel.name;
  m.arch = arch;
  m.device_name = arch;
  m.grid = packet.workgroups();
  m.block = {packet.workgroup[0], packet.workgroup[1], packet.workgroup[2]};
  m.dynamic_shared_bytes =
      static_cast<std::uint32_t>(packet.group_segment_size - kernel.group_segment_fixed_size);
  for (const auto& a : kernel.args) {
    if (a.size > 0) {
      m.params.push_back(
          {static_cast<std::uint32_t>(a.offset), static_cast<std::uint32_t>(a.size)});
    }
  }
  m.code_object_file = "kernel.hsaco";
  return m;
}

} // namespace rpl::stages::capture
