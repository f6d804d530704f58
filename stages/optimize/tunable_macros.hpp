#pragma once
/// Tunable macros: the knobs a rule proposal adds to a kernel for autotune's search to set
/// (messages::tunable_macro). A knob is defined in the kernel's body, right where it is used,
///
///     #ifndef RPL_UNROLL_K_L12
///     #define RPL_UNROLL_K_L12 0
///     #endif
///     #if RPL_UNROLL_K_L12 > 0
///       constexpr int rpl_unroll_K_L12 = RPL_UNROLL_K_L12;
///     #pragma unroll rpl_unroll_K_L12
///     #endif
///       for (...)
///
/// so that its default (0: no pragma) compiles to the code as it was, a value written into the
/// `#define` line makes one configuration, and `-DRPL_UNROLL_K_L12=4` overrides it from a build
/// template. (`#pragma unroll` takes an integral constant expression but nvcc does not expand
/// macros in it, hence the constexpr.)

#include <string>
#include <string_view>
#include <vector>

#include "messages/proposal.hpp"
#include "stages/search/param_value.hpp"

namespace rpl::stages::optimize {

/// The unroll factors a loop's knob takes: 0 (the compiler's choice, the default), 1 (none), 2,
/// 4, 8.
const std::vector<std::int64_t>& unroll_knob_values();

/// The lines defining the unroll knob `macro` (and its constexpr `local`), each starting with
/// `indent` where C++ goes, to be placed right before a loop's keyword.
std::string
unroll_knob_block(std::string_view macro, std::string_view local, std::string_view indent);

/// Every configuration of `knobs`: the product of their values, in order (the first knob varies
/// slowest; the first configuration is every default when each knob lists its default first).
std::vector<configuration> knob_configurations(const std::vector<messages::tunable_macro>& knobs);

/// `text` (a source with the knobs' `#define NAME default` lines) with `config`'s values written
/// into those lines; false with `error` naming the knob when its line is not there exactly once.
bool set_knobs(std::string& text,
               const std::vector<messages::tunable_macro>& knobs,
               const configuration& config,
               std::string& error);

/// `text` with the value of each `#define NAME value` line of `names` (at a line's start) written
/// as `?`: two configurations of one knob search give the same text.
std::string without_knob_values(std::string_view text, const std::vector<std::string>& names);

/// True when every whole-word use of each of `names` in `text` lies in [begin, end) (a kernel's
/// body): configurations that differ only in the knobs' values then differ only there.
bool knobs_used_only_within(std::string_view text,
                            const std::vector<std::string>& names,
                            std::size_t begin,
                            std::size_t end);

/// "RPL_A=4, RPL_B=0": a configuration as the report writes it.
std::string describe(const configuration& config);

} // namespace rpl::stages::optimize
