#pragma once
/// The processes around a campaign's compiles, set up the same way by both jobs on the tuning
/// graph (autotune, optimize): the broker on a private ipc:// socket for this host's workers (and
/// the --listen endpoints for remote ones, with CURVE when keys are given), and the local compile
/// workers connected to it, allowed the compilers the user's build templates name.

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "engine/broker/broker.hpp"
#include "engine/broker/local_workers.hpp"
#include "engine/broker/private_dir.hpp"

namespace rpl::engine {

/// The broker's endpoints: first `dir`'s broker.ipc (plain: local workers), then `listen`, bound
/// with CURVE when `curve` is set (its endpoints are `listen` then) and plain otherwise.
broker_config campaign_broker_config(const private_dir& dir,
                                     std::optional<broker_curve> curve,
                                     const std::vector<std::string>& listen);

/// Starts `b`; a bind failure (a --listen port in use, an address not of this host) is a
/// campaign_input_error (engine/campaign/campaign_inputs.hpp) naming the fix.
void start_campaign_broker(broker& b);

/// The local compile workers' settings: `worker_executable` (empty: this rocm-perf) as `worker
/// compile` on the broker's first (private) endpoint, `count` of them, allowed `allowed` (empty:
/// the worker's default list) plus the absolute compiler paths among `template_compilers` (the
/// user's own templates name them: local workers run them; remote ones decide with their own
/// --allow-compiler), and the files the templates read.
local_workers_config compile_workers_config(const std::filesystem::path& worker_executable,
                                            const broker_config& config,
                                            std::size_t count,
                                            std::vector<std::string> allowed,
                                            const std::vector<std::string>& template_compilers,
                                            std::vector<std::string> read_paths);

} // namespace rpl::engine
