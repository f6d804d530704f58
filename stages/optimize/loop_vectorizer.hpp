#pragma once
/// The rule proposer's vector-load transform: a grid-stride loop whose body reads and writes
/// arrays only at the loop index is rewritten to move 16 bytes per access (`float4`, `int4`,
/// `uint4`, `double2`), with the two proofs the rewrite needs made where they can be:
///   - alignment, at run time: the vector loop runs only when every array it touches is 16-byte
///     aligned; otherwise the original loop runs unchanged;
///   - trip count, by construction: the vector loop covers the first n / W * W elements and a tail
///     loop (the original body, same grid stride) the last n % W, so any n is right.
/// Recognised: `for (T i = START; i < N; i += STEP) BODY` where START is the thread's global index
/// (`blockIdx.x * blockDim.x + threadIdx.x`, casts allowed, either order) and STEP the grid's
/// size (`gridDim.x * blockDim.x`), so that every element belongs to exactly one thread before and
/// after; `i` appears in BODY only as `P[i]` with P a pointer parameter of the function, all of one
/// element type (float, int, unsigned, double); BODY has no control flow (if, loops, ?:, &&, ||,
/// return, break, continue, goto, switch), no barrier and no preprocessor directive, so each lane
/// writes every written array. Each lane runs BODY in its own block with `P[i]` replaced by that
/// lane's component, in order x, y, z, w: the same operations per element as before.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stages/optimize/source_model.hpp"

namespace rpl::stages::optimize {

/// The comment the rewrite opens its vector loop with: a function holding it is vectorised.
inline constexpr std::string_view vectorized_marker = "// rocm-perf optimize: ";

struct vectorized_loop {
  byte_range replaced;     ///< the whole loop statement in the text given
  std::string replacement; ///< the aligned vector loop, its tail and the original as fallback
  std::string vector_type; ///< "float4", ...
  unsigned width = 0;      ///< elements per access
  std::vector<std::string> arrays; ///< the pointer parameters accessed, in order of first use
};

/// The rewrite of the loop whose keyword starts at `loop_offset` in `text`, where `parameters` are
/// those of the function containing it; nullopt when the loop is not of the recognised form.
std::optional<vectorized_loop> vectorize_grid_stride_loop(
    std::string_view text, std::size_t loop_offset, const std::vector<parameter_info>& parameters);

} // namespace rpl::stages::optimize
