#pragma once
/// The source guard: what a proposed change of a CUDA/HIP source may touch. A proposal may edit
/// only the target region (below); everything else must stay token-identical, and some things may
/// not appear even inside it (new globals, inline assembly, launches, allocation, printf). The
/// engine runs it on every applied proposal before compiling it; a finding is a rejection with
/// the guard's name and what changed where.
///
/// The target region of kernel K in a model: K's definition; the device functions (`__device__`
/// only: not kernels, not host or host-device functions) that K calls transitively and that
/// nothing outside the region calls; and, in the patched source, new `__device__` function
/// definitions called only from the region. A function that already existed may be in the patched
/// region only if it was in the original one.

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "stages/optimize/source_model.hpp"

namespace rpl::stages::optimize {

struct guard_finding {
  std::string guard;  ///< kernel_missing, signature_changed, outside_target_changed,
                      ///< directive_changed, new_global, inline_asm, host_code, device_launch
  std::string detail; ///< the declaration and line, and what changed
};

/// The qualified names of the function definitions in `kernel`'s target region of `model`
/// (empty when the kernel is not defined there).
std::set<std::string> target_region(const source_model& model, std::string_view kernel);

/// The qualified names of the functions `kernel` reaches through calls: every device and
/// host-device function it may run, shared with other callers or not, and the kernel itself.
std::set<std::string> reachable_functions(const source_model& model, std::string_view kernel);

/// Every guard that `after` breaks against `before` for `kernel`; empty: the change passes.
std::vector<guard_finding> check_source(const source_model& before,
                                        std::string_view before_text,
                                        const source_model& after,
                                        std::string_view after_text,
                                        std::string_view kernel);

} // namespace rpl::stages::optimize
