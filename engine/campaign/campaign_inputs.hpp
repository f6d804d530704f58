#pragma once
/// What both jobs on the tuning graph (autotune, optimize) read and take before a campaign starts:
/// the input files, the --source files as compile workers receive them, and the lease that keeps a
/// second process off the same results. Bad input is a campaign_input_error, whose message names
/// the input, the problem and the fix; the CLI answers it with exit code 2.

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/store/run_lease.hpp"
#include "messages/wire.hpp"

namespace rpl::engine {

/// Bad input found before anything runs (exit 2). autotune's config_error and optimize's
/// optimize_input_error are this error.
class campaign_input_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The whole file at `path`, read for option `what` ("--space"); campaign_input_error naming both
/// and the system's reason when it cannot be read.
std::string read_input_file(const std::filesystem::path& path, const std::string& what);

/// The --source files, each shipped to compile workers under its file name: two of one name are
/// a campaign_input_error.
std::vector<messages::source_file>
read_source_files(const std::vector<std::filesystem::path>& paths);

/// The lease on `file` for `command` ("rocm-perf optimize"), store/run_lease.hpp. Held by another
/// live process: a campaign_input_error "`subject` is in use by another `what`: it is <the
/// holder>; fix: wait until that run ends, or stop it (kill -INT <pid> on <host>)`then`", where
/// `then` says what else to do (", or choose another --out"). Any other failure: `subject`: why.
run_lease take_campaign_lease(const std::filesystem::path& file,
                              const std::string& command,
                              const std::string& subject,
                              const std::string& what,
                              const std::string& then);

} // namespace rpl::engine
