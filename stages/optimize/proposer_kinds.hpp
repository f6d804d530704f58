#pragma once
/// The proposer kinds, in one registry: what `--proposer` accepts, what a proposer worker can be
/// (`worker propose --kind`), which kinds get their compile errors back for a repair, and which
/// need an LLM endpoint. Every other place reads them from here.

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace rpl::stages::optimize {

struct proposer_kind {
  std::string_view name;
  /// A proposal that does not compile or apply goes back to it with the errors (--max-repairs):
  /// a model can fix its own mistake, a fixed rule would make the same one again.
  bool repairs = false;
  /// It needs --llm-endpoint and --llm-model (or a remote worker of its own).
  bool needs_endpoint = false;
  /// It parses the source itself (libclang): asked once for no proposal while the original
  /// builds, it has the headers parsed (a kept preamble) when the first real request comes.
  bool warms_up = false;
};

inline constexpr std::array<proposer_kind, 2> proposer_kinds{{
    {"rule", false, false, true}, // stages/optimize/rule_transforms: source rewrites by rule
    {"llm", true, true, false},   // workers/proposers/llm: an OpenAI-compatible chat endpoint
}};

/// --proposer's word for every kind at once.
inline constexpr std::string_view all_proposer_kinds = "both";

inline const proposer_kind* find_proposer_kind(std::string_view name) {
  for (const auto& kind : proposer_kinds) {
    if (kind.name == name) {
      return &kind;
    }
  }
  return nullptr;
}

inline bool proposer_repairs(std::string_view name) {
  const auto* kind = find_proposer_kind(name);
  return kind != nullptr && kind->repairs;
}

/// The kind names (`worker propose --kind`).
inline std::vector<std::string> proposer_kind_names() {
  std::vector<std::string> names;
  for (const auto& kind : proposer_kinds) {
    names.emplace_back(kind.name);
  }
  return names;
}

/// --proposer's choices: each kind, then `both`.
inline std::vector<std::string> proposer_choices() {
  auto names = proposer_kind_names();
  names.emplace_back(all_proposer_kinds);
  return names;
}

/// The kinds a --proposer choice asks, in registry order; empty for an unknown choice.
inline std::vector<std::string> kinds_of_choice(std::string_view choice) {
  if (choice == all_proposer_kinds) {
    return proposer_kind_names();
  }
  if (find_proposer_kind(choice) != nullptr) {
    return {std::string(choice)};
  }
  return {};
}

} // namespace rpl::stages::optimize
