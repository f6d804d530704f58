#pragma once
/// The host copy of every buffer's initial contents: zeros, a seeded random stream or a file's
/// bytes. Generated once and kept while the launch's arguments stay the same, because they are
/// uploaded again before every checked launch (candidate or reference) so each starts alike.

#include <cstddef>
#include <string>
#include <vector>

#include "messages/kernel_lane.hpp"

namespace rpl::workers::kernel_process {

/// count elements of `type` from splitmix64(seed): floats uniform in [min, max), integers
/// uniform in [min, max] (modulo reduction; the bias is below 2^-32 for ranges under 2^32).
/// Portable: the same bytes on every host and compiler.
std::vector<std::byte>
random_contents(messages::element_type type, std::size_t count, const messages::buffer_init& init);

/// What a buffer's initial contents are made from (type, count, fill, seed, range, file): equal
/// keys, equal bytes.
std::string contents_key(const messages::kernel_arg& arg);

class initial_contents {
public:
  /// The initial bytes of buffer argument number `index`, or nullptr with `error` set (a file
  /// that cannot be read or has the wrong size).
  const std::vector<std::byte>*
  get(std::size_t index, const messages::kernel_arg& arg, std::string& error);

private:
  struct entry {
    std::string key; ///< what the bytes were made from; a different key makes them again
    std::vector<std::byte> bytes;
  };
  std::vector<entry> entries_; ///< by argument index
};

} // namespace rpl::workers::kernel_process
