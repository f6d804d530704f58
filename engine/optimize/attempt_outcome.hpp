#pragma once
/// Where an attempt ended, what was decided and which finding decided it: the three enums that the
/// journal (optimize_journal), the report (optimize_report), docs/optimize.md's tables and the
/// tests all read. Each is written as its name (to_string) and read back by name (parse_*), so a
/// journal stays readable across versions; a name this version does not know reads as nullopt.

#include <optional>
#include <span>
#include <string_view>

namespace rpl::engine {

/// The room of the proposal's journey (proposal_journey.hpp) where the attempt ended.
enum class attempt_stage {
  none,
  apply,          ///< the diff against the incumbent source
  source_guard,   ///< libclang's parse of the patched source against the original
  compile,        ///< the user's build template on a compile worker
  artifact_guard, ///< the code object against the original's
  screen,         ///< the static screen: resources the device would refuse
  validation,     ///< outputs against the original kernel's, on the lane
  tuning,         ///< a configuration of a proposal's tunable macros, timed alone
  measurement,    ///< the paired comparison with the incumbent
  sanitizer,      ///< faster, then run under the vendor's checker (compute-sanitizer) first
  accepted,       ///< it became the incumbent
};

enum class attempt_verdict {
  none,
  rejected,     ///< a guard or a validation case said no
  failed,       ///< it did not build or could not be measured
  slower,       ///< measured, slower beyond the noise
  within_noise, ///< measured, not faster beyond the noise
  accepted,     ///< measured, faster beyond the noise
  measured,     ///< a tuning configuration, timed alone
  tuned,        ///< a tunable proposal whose fastest configuration goes on
  unchanged,    ///< a tunable proposal whose defaults were fastest (or within the noise)
  skipped,      ///< not tried (--tune-budget 0)
};

/// The finding that decided a rejection or failure (`none` for the others).
enum class attempt_finding {
  none,
  // apply
  patch_does_not_apply,
  empty_patch,
  // source_guard (stages/optimize/source_guard.hpp)
  unparsable,
  kernel_missing,
  signature_changed,
  outside_target_changed,
  directive_changed,
  new_global,
  inline_asm,
  host_code,
  device_launch,
  // compile
  compile,
  // artifact_guard (stages/optimize/artifact_guard.hpp; new_global above too)
  kernel_symbols_changed,
  parameter_layout_changed,
  unreadable,
  // screen
  static_screen,
  // validation, one per case
  validation_launch_size,
  validation_odd_size,
  validation_smaller_size,
  validation_captured,
  validation_tiny_size,  ///< a size smaller than one block
  validation_misaligned, ///< the odd size with every buffer 4 bytes past its aligned start
  // the lane's checks in any validation case (workers/lanes/kernel/process/)
  memory_out_of_bounds, ///< a byte of a buffer's red zone changed
  inputs_modified,      ///< a buffer not marked output changed
  nondeterministic,     ///< two launches on the same inputs gave other outputs
  timed_phase, ///< measurement: a spot-checked timed launch was wrong, or the others far faster
  // sanitizer: one per compute-sanitizer tool
  sanitizer_memcheck,
  sanitizer_racecheck,
  sanitizer_initcheck,
  sanitizer_synccheck,
  // measurement and tuning
  measurement,
  tuning,
  tunables,
};

std::string_view to_string(attempt_stage stage);
std::string_view to_string(attempt_verdict verdict);
/// The finding's name as the journal and report write it ("validation:odd_size", "new_global").
std::string_view to_string(attempt_finding finding);

/// The finding of a compute-sanitizer tool's report ("racecheck" -> sanitizer_racecheck; memcheck
/// for any other name).
attempt_finding sanitizer_finding(std::string_view tool);

std::optional<attempt_stage> parse_stage(std::string_view name);
std::optional<attempt_verdict> parse_verdict(std::string_view name);
std::optional<attempt_finding> parse_finding(std::string_view name);

/// Every value of each enum but `none`, in declaration order (the docs and tests walk them).
std::span<const attempt_stage> all_stages();
std::span<const attempt_verdict> all_verdicts();
std::span<const attempt_finding> all_findings();

} // namespace rpl::engine
