#pragma once
/// The rule proposer's vector-load transform: a grid-stride loop whose body reads and writes
/// arrays only at the loop index is rewritten to move 16 bytes per access (`float4`, `int4`,
/// `uint4`, `double2`), with the two proofs the rewrite needs made where they can be:
///   - alignment, at run time: the vector loop runs only when every array it touches is 16-byte
///     aligned at the loop's base (`P`, or `P + (E)` for a row offset E, so in a 2-D nest the check
///     runs again for every row); otherwise the original loop runs unchanged;
///   - trip count, by construction: the vector loop covers the first n / W * W elements and a tail
///     loop (the original body, same grid stride) the last n % W, so any n is right.
///
/// Recognised: `for (T i = START; i < N; i += STEP) BODY` where
///   - T is any integer type as written (int, unsigned, long, size_t, ...);
///   - START is the thread's global x index (`blockIdx.x * blockDim.x + threadIdx.x` in any order,
///     casts and harmless parentheses allowed) and STEP the grid's x size (`blockDim.x *
///     gridDim.x` in either order), each written out or as a variable declared before the loop in
///     the enclosing function, initialised so and then never written (`const int stride =
///     blockDim.x * gridDim.x;`), so that every element belongs to exactly one thread before and
///     after;
///   - N does not use `i`;
///   - the index rule: every use of `i` in BODY is the subscript of an access `P[i]`, `P[E + i]`
///     or `P[i + E]`, where P is a single-level pointer parameter of the function or a
///     single-level pointer variable declared before the loop in a block of the function still
///     open at the loop, a `for` header's included (a row pointer `const float* row = in + r *
///     width;`), and E (the row offset) is made of names, numbers, `.`, parentheses and + - * / %
///     and does not use `i`; every such pointer named in BODY is named only in such accesses
///     (no `P[0]`, no `P` passed on, no `&P[i]`); each pointer is accessed at one offset only;
///     the names in N, STEP, START and E are neither declared nor written in BODY;
///   - all pointers accessed have one element type: float, int, unsigned, double; at least one is
///     written;
///   - BODY, one statement or a block of any number of statements (local temporaries included),
///     has no control flow (if, loops, ?:, &&, ||, return, break, continue, goto, switch), no
///     barrier or fence, no atomic, no warp-level primitive (shuffle, vote, match, reduce), no
///     inline assembly, no preprocessor directive, no name starting `rpl_`, and reads nothing that
///     may differ between the threads of one grid row, since each thread handles other elements
///     after the rewrite: not threadIdx.x or blockIdx.x, nor a variable computed before the loop
///     from them (or from a lane intrinsic), as a value, a pointer or in E (threadIdx.y,
///     blockIdx.y, blockDim, gridDim and a 2-D nest's row are fine);
///   - pointers that may be the same array (neither declared `__restrict__`): none is read in a
///     statement after another is written (the rewrite loads every array before the body runs).
/// Each lane runs BODY in its own `{ }` block with every access replaced by that lane's component,
/// in order x, y, z, w: the same operations per element as before, and the body's locals are per
/// lane. Written arrays are stored after the lanes, in the order of their last write. An outer
/// loop (rows of a 2-D nest, y geometry) is left as it is: the inner loop is the one rewritten.

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
  std::vector<std::string> arrays; ///< the pointers accessed, in order of first use
};

/// A rewrite, or why the loop is not of the recognised form.
struct vectorize_outcome {
  std::optional<vectorized_loop> rewrite;
  /// When there is no rewrite: one clause, without the rule's name ("the loop body calls
  /// atomicAdd", "not a grid-stride loop: its step is not the grid's x size (...)").
  std::string refusal;
};

/// The rewrite of the loop whose keyword starts at `loop_offset` in `text`, where `parameters` are
/// those of the function containing it and `scope_begin` is where that function's body starts
/// (its `{`): the pointer and stride variables declared between there and the loop, in blocks
/// still open at the loop, are known (0: from the start of `text`).
vectorize_outcome vectorize_grid_stride_loop(std::string_view text,
                                             std::size_t loop_offset,
                                             const std::vector<parameter_info>& parameters,
                                             std::size_t scope_begin = 0);

} // namespace rpl::stages::optimize
