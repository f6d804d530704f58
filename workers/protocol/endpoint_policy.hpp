#pragma once
/// Which ZeroMQ endpoints may carry jobs without CurveZMQ (docs/security.md): decided by an
/// allow-list of transports, not a block-list. Without keys, the one transport allowed is a
/// path `ipc://` socket inside a folder that belongs to this user and that nobody else may enter
/// (mode 0700 or stricter): the engine creates such a folder for its own workers. An abstract
/// socket (`ipc://@name`) has no permissions at all, a socket in a shared folder takes the
/// umask's mode, and tcp://, ws://, wss://, udp://, pgm://, epgm://, vmci:// and anything else
/// ZeroMQ may accept reach other users or hosts: each needs keys, or `--insecure`.

#include <string>

namespace rpl::workers {

/// Empty when `endpoint` may be used without CURVE keys, else why not, with the fix: the flag
/// that asks for keys (`keys_flag`, e.g. "--curve-keys DIR --allow-keys FILE"). An ipc:// path's
/// folder is checked as it is now: it must exist (or, with `create_folder`, is created with mode
/// 0700), belong to this user and be closed to group and others.
std::string keyless_endpoint_refusal(const std::string& endpoint,
                                     const std::string& keys_flag,
                                     bool create_folder = false);

/// The transport of `endpoint` ("tcp", "ipc", "ws", ...), "" when it has no "://".
std::string endpoint_transport(const std::string& endpoint);

} // namespace rpl::workers
