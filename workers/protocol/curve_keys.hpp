#pragma once
/// CurveZMQ keys on disk (RFC 26, CurveZMQ; RFC 27, ZAP): a key pair is two files in one folder,
/// `public.key` and `secret.key`, each holding one 40-character Z85 key and a newline, both mode
/// 0600 in a folder of mode 0700. An allow-list is a text file of client public keys, one per line
/// (`KEY [name]`; a line starting with `#` whose first word is not a key is a comment: Z85 keys
/// may hold `#`), that the engine's ZAP handler admits. Every error names the
/// file, the problem and a fix.

#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>

namespace rpl::workers {

struct curve_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct curve_keypair {
  std::string public_key; ///< Z85, 40 characters
  std::string secret_key; ///< Z85, 40 characters
};

/// The engine's and a worker's settings for one CURVE connection.
struct curve_client_keys {
  curve_keypair own;         ///< the worker's pair
  std::string server_public; ///< the engine's public key (Z85)
};

/// True when this libzmq was built with CURVE (zmq_has("curve")).
bool curve_available();
/// Throws curve_error when it is not: "this libzmq has no CURVE support; fix: ...".
void require_curve(const std::string& what);

/// A fresh key pair (zmq_curve_keypair).
curve_keypair generate_keypair();
/// Writes `pair` into `dir` (created 0700 when missing): public.key and secret.key, mode 0600,
/// never over existing files.
void write_keypair(const std::filesystem::path& dir, const curve_keypair& pair);
/// Reads the pair written by write_keypair; refuses a secret key readable by others.
curve_keypair read_keypair(const std::filesystem::path& dir);
/// One public key from a file (public.key, or a copy of it).
std::string read_public_key(const std::filesystem::path& file);
/// The keys an allow-list admits, each with its name (the key's first 8 characters when unnamed).
std::map<std::string, std::string> read_allow_list(const std::filesystem::path& file);
/// Throws curve_error when another user could change `file` (a key or an allow-list, `what` in
/// the message): it belongs to another user, group or others may write it, or its folder lets
/// them replace it (writable without the sticky bit). read_keypair, read_public_key and
/// read_allow_list call it.
void check_trusted_file(const std::filesystem::path& file, const std::string& what);

/// A 32-byte binary key (as ZAP passes CURVE credentials) in Z85.
std::string z85_from_binary(const std::string& bytes);
/// True for a 40-character Z85 string that decodes to 32 bytes.
bool valid_z85_key(const std::string& key);

} // namespace rpl::workers
