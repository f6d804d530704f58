#include "engine/cli.hpp"

#include <string>

#include <CLI/CLI.hpp>

#include "engine/commands/command.hpp"

namespace rpl::engine {

int run_cli(int argc, char** argv) {
  CLI::App app{"rocm-perf: a performance lab for GPU kernels"};
  app.set_version_flag("--version", std::string("rocm-perf ") + RPL_VERSION);
  app.require_subcommand(1);

  std::vector<commands::command_ptr> verbs;
  verbs.push_back(commands::make_autotune_command());
  verbs.push_back(commands::make_profile_command());
  verbs.push_back(commands::make_analyze_command());
  verbs.push_back(commands::make_inspect_command());
  verbs.push_back(commands::make_worker_command());
  for (auto& verb : verbs) {
    verb->add_to(app);
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForVersion& version) {
    return app.exit(version);
  } catch (const CLI::ParseError& error) {
    // CLI11's own codes (106, 109, ...) would break the contract: every argument error is bad
    // input.
    app.exit(error);
    return commands::bad_input;
  }
  for (auto& verb : verbs) {
    if (verb->chosen()) {
      return verb->run();
    }
  }
  return commands::done;
}

} // namespace rpl::engine
