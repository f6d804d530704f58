#include "engine/optimize/attempt_outcome.hpp"

#include <array>
#include <utility>

namespace rpl::engine {

namespace {

template <class Enum> using name_table = std::pair<Enum, std::string_view>;

constexpr std::array stage_names{
    name_table<attempt_stage>{attempt_stage::none, ""},
    name_table<attempt_stage>{attempt_stage::apply, "apply"},
    name_table<attempt_stage>{attempt_stage::source_guard, "source_guard"},
    name_table<attempt_stage>{attempt_stage::compile, "compile"},
    name_table<attempt_stage>{attempt_stage::artifact_guard, "artifact_guard"},
    name_table<attempt_stage>{attempt_stage::screen, "screen"},
    name_table<attempt_stage>{attempt_stage::validation, "validation"},
    name_table<attempt_stage>{attempt_stage::tuning, "tuning"},
    name_table<attempt_stage>{attempt_stage::measurement, "measurement"},
    name_table<attempt_stage>{attempt_stage::sanitizer, "sanitizer"},
    name_table<attempt_stage>{attempt_stage::accepted, "accepted"},
};

constexpr std::array verdict_names{
    name_table<attempt_verdict>{attempt_verdict::none, ""},
    name_table<attempt_verdict>{attempt_verdict::rejected, "rejected"},
    name_table<attempt_verdict>{attempt_verdict::failed, "failed"},
    name_table<attempt_verdict>{attempt_verdict::slower, "slower"},
    name_table<attempt_verdict>{attempt_verdict::within_noise, "within_noise"},
    name_table<attempt_verdict>{attempt_verdict::accepted, "accepted"},
    name_table<attempt_verdict>{attempt_verdict::measured, "measured"},
    name_table<attempt_verdict>{attempt_verdict::tuned, "tuned"},
    name_table<attempt_verdict>{attempt_verdict::unchanged, "unchanged"},
    name_table<attempt_verdict>{attempt_verdict::skipped, "skipped"},
};

using finding_name = name_table<attempt_finding>;
constexpr std::array finding_names{
    finding_name{attempt_finding::none, ""},
    finding_name{attempt_finding::patch_does_not_apply, "patch_does_not_apply"},
    finding_name{attempt_finding::empty_patch, "empty_patch"},
    finding_name{attempt_finding::unparsable, "unparsable"},
    finding_name{attempt_finding::kernel_missing, "kernel_missing"},
    finding_name{attempt_finding::signature_changed, "signature_changed"},
    finding_name{attempt_finding::outside_target_changed, "outside_target_changed"},
    finding_name{attempt_finding::directive_changed, "directive_changed"},
    finding_name{attempt_finding::new_global, "new_global"},
    finding_name{attempt_finding::inline_asm, "inline_asm"},
    finding_name{attempt_finding::host_code, "host_code"},
    finding_name{attempt_finding::device_launch, "device_launch"},
    finding_name{attempt_finding::compile, "compile"},
    finding_name{attempt_finding::kernel_symbols_changed, "kernel_symbols_changed"},
    finding_name{attempt_finding::parameter_layout_changed, "parameter_layout_changed"},
    finding_name{attempt_finding::unreadable, "unreadable"},
    finding_name{attempt_finding::static_screen, "static_screen"},
    finding_name{attempt_finding::validation_launch_size, "validation:launch_size"},
    finding_name{attempt_finding::validation_odd_size, "validation:odd_size"},
    finding_name{attempt_finding::validation_smaller_size, "validation:smaller_size"},
    finding_name{attempt_finding::validation_captured, "validation:captured_dispatch"},
    finding_name{attempt_finding::validation_tiny_size, "validation:tiny_size"},
    finding_name{attempt_finding::validation_misaligned, "validation:misaligned"},
    finding_name{attempt_finding::memory_out_of_bounds, "memory:out_of_bounds"},
    finding_name{attempt_finding::inputs_modified, "inputs_modified"},
    finding_name{attempt_finding::nondeterministic, "nondeterministic"},
    finding_name{attempt_finding::timed_phase, "timed_phase"},
    finding_name{attempt_finding::sanitizer_memcheck, "sanitizer:memcheck"},
    finding_name{attempt_finding::sanitizer_racecheck, "sanitizer:racecheck"},
    finding_name{attempt_finding::sanitizer_initcheck, "sanitizer:initcheck"},
    finding_name{attempt_finding::sanitizer_synccheck, "sanitizer:synccheck"},
    finding_name{attempt_finding::measurement, "measurement"},
    finding_name{attempt_finding::tuning, "tuning"},
    finding_name{attempt_finding::tunables, "tunables"},
};

template <class Enum, std::size_t N>
std::string_view name_of(const std::array<name_table<Enum>, N>& table, Enum value) {
  for (const auto& [e, name] : table) {
    if (e == value) {
      return name;
    }
  }
  return {};
}

template <class Enum, std::size_t N>
std::optional<Enum> value_of(const std::array<name_table<Enum>, N>& table, std::string_view name) {
  for (const auto& [e, n] : table) {
    if (n == name) {
      return e;
    }
  }
  return std::nullopt;
}

template <class Enum, std::size_t N>
std::array<Enum, N - 1> values_of(const std::array<name_table<Enum>, N>& table) {
  std::array<Enum, N - 1> values{};
  for (std::size_t i = 1; i < N; ++i) {
    values[i - 1] = table[i].first;
  }
  return values;
}

} // namespace

std::string_view to_string(attempt_stage stage) {
  return name_of(stage_names, stage);
}
std::string_view to_string(attempt_verdict verdict) {
  return name_of(verdict_names, verdict);
}
std::string_view to_string(attempt_finding finding) {
  return name_of(finding_names, finding);
}

std::optional<attempt_stage> parse_stage(std::string_view name) {
  return value_of(stage_names, name);
}
std::optional<attempt_verdict> parse_verdict(std::string_view name) {
  return value_of(verdict_names, name);
}
std::optional<attempt_finding> parse_finding(std::string_view name) {
  return value_of(finding_names, name);
}

std::span<const attempt_stage> all_stages() {
  static const auto values = values_of(stage_names);
  return values;
}
std::span<const attempt_verdict> all_verdicts() {
  static const auto values = values_of(verdict_names);
  return values;
}
std::span<const attempt_finding> all_findings() {
  static const auto values = values_of(finding_names);
  return values;
}

attempt_finding sanitizer_finding(std::string_view tool) {
  if (tool == "racecheck")
    return attempt_finding::sanitizer_racecheck;
  if (tool == "initcheck")
    return attempt_finding::sanitizer_initcheck;
  if (tool == "synccheck")
    return attempt_finding::sanitizer_synccheck;
  return attempt_finding::sanitizer_memcheck;
}

} // namespace rpl::engine
