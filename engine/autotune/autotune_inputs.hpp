#pragma once
/// Everything an autotune run is made of, validated before anything runs or is written: the space,
/// the templates, the sources, the compilers' identities, the strategy, the worker count and the
/// fingerprint that --resume matches. Bad input throws config_error naming the input and a fix.

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/autotune/autotune.hpp"
#include "messages/wire.hpp"
#include "stages/search/command_template.hpp"
#include "stages/search/landscape.hpp"
#include "stages/search/launch_spec.hpp"
#include "stages/search/space.hpp"
#include "stages/search/strategy.hpp"
#include "stages/statistics/sampling_criterion.hpp"
#include "workers/devices/nvidia_gpu.hpp"
#include "workers/protocol/curve_keys.hpp"

namespace rpl::engine {

struct autotune_inputs {
  stages::space space;
  std::optional<stages::command_template> build;
  std::optional<stages::command_template> cmd;
  /// The run template as used: --cmd-template, or `{BIN}` when --launch or --replay runs without
  /// one (their lanes read only the code object, and with --replay an optional kernel symbol).
  std::string cmd_template;
  std::vector<messages::source_file> sources;
  std::vector<std::pair<std::string, std::string>> source_pairs; ///< name, content (for keys)
  std::map<std::string, std::string> toolchains;                 ///< compiler argv[0] -> identity
  /// The argv[0]s whose identity is known (found on this host, or pinned): their jobs go only to
  /// workers with the same toolchain id (compile_request::match_toolchain).
  std::set<std::string> checked_toolchains;
  /// Absolute files and folders the build template only reads (-I, -include...): the engine's
  /// local workers allow them (--allow-path); workers/compilers/argv_check.hpp.
  std::set<std::string> template_read_paths;
  /// This host's GPU ("sm_90"), for nvcc builds that name no architecture; empty when no build
  /// uses nvcc (then no GPU tool is asked) or there is no NVIDIA GPU.
  std::string nvidia_arch;
  bool uses_nvcc = false; ///< the build template runs nvcc (identify_toolchains reads the arch)
  std::unique_ptr<stages::strategy> strategy;
  std::size_t workers = 1;
  std::string fingerprint;
  /// --curve-keys and --allow-keys, read: the --listen endpoints are CURVE servers.
  std::optional<workers::curve_keypair> curve_server;
  std::map<std::string, std::string> curve_allowed;

  /// What the lanes are: "timing" (whole processes), "kernel" (--launch: the kernel lane),
  /// "cuda" or "rocm" (application lanes timed from the trace), "recorded" (--recorded).
  std::string lane_kind = "timing";
  std::optional<stages::launch_spec> launch;       ///< with --launch
  std::vector<workers::nvidia_device> devices;     ///< GPU lanes: one lane per device
  std::optional<stages::sampling_target> sampling; ///< adaptive sampling, when on
  /// With --recorded ("recorded" lanes): the landscape that answers the measurements.
  std::shared_ptr<const stages::landscape> landscape;
};

/// Local compile workers when --compile-workers is not given: one per core beside the lanes, at
/// least 1. Also what --local-fallback starts.
std::size_t default_compile_workers(std::size_t lanes);

/// Reads and checks every input of `options`. Throws config_error. With `identify` false, the
/// build template's compilers are checked but not yet identified (toolchains maps each to "", no
/// GPU architecture): identify_toolchains() then does it, e.g. while the GPU lanes start.
autotune_inputs validate_inputs(const autotune_options& options, bool identify = true);

/// Identifies each compiler of inputs.toolchains not identified yet (its binary's hash and
/// `--version`, or a pinned identity) and reads the local NVIDIA GPU's architecture when the build
/// uses nvcc: some 0.1 s, most of it nvcc's `--version`.
void identify_toolchains(const autotune_options& options, autotune_inputs& in);

} // namespace rpl::engine
