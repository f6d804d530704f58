#include "stages/search/candidate_key.hpp"

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>

namespace rpl::stages {

namespace {

constexpr std::uint64_t fnv_prime = 0x100000001b3ULL;
constexpr std::uint64_t fnv_offset_basis = 0xcbf29ce484222325ULL;
// Any other odd constant serves as the second basis; this one is the fractional part of pi.
constexpr std::uint64_t second_offset_basis = 0x243f6a8885a308d3ULL;

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t fnv1a(std::string_view bytes, std::uint64_t basis) {
  std::uint64_t hash = basis;
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= fnv_prime;
  }
  return hash;
}

void append_hex(std::string& out, std::uint64_t value) {
  static constexpr char digits[] = "0123456789abcdef";
  for (int shift = 60; shift >= 0; shift -= 4) {
    out += digits[(value >> shift) & 0xf];
  }
}

// Netstring-style: the length, a colon, the bytes. The length tells where the bytes end, so no
// choice of contents can imitate a field boundary.
void append_field(std::string& out, std::string_view bytes) {
  out += std::to_string(bytes.size());
  out += ':';
  out += bytes;
}

void append_list(std::string& out, std::string_view tag, const std::vector<std::string>& items) {
  append_field(out, tag);
  append_field(out, std::to_string(items.size()));
  for (const std::string& item : items) {
    append_field(out, item);
  }
}

void append_pairs(std::string& out,
                  std::string_view tag,
                  const std::vector<std::pair<std::string, std::string>>& items) {
  append_field(out, tag);
  append_field(out, std::to_string(items.size()));
  for (const auto& [first, second] : items) {
    append_field(out, first);
    append_field(out, second);
  }
}

} // namespace

std::string content_hash(std::string_view bytes) {
  // The length is mixed in as well so that the two halves never agree by construction, and the
  // final mix spreads FNV's weak high bits over the whole word.
  const auto length = static_cast<std::uint64_t>(bytes.size());
  const std::uint64_t first = splitmix64(fnv1a(bytes, fnv_offset_basis) ^ length);
  const std::uint64_t second = splitmix64(fnv1a(bytes, second_offset_basis) + splitmix64(length));
  std::string hex;
  hex.reserve(32);
  append_hex(hex, first);
  append_hex(hex, second);
  return hex;
}

std::string wide_hash(std::string_view bytes) {
  constexpr std::uint64_t k1 = 0x9e3779b185ebca87ULL;
  constexpr std::uint64_t k2 = 0xc2b2ae3d27d4eb4fULL;
  constexpr std::size_t width = 8;
  std::array<std::uint64_t, width> lanes{};
  for (std::size_t k = 0; k < width; ++k)
    lanes[k] = splitmix64(second_offset_basis + k);
  const auto round = [](std::uint64_t acc, std::uint64_t word) {
    return std::rotl(acc + word * k2, 31) * k1;
  };
  const auto word_at = [&bytes](std::size_t offset) {
    std::uint64_t word = 0;
    std::memcpy(&word, bytes.data() + offset,
                sizeof word); // little-endian hosts only (x86-64, arm64)
    return word;
  };
  const std::size_t words = bytes.size() / 8;
  std::size_t w = 0;
  for (; w + width <= words; w += width)
    for (std::size_t k = 0; k < width; ++k)
      lanes[k] = round(lanes[k], word_at(8 * (w + k)));
  for (; w < words; ++w)
    lanes[w % width] = round(lanes[w % width], word_at(8 * w));
  const auto length = static_cast<std::uint64_t>(bytes.size());
  const std::uint64_t tail = fnv1a(bytes.substr(8 * words), fnv_offset_basis);
  std::uint64_t first = splitmix64(length);
  std::uint64_t second = splitmix64(tail ^ length);
  for (std::size_t k = 0; k < width; ++k) {
    first = splitmix64(first ^ lanes[k]);
    second = splitmix64(second + lanes[width - 1 - k]);
  }
  first = splitmix64(first ^ tail);
  std::string hex;
  hex.reserve(32);
  append_hex(hex, first);
  append_hex(hex, second);
  return hex;
}

std::string candidate_key(const key_inputs& inputs) {
  std::string serialized;
  // A version tag lets a future change of the serialization produce new keys instead of silently
  // reusing results cached under the old meaning.
  append_field(serialized, "rpl-candidate-key-v1");
  append_pairs(serialized, "sources", inputs.sources);
  append_list(serialized, "build_argv", inputs.build_argv);
  append_field(serialized, "toolchain_id");
  append_field(serialized, inputs.toolchain_id);
  append_list(serialized, "run_argv", inputs.run_argv);
  append_pairs(serialized, "params", inputs.params);
  return content_hash(serialized);
}

} // namespace rpl::stages
