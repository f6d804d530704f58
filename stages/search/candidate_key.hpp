#pragma once
/// Content hashes and candidate keys: the identity of a build+run, used for caching and resume.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rpl::stages {

/// 32 lowercase hex characters: two 64-bit FNV-1a hashes with different offset bases, each finished
/// with the splitmix64 mixer. Stable across platforms and runs, fast, and good at telling apart
/// accidental differences; NOT cryptographic, so it must never guard against a deliberate
/// collision.
std::string content_hash(std::string_view bytes);

/// 32 lowercase hex characters, like content_hash, for large inputs (a compiler's 30 MB binary,
/// hashed at every engine and worker start): eight independent accumulators over little-endian
/// 8-byte words (multiply, rotate, multiply, the round of the xxHash family), folded with
/// splitmix64 together with the tail bytes and the length. Word-at-a-time and eight-wide, it
/// takes about 1/30 of content_hash's byte-at-a-time time (2 x 30 M dependent multiplies, about
/// 0.1 s for nvcc on an H100 host). Not cryptographic either; different values from content_hash.
std::string wide_hash(std::string_view bytes);

/// Everything that determines what a candidate is and how it runs.
struct key_inputs {
  std::vector<std::pair<std::string, std::string>> sources; ///< name, content
  std::vector<std::string> build_argv;
  std::string toolchain_id;
  std::vector<std::string> run_argv;
  std::vector<std::pair<std::string, std::string>> params; ///< name, value text
};

/// content_hash of a length-prefixed serialization of every field, so that moving bytes between
/// fields or elements (["ab"] vs ["a", "b"]) always changes the key. Order matters everywhere:
/// callers pass sources and params in a fixed order (the space's parameter order).
std::string candidate_key(const key_inputs& inputs);

} // namespace rpl::stages
