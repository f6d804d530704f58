#include "workers/protocol/curve_keys.hpp"

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#include <zmq.h>

namespace rpl::workers {

namespace {

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos)
    return "";
  const auto last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

std::string octal_mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%03o", static_cast<unsigned>(mode & 0777));
  return text;
}

/// The file's one key (a trailing newline allowed).
std::string read_key_file(const std::filesystem::path& file, const char* what) {
  check_trusted_file(file, what == std::string("secret") ? "secret key" : "public key");
  std::ifstream in(file);
  if (!in)
    throw curve_error(file.string() + ": cannot be read (" + std::strerror(errno) +
                      "); fix: run `rocm-perf keys generate DIR` and pass that folder");
  std::stringstream text;
  text << in.rdbuf();
  const std::string key = trim(text.str());
  if (!valid_z85_key(key))
    throw curve_error(file.string() + ": not a " + what +
                      " CURVE key (want 40 Z85 characters on one line); fix: regenerate it with "
                      "`rocm-perf keys generate DIR`");
  return key;
}

void write_private_file(const std::filesystem::path& file, const std::string& text) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    throw curve_error(file.string() + ": cannot be created (" + std::strerror(errno) + ")" +
                      (errno == EEXIST ? "; fix: keys are never overwritten: pass a new folder, or "
                                         "remove the old pair first"
                                       : ""));
  const std::string line = text + "\n";
  const auto written = ::write(fd, line.data(), line.size());
  ::close(fd);
  if (written != static_cast<ssize_t>(line.size()))
    throw curve_error(file.string() + ": short write; fix: check the disk");
}

} // namespace

bool curve_available() {
  return zmq_has("curve") != 0;
}

void require_curve(const std::string& what) {
  if (!curve_available())
    throw curve_error(what + ": this libzmq has no CURVE support (zmq_has(\"curve\") is false); "
                             "fix: install a libzmq built with libsodium (Debian's libzmq5 is), or "
                             "use ipc:// or loopback endpoints");
}

bool valid_z85_key(const std::string& key) {
  if (key.size() != 40)
    return false;
  std::array<std::uint8_t, 32> bytes{};
  return zmq_z85_decode(bytes.data(), key.c_str()) != nullptr;
}

std::string z85_from_binary(const std::string& bytes) {
  if (bytes.size() != 32)
    return "";
  std::array<char, 41> text{};
  if (zmq_z85_encode(text.data(), reinterpret_cast<const std::uint8_t*>(bytes.data()), 32) ==
      nullptr)
    return "";
  return std::string(text.data(), 40);
}

curve_keypair generate_keypair() {
  require_curve("rocm-perf keys generate");
  std::array<char, 41> pub{}, sec{};
  if (zmq_curve_keypair(pub.data(), sec.data()) != 0)
    throw curve_error(std::string("zmq_curve_keypair failed: ") + zmq_strerror(zmq_errno()));
  return {std::string(pub.data(), 40), std::string(sec.data(), 40)};
}

void write_keypair(const std::filesystem::path& dir, const curve_keypair& pair) {
  std::error_code error;
  if (!std::filesystem::exists(dir, error)) {
    if (::mkdir(dir.c_str(), 0700) != 0)
      throw curve_error(dir.string() + ": cannot be created (" + std::strerror(errno) +
                        "); fix: create its parent folder or pass another path");
  } else if (!std::filesystem::is_directory(dir, error)) {
    throw curve_error(dir.string() + ": not a folder; fix: pass a folder for the key pair");
  }
  // The secret first: a pair without its public half is never left behind as if whole.
  write_private_file(dir / "secret.key", pair.secret_key);
  write_private_file(dir / "public.key", pair.public_key);
}

curve_keypair read_keypair(const std::filesystem::path& dir) {
  const auto secret = dir / "secret.key";
  struct stat info {};
  if (::stat(secret.c_str(), &info) == 0 && (info.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%03o", static_cast<unsigned>(info.st_mode & 0777));
    throw curve_error(secret.string() + ": open to others (mode " + mode + "); fix: chmod 600 " +
                      secret.string());
  }
  curve_keypair pair;
  pair.secret_key = read_key_file(secret, "secret");
  pair.public_key = read_key_file(dir / "public.key", "public");
  return pair;
}

std::string read_public_key(const std::filesystem::path& file) {
  return read_key_file(file, "public");
}

std::map<std::string, std::string> read_allow_list(const std::filesystem::path& file) {
  check_trusted_file(file, "allow-list");
  std::ifstream in(file);
  if (!in)
    throw curve_error(file.string() + ": cannot be read (" + std::strerror(errno) +
                      "); fix: list the workers' public.key contents in it, one per line");
  std::map<std::string, std::string> keys;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    line = trim(line);
    const auto space = line.find_first_of(" \t");
    const std::string key = line.substr(0, space);
    // Z85 keys may hold '#', even first: a line is a comment when it starts with '#' and its
    // first word is not a key.
    if (line.empty() || (line.front() == '#' && !valid_z85_key(key)))
      continue;
    const std::string name =
        space == std::string::npos ? key.substr(0, 8) : trim(line.substr(space));
    if (!valid_z85_key(key))
      throw curve_error(file.string() + ":" + std::to_string(number) + ": `" + key +
                        "` is not a CURVE public key (40 Z85 characters); fix: paste a worker's "
                        "public.key, optionally followed by a name");
    keys.emplace(key, name);
  }
  if (keys.empty())
    throw curve_error(file.string() + ": lists no key: every worker would be refused; fix: add "
                                      "the workers' public.key contents, one per line");
  return keys;
}

void check_trusted_file(const std::filesystem::path& file, const std::string& what) {
  struct stat info {};
  if (::stat(file.c_str(), &info) != 0) {
    return; // reading it names the problem
  }
  const uid_t me = ::geteuid();
  if (info.st_uid != me) {
    throw curve_error(file.string() + ": the " + what + " file belongs to uid " +
                      std::to_string(info.st_uid) + ", not to this user (uid " +
                      std::to_string(me) + "), who could change what it admits; fix: use a " +
                      what + " file of your own (chown, or copy it)");
  }
  if ((info.st_mode & 022) != 0) {
    throw curve_error(file.string() + ": the " + what +
                      " file is writable by group or others (mode " + octal_mode(info.st_mode) +
                      "): another user could add a key to it; fix: chmod go-w " + file.string());
  }
  // Nor may others replace it: its folder writable by others without the sticky bit.
  const auto folder = file.has_parent_path() ? file.parent_path() : std::filesystem::path(".");
  struct stat dir {};
  if (::stat(folder.c_str(), &dir) == 0 && (dir.st_mode & 022) != 0 &&
      (dir.st_mode & S_ISVTX) == 0) {
    throw curve_error(file.string() + ": its folder " + folder.string() +
                      " is writable by group or others (mode " + octal_mode(dir.st_mode) +
                      "), who could replace the " + what + " file; fix: chmod go-w " +
                      folder.string() + ", or move the file to a private folder");
  }
}

} // namespace rpl::workers
