#include "engine/cli.hpp"

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "engine/commands/command.hpp"
#include "stages/search/edit_distance.hpp"

namespace rpl::engine {

namespace {

/// The deepest subcommand the user named ("rocm-perf worker compile"), and the arguments CLI11
/// could not place anywhere along the way.
struct parse_position {
  std::string path = "rocm-perf";
  const CLI::App* app = nullptr;
  std::vector<std::string> unexpected;
};

parse_position locate(const CLI::App& root) {
  parse_position at;
  at.app = &root;
  for (const CLI::App* app = &root; app != nullptr;) {
    for (const auto& extra : app->remaining()) {
      at.unexpected.push_back(extra);
    }
    const auto chosen = app->get_subcommands();
    app = chosen.empty() ? nullptr : chosen.front();
    if (app != nullptr) {
      at.path += " " + app->get_name();
      at.app = app;
    }
  }
  return at;
}

/// Explains an argument error: CLI11's message, what was not understood, and where help is.
void explain(const CLI::App& root, const CLI::ParseError& error) {
  const parse_position at = locate(root);
  std::string unknown_verb;
  if (!at.unexpected.empty() && at.unexpected.front().rfind('-', 0) != 0) {
    unknown_verb = at.unexpected.front();
  }
  const auto verbs = at.app->get_subcommands({});
  if (!unknown_verb.empty() && !verbs.empty()) {
    std::string names;
    std::string nearest;
    std::size_t best = 3; // suggest only a close match
    for (const CLI::App* verb : verbs) {
      names += (names.empty() ? "" : ", ") + verb->get_name();
      if (const std::size_t d = stages::edit_distance(unknown_verb, verb->get_name()); d < best) {
        best = d;
        nearest = verb->get_name();
      }
    }
    std::cerr << at.path << ": '" << unknown_verb << "' is not a verb; the verbs are " << names
              << (nearest.empty() ? "" : " (did you mean '" + nearest + "'?)") << "\n";
  } else {
    // CLI11's own sentence, except for extra arguments: the line below names them.
    if (dynamic_cast<const CLI::ExtrasError*>(&error) == nullptr || at.unexpected.empty())
      std::cerr << at.path << ": " << error.what() << "\n";
    if (!at.unexpected.empty()) {
      std::string list;
      for (const auto& extra : at.unexpected) {
        list += (list.empty() ? "" : " ") + extra;
      }
      std::cerr << at.path << ": not understood: " << list << "\n";
    }
  }
  std::cerr << "fix: see `" << at.path << " --help` for what it accepts\n";
}

} // namespace

int run_cli(int argc, char** argv) {
  CLI::App app{"rocm-perf: a performance lab for GPU kernels"};
  app.set_version_flag("--version", std::string("rocm-perf ") + RPL_VERSION);
  app.require_subcommand(1);

  std::vector<commands::command_ptr> verbs;
  verbs.push_back(commands::make_autotune_command());
  verbs.push_back(commands::make_profile_command());
  verbs.push_back(commands::make_analyze_command());
  verbs.push_back(commands::make_compare_command());
  verbs.push_back(commands::make_inspect_command());
  verbs.push_back(commands::make_worker_command());
  verbs.push_back(commands::make_export_command());
  verbs.push_back(commands::make_keys_command());
  verbs.push_back(commands::make_isolate_command());
  verbs.push_back(commands::make_replay_command());
  verbs.push_back(commands::make_optimize_command());
  verbs.push_back(commands::make_workers_command());
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
    explain(app, error);
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
