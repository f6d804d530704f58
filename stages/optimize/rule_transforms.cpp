#include "stages/optimize/rule_transforms.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <map>
#include <regex>
#include <set>

#include "stages/optimize/loop_vectorizer.hpp"
#include "stages/optimize/source_guard.hpp"
#include "stages/optimize/tunable_macros.hpp"
#include "stages/optimize/unified_diff.hpp"

namespace rpl::stages::optimize {

namespace {

constexpr std::array<int, 3> unroll_factors = {2, 4, 8};
constexpr int min_blocks_per_sm = 2;

struct text_edit {
  std::size_t offset = 0;
  std::size_t length = 0; ///< bytes replaced
  std::string text;
};

std::string apply_edits(std::string_view text, std::vector<text_edit> edits) {
  std::sort(edits.begin(), edits.end(),
            [](const text_edit& a, const text_edit& b) { return a.offset > b.offset; });
  std::string out(text);
  for (const text_edit& e : edits) {
    out.replace(e.offset, e.length, e.text);
  }
  return out;
}

bool is_ident(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

/// Offsets of `name` as a whole word in [begin, end) of `text`, followed (after spaces) by `(`
/// or `<` and not preceded by `.` or `->` or `::`: the calls and the declarator of a function.
std::vector<std::size_t>
call_sites(std::string_view text, std::string_view name, std::size_t begin, std::size_t end) {
  std::vector<std::size_t> out;
  std::size_t pos = begin;
  while ((pos = text.find(name, pos)) != std::string_view::npos && pos < end) {
    const std::size_t after = pos + name.size();
    const bool word =
        (pos == 0 || !is_ident(text[pos - 1])) && (after >= text.size() || !is_ident(text[after]));
    std::size_t next = after;
    while (next < text.size() && std::isspace(static_cast<unsigned char>(text[next]))) {
      ++next;
    }
    std::size_t prev = pos;
    while (prev > 0 && std::isspace(static_cast<unsigned char>(text[prev - 1]))) {
      --prev;
    }
    const bool member =
        prev > 0 && (text[prev - 1] == '.' || text[prev - 1] == '>' || text[prev - 1] == ':');
    if (word && !member && next < text.size() && (text[next] == '(' || text[next] == '<')) {
      out.push_back(pos);
    }
    pos = after;
  }
  return out;
}

/// The edit putting `#pragma unroll N` on its own line before the loop keyword at `offset`
/// (`base` is subtracted from the offset, for edits of a copied function).
text_edit unroll_edit(std::string_view text, std::size_t offset, int factor, std::size_t base) {
  const std::size_t line_start = text.rfind('\n', offset == 0 ? 0 : offset - 1);
  const std::size_t begin = line_start == std::string_view::npos ? 0 : line_start + 1;
  const std::string_view lead = text.substr(begin, offset - begin);
  const std::string pragma = "#pragma unroll " + std::to_string(factor);
  if (lead.find_first_not_of(" \t") == std::string_view::npos) {
    return {begin - base, 0, std::string(lead) + pragma + "\n"};
  }
  return {offset - base, 0, "\n" + pragma + "\n"};
}

/// Where to insert text before `d`: the start of its line, above the comment lines right before.
std::size_t insertion_point(std::string_view text, const declaration& d) {
  std::size_t pos = text.rfind('\n', d.range.begin == 0 ? 0 : d.range.begin - 1);
  pos = pos == std::string_view::npos ? 0 : pos + 1;
  while (pos > 0) {
    const std::size_t prev_end = pos - 1; // the '\n' ending the previous line
    const std::size_t prev_nl =
        prev_end == 0 ? std::string_view::npos : text.rfind('\n', prev_end - 1);
    const std::size_t prev_begin = prev_nl == std::string_view::npos ? 0 : prev_nl + 1;
    std::string_view line = text.substr(prev_begin, prev_end - prev_begin);
    const std::size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line.substr(first, 2) != "//") {
      break;
    }
    pos = prev_begin;
  }
  return pos;
}

std::string identifier_of(std::string_view name) {
  std::string out;
  for (const char c : name) {
    out.push_back(is_ident(c) ? c : '_');
  }
  return out;
}

/// A function whose loops a proposal changes: in place (the region) or in a copy (shared).
struct loop_owner {
  const declaration* function = nullptr;
  bool copy = false;
  std::vector<const loop_info*> loops; ///< those without an unroll pragma, editable
};

class proposer {
public:
  proposer(const source_model& model,
           std::string_view text,
           std::string_view source_name,
           std::string_view kernel,
           const std::vector<std::string>& skip_ids)
      : model_(model), text_(text), source_name_(source_name), kernel_name_(kernel),
        skip_(skip_ids.begin(), skip_ids.end()) {}

  rule_transforms_result run(std::uint32_t block_threads) {
    kernel_ = nullptr;
    for (const declaration& d : model_.declarations) {
      if (d.kind == decl_kind::kernel && d.is_definition && d.has_body &&
          (d.name == kernel_name_ || d.qualified_name == kernel_name_)) {
        kernel_ = &d;
      }
    }
    if (kernel_ == nullptr) {
      for (const std::string_view rule : all_rules) {
        explain(rule, "the kernel `" + std::string(kernel_name_) + "` is not defined in " +
                          std::string(source_name_));
      }
      return finish();
    }
    region_ = target_region(model_, kernel_name_);
    // Most promising first: a loop with a run on a time budget may not reach the last ones.
    rule_ = rule_shared_padding;
    for (const loop_owner& owner : owners(true)) {
      propose_padding(owner);
    }
    if (padding_candidates_ == 0) {
      explain("no two-dimensional `__shared__` array that every use indexes in both dimensions "
              "and that has no padding yet");
    }
    rule_ = rule_vector_loads;
    for (const loop_owner& owner : owners()) {
      propose_vector_loads(owner);
    }
    if (owners().empty()) {
      explain("no loop (without an unroll pragma) in the kernel or the device functions it calls");
    } else if (!not_grid_stride_.empty()) {
      // Loops of another shape, said once: "no grid-stride loop (line 4 of `k`: ...; ...)".
      std::string lines;
      for (const std::string& line : not_grid_stride_) {
        lines += (lines.empty() ? "" : "; ") + line;
      }
      explain((log_[std::string(rule_)].why.empty() ? "no grid-stride loop ("
                                                    : "other loops are not grid-stride loops (") +
              lines + ")");
    }
    rule_ = rule_launch_bounds;
    propose_launch_bounds(block_threads);
    std::size_t loops = 0;
    std::size_t knob_loops = 0;
    for (loop_owner& owner : owners()) {
      // Loops that can take an unroll knob are tuned together; the others get fixed factors.
      std::vector<const loop_info*> fixed;
      std::vector<const loop_info*> knobs;
      for (const loop_info* loop : owner.loops) {
        if (!knobbed(*loop)) {
          (takes_knob(*loop) ? knobs : fixed).push_back(loop);
        }
      }
      loops += owner.loops.size();
      knob_loops += knobs.size();
      rule_ = rule_unroll_knobs;
      propose_unroll_knobs(owner, knobs);
      owner.loops = fixed;
      rule_ = rule_unroll_pragmas;
      propose_unrolls(owner);
    }
    explain_unrolls(loops, knob_loops);
    return finish();
  }

private:
  static constexpr std::array<std::string_view, 5> all_rules = {
      rule_shared_padding, rule_vector_loads, rule_launch_bounds, rule_unroll_knobs,
      rule_unroll_pragmas};

  /// What one rule did: proposals made, ids left out as tried, and why it found nothing.
  struct rule_log {
    std::size_t emitted = 0;
    std::vector<std::string> skipped;
    std::vector<std::string> why;
  };

  /// Records why `rule` (the current one by default) found nothing to propose, once per reason.
  void explain(std::string_view rule, const std::string& why) {
    std::vector<std::string>& reasons = log_[std::string(rule)].why;
    if (std::find(reasons.begin(), reasons.end(), why) == reasons.end()) {
      reasons.push_back(why);
    }
  }
  void explain(const std::string& why) { explain(rule_, why); }

  /// The unroll rules' reasons when they looked at no loop or every loop went elsewhere.
  void explain_unrolls(std::size_t loops, std::size_t knob_loops) {
    if (loops == 0) {
      explain(rule_unroll_knobs, "no loop without an unroll pragma");
      explain(rule_unroll_pragmas, "no loop without an unroll pragma");
      return;
    }
    if (knob_loops == 0) {
      explain(rule_unroll_knobs, "no loop without an unroll pragma or a knob that starts a "
                                 "statement (a knob's declaration goes before its loop)");
    }
    explain(rule_unroll_pragmas,
            knob_loops == loops ? "every loop without an unroll pragma takes a knob instead"
                                : "no loop without an unroll pragma, a knob, or a place for one");
  }

  /// The proposals and, for each rule that made none, its reasons joined.
  rule_transforms_result finish() {
    rule_transforms_result result;
    result.proposals = std::move(out_);
    for (const std::string_view rule : all_rules) {
      const rule_log& log = log_[std::string(rule)];
      if (log.emitted != 0) {
        continue;
      }
      std::string reason;
      constexpr std::size_t shown = 4;
      for (std::size_t i = 0; i < log.why.size() && i < shown; ++i) {
        reason += (reason.empty() ? "" : "; ") + log.why[i];
      }
      if (log.why.size() > shown) {
        reason += "; and " + std::to_string(log.why.size() - shown) + " more";
      }
      if (!log.skipped.empty()) {
        std::string ids;
        for (const std::string& id : log.skipped) {
          ids += (ids.empty() ? "" : ", ") + id;
        }
        reason += (reason.empty() ? "" : "; ") + std::string("already tried: ") + ids;
      }
      result.not_applied.push_back(
          {std::string(rule), reason.empty() ? "its change leaves the source as it is" : reason});
    }
    return result;
  }

  std::vector<const declaration*> region_functions() const {
    std::vector<const declaration*> out;
    for (const declaration& d : model_.declarations) {
      if (is_function(d.kind) && d.is_definition && d.has_body &&
          region_.count(d.qualified_name) != 0) {
        out.push_back(&d);
      }
    }
    return out;
  }

  /// The functions whose loops (or, with `all`, whose bodies) a proposal may change.
  std::vector<loop_owner> owners(bool all = false) const {
    std::vector<loop_owner> out;
    const auto add = [&](const declaration* d, bool copy) {
      loop_owner owner{d, copy, {}};
      for (const loop_info& loop : d->loops) {
        if (!loop.has_unroll_pragma && !loop.in_macro) {
          owner.loops.push_back(&loop);
        }
      }
      if (all || !owner.loops.empty()) {
        out.push_back(std::move(owner));
      }
    };
    const std::vector<const declaration*> region = region_functions();
    for (const declaration* d : region) {
      if (!d->from_macro) {
        add(d, false);
      }
    }
    // Device functions the region calls but shares with other callers: changed in a copy.
    std::set<std::string> done;
    for (const declaration* caller : region) {
      for (const std::string& callee : caller->calls) {
        if (region_.count(callee) != 0 || !done.insert(callee).second) {
          continue;
        }
        std::vector<const declaration*> defs;
        for (const declaration& d : model_.declarations) {
          if (d.qualified_name == callee && is_function(d.kind) && d.is_definition) {
            defs.push_back(&d);
          }
        }
        // One definition only (no overloads), a plain device function written out.
        if (defs.size() == 1 && defs.front()->kind == decl_kind::device_function &&
            defs.front()->has_body && !defs.front()->from_macro && !defs.front()->is_template) {
          add(defs.front(), true);
        }
      }
    }
    return out;
  }

  void emit(std::string id, std::string title, std::string rationale, const std::string& after) {
    if (skip_.count(id) != 0) {
      log_[std::string(rule_)].skipped.push_back(std::move(id));
      return;
    }
    if (after == text_) {
      return;
    }
    ++log_[std::string(rule_)].emitted;
    messages::proposal p;
    p.id = std::move(id);
    p.title = std::move(title);
    p.rationale = std::move(rationale);
    p.diff = make_unified_diff(text_, after, source_name_);
    out_.push_back(std::move(p));
  }

  /// The source with `edits` (offsets into the owner's function) applied: in place, or to a copy
  /// of the function that the region calls instead of the original.
  bool patched(const loop_owner& owner, const std::vector<text_edit>& edits, std::string& after) {
    const declaration& f = *owner.function;
    if (!owner.copy) {
      std::vector<text_edit> shifted = edits;
      for (text_edit& e : shifted) {
        e.offset += f.range.begin;
      }
      after = apply_edits(text_, shifted);
      return true;
    }
    const std::string copy_name = f.name + "_rpl_" + identifier_of(kernel_name_);
    for (const declaration& d : model_.declarations) {
      if (d.name == copy_name) {
        return false; // a copy is there already: change it in place
      }
    }
    const std::string_view original = text_.substr(f.range.begin, f.range.end - f.range.begin);
    const std::vector<std::size_t> declarator =
        call_sites(original, f.name, 0, f.body_offset - f.range.begin);
    if (declarator.empty()) {
      explain("`" + f.name + "`, which other kernels share, has no declarator to rename in a copy");
      return false;
    }
    std::vector<text_edit> copy_edits = edits;
    copy_edits.push_back({declarator.back(), f.name.size(), copy_name});
    const std::string copy = apply_edits(original, copy_edits);

    std::vector<text_edit> file_edits;
    const declaration* first_caller = nullptr;
    for (const declaration* caller : region_functions()) {
      if (std::find(caller->calls.begin(), caller->calls.end(), f.qualified_name) ==
          caller->calls.end()) {
        continue;
      }
      const std::vector<std::size_t> sites =
          call_sites(text_, f.name, caller->body_offset, caller->range.end);
      if (sites.empty()) {
        explain("`" + caller->name + "` calls `" + f.name +
                "` (shared with other kernels) through a macro or a pointer, so a copy for this "
                "kernel cannot be called instead");
        return false;
      }
      for (const std::size_t site : sites) {
        file_edits.push_back({site, f.name.size(), copy_name});
      }
      if (first_caller == nullptr || caller->range.begin < first_caller->range.begin) {
        first_caller = caller;
      }
    }
    if (first_caller == nullptr || first_caller->range.begin < f.range.end) {
      // The copy must follow what the original declares before it.
      explain("`" + f.name + "` (shared with other kernels) is defined after its caller, so a " +
              "copy for this kernel has no place");
      return false;
    }
    file_edits.push_back({insertion_point(text_, *first_caller), 0, copy + "\n\n"});
    after = apply_edits(text_, file_edits);
    return true;
  }

  /// Whether the loop has an unroll knob's block right before it (an accepted knob proposal).
  bool knobbed(const loop_info& loop) const {
    static const std::regex block(R"(#pragma unroll rpl_unroll_\w+[ \t]*\n#endif[ \t]*\n[ \t]*$)");
    const std::size_t from = loop.keyword_offset > 200 ? loop.keyword_offset - 200 : 0;
    const std::string before(text_.substr(from, loop.keyword_offset - from));
    return std::regex_search(before, block);
  }

  /// Whether a declaration may go right before the loop: it starts a statement of a block (after
  /// `;`, `{` or `}`, not as the body of an `if`, `else` or loop, nor after a label), and it has
  /// no knob yet. At most four loops per function take knobs (5^4 configurations).
  bool takes_knob(const loop_info& loop) const {
    std::size_t at = loop.keyword_offset;
    for (;;) {
      const std::size_t line_begin = text_.rfind('\n', at == 0 ? 0 : at - 1);
      const std::size_t from = line_begin == std::string_view::npos ? 0 : line_begin + 1;
      const std::string_view before = text_.substr(from, at - from);
      const std::size_t last = before.find_last_not_of(" \t");
      if (last != std::string_view::npos) {
        const std::size_t first = before.find_first_not_of(" \t");
        if (before.substr(first, 2) == "//" || before[first] == '#') {
          if (before.find("#pragma unroll") != std::string_view::npos ||
              before.find("#endif") != std::string_view::npos) {
            return false; // a pragma or a knob's block ends right here
          }
          if (from == 0) {
            return false;
          }
          at = from - 1; // a comment line: look above it
          continue;
        }
        const char c = before[last];
        return c == ';' || c == '{' || c == '}';
      }
      if (from == 0) {
        return false;
      }
      at = from - 1;
    }
  }

  void propose_unroll_knobs(const loop_owner& owner, std::vector<const loop_info*> loops) {
    if (loops.size() > 4) {
      loops.resize(4); // the outermost first in source order: those matter most
    }
    if (loops.empty()) {
      return;
    }
    const declaration& f = *owner.function;
    std::vector<text_edit> edits;
    messages::proposal knobs;
    std::string names;
    std::set<unsigned> lines;
    for (const loop_info* loop : loops) {
      if (!lines.insert(loop->line).second) {
        continue; // two loops on one line: one knob name, so only the first
      }
      const std::string suffix = "L" + std::to_string(loop->line);
      const std::string macro = "RPL_UNROLL_" + suffix;
      const std::size_t line_begin =
          text_.rfind('\n', loop->keyword_offset == 0 ? 0 : loop->keyword_offset - 1);
      const std::size_t from = line_begin == std::string_view::npos ? 0 : line_begin + 1;
      const std::string_view lead = text_.substr(from, loop->keyword_offset - from);
      const bool own_line = lead.find_first_not_of(" \t") == std::string_view::npos;
      const std::string block = unroll_knob_block(macro, "rpl_unroll_" + suffix, lead);
      edits.push_back(own_line ? text_edit{from - f.range.begin, 0, block}
                               : text_edit{loop->keyword_offset - f.range.begin, 0, "\n" + block});
      messages::tunable_macro knob;
      knob.name = macro;
      knob.values = unroll_knob_values();
      knob.default_value = 0;
      knobs.tunables.push_back(std::move(knob));
      names += (names.empty() ? "`" : ", `") + macro + "`";
    }
    std::string after;
    if (!patched(owner, edits, after)) {
      return;
    }
    const std::string where = owner.copy ? " of `" + f.name + "` (in a copy that only `" +
                                               std::string(kernel_name_) + "` calls)"
                                         : " of `" + f.name + "`";
    const std::size_t configurations = static_cast<std::size_t>(
        std::pow(static_cast<double>(unroll_knob_values().size()), knobs.tunables.size()));
    const std::string id = "rule:unroll-knobs:" + f.name;
    if (skip_.count(id) != 0) {
      log_[std::string(rule_)].skipped.push_back(id);
      return;
    }
    if (after == text_) {
      return;
    }
    ++log_[std::string(rule_)].emitted;
    knobs.id = id;
    knobs.title = "tunable unroll factors " + names + " for the " +
                  std::to_string(knobs.tunables.size()) + " loop" +
                  (knobs.tunables.size() == 1 ? "" : "s") + where;
    knobs.rationale =
        "Each loop gets a macro for its `#pragma unroll` factor (0: the compiler's choice, as "
        "now; 1: none; 2, 4, 8), so that the best combination is searched as autotune searches a "
        "space (" +
        std::to_string(configurations) +
        " configurations) instead of one factor at a time; the macros stay in the source, "
        "overridable with -D.";
    knobs.diff = make_unified_diff(text_, after, source_name_);
    out_.push_back(std::move(knobs));
  }

  void propose_unrolls(const loop_owner& owner) {
    const declaration& f = *owner.function;
    const std::string where = owner.copy ? " of `" + f.name + "` (in a copy that only `" +
                                               std::string(kernel_name_) + "` calls)"
                                         : " of `" + f.name + "`";
    const std::string shared_note =
        owner.copy ? " The loop is in a function other kernels share, so it changes in a copy "
                     "for this kernel only."
                   : "";
    for (const loop_info* loop : owner.loops) {
      for (const int n : unroll_factors) {
        std::string after;
        if (!patched(owner, {unroll_edit(text_, loop->keyword_offset, n, f.range.begin)}, after)) {
          continue;
        }
        emit("rule:unroll:L" + std::to_string(loop->line) + ":" + std::to_string(n),
             "#pragma unroll " + std::to_string(n) + " on the `" + loop->keyword +
                 "` loop at line " + std::to_string(loop->line) + where,
             "Unrolling by " + std::to_string(n) +
                 " removes loop overhead (compare, branch, index update) and lets the compiler "
                 "schedule " +
                 std::to_string(n) +
                 " iterations' loads together to hide memory latency; it costs registers and "
                 "code size." +
                 shared_note,
             after);
      }
    }
    if (owner.loops.size() < 2) {
      return;
    }
    for (const int n : unroll_factors) {
      std::vector<text_edit> edits;
      for (const loop_info* loop : owner.loops) {
        edits.push_back(unroll_edit(text_, loop->keyword_offset, n, f.range.begin));
      }
      std::string after;
      if (!patched(owner, edits, after)) {
        continue;
      }
      emit("rule:unroll-all:" + f.name + ":" + std::to_string(n),
           "#pragma unroll " + std::to_string(n) + " on all " + std::to_string(owner.loops.size()) +
               " loops without one" + where,
           "Unrolling every loop that has no unroll pragma by " + std::to_string(n) +
               " removes their loop overhead and exposes independent loads to the scheduler; "
               "it costs registers and code size." +
               shared_note,
           after);
    }
  }

  void propose_vector_loads(const loop_owner& owner) {
    const declaration& f = *owner.function;
    if (text_.substr(f.range.begin, f.range.end - f.range.begin).find(vectorized_marker) !=
        std::string_view::npos) {
      // Its tail and fallback loops stay scalar.
      explain("`" + f.name + "` is vectorised already");
      return;
    }
    for (const loop_info* loop : owner.loops) {
      const vectorize_outcome outcome =
          vectorize_grid_stride_loop(text_, loop->keyword_offset, f.parameters, f.body_offset);
      if (!outcome.rewrite) {
        const std::string where = "line " + std::to_string(loop->line) + " of `" + f.name + "`: ";
        static constexpr std::string_view shape = "not a grid-stride loop: ";
        if (outcome.refusal.rfind(shape, 0) == 0) {
          not_grid_stride_.push_back(where + outcome.refusal.substr(shape.size()));
        } else if (outcome.refusal.rfind("not a", 0) == 0) {
          not_grid_stride_.push_back(where + outcome.refusal);
        } else {
          explain("the loop at " + where + outcome.refusal);
        }
        continue;
      }
      const vectorized_loop* v = &*outcome.rewrite;
      std::string after;
      if (!patched(owner,
                   {{v->replaced.begin - f.range.begin, v->replaced.end - v->replaced.begin,
                     v->replacement}},
                   after)) {
        continue;
      }
      std::string arrays;
      for (const std::string& a : v->arrays) {
        arrays += (arrays.empty() ? "`" : ", `") + a + "`";
      }
      emit("rule:vector:L" + std::to_string(loop->line) + ":" + v->vector_type,
           v->vector_type + " loads and stores in the grid-stride loop at line " +
               std::to_string(loop->line) + " of `" + f.name + "`",
           "The loop touches " + arrays + " only at its index, one element per access; " +
               std::to_string(v->width) + " elements per 16-byte " + v->vector_type +
               " access need a quarter of the memory instructions (fewer, wider transactions "
               "in flight per thread). The vector loop runs only when every array is 16-byte "
               "aligned (checked at run time, else the original loop runs), and a tail loop "
               "takes the last n % " +
               std::to_string(v->width) + " elements, so any size stays right.",
           after);
    }
  }

  /// Two-dimensional `__shared__` arrays of the function, with the offset (into the function's
  /// text) of their inner dimension's expression, when every use of the array indexes both
  /// dimensions (a use through a pointer would assume the unpadded layout).
  struct shared_array {
    std::string name;
    std::size_t inner_begin = 0, inner_end = 0; ///< the expression between the second [ ]
  };
  std::vector<shared_array> shared_arrays(std::string_view f) const {
    std::vector<shared_array> out;
    static const std::regex decl(
        R"(__shared__\s+[A-Za-z_][\w:<>\s]*?\s([A-Za-z_]\w*)\s*\[[^\[\]]+\]\s*\[([^\[\]]+)\]\s*;)");
    const std::string body(f);
    for (auto it = std::sregex_iterator(body.begin(), body.end(), decl);
         it != std::sregex_iterator(); ++it) {
      const std::string name = (*it)[1];
      const std::size_t decl_end = static_cast<std::size_t>(it->position(0) + it->length(0));
      bool indexed = true;
      for (std::size_t at = body.find(name, decl_end); at != std::string::npos && indexed;
           at = body.find(name, at + name.size())) {
        if ((at > 0 && is_ident(body[at - 1])) ||
            (at + name.size() < body.size() && is_ident(body[at + name.size()]))) {
          continue;
        }
        // name [ ... ] [ ... ]
        std::size_t i = at + name.size();
        for (int dims = 0; dims < 2 && indexed; ++dims) {
          while (i < body.size() && std::isspace(static_cast<unsigned char>(body[i])) != 0) {
            ++i;
          }
          if (i >= body.size() || body[i] != '[') {
            indexed = false;
            break;
          }
          int depth = 0;
          for (; i < body.size(); ++i) {
            depth += body[i] == '[' ? 1 : body[i] == ']' ? -1 : 0;
            if (depth == 0) {
              ++i;
              break;
            }
          }
        }
      }
      std::string inner = (*it)[2];
      while (!inner.empty() && std::isspace(static_cast<unsigned char>(inner.back())) != 0) {
        inner.pop_back();
      }
      const bool padded = inner.size() >= 3 && inner.compare(inner.size() - 3, 3, "+ 1") == 0;
      if (indexed && !padded) {
        out.push_back({name, static_cast<std::size_t>(it->position(2)),
                       static_cast<std::size_t>(it->position(2) + it->length(2))});
      }
    }
    return out;
  }

  void propose_padding(const loop_owner& owner) {
    const declaration& f = *owner.function;
    const std::string_view body = text_.substr(f.range.begin, f.range.end - f.range.begin);
    const auto arrays = shared_arrays(body);
    padding_candidates_ += arrays.size();
    const std::string where = owner.copy ? " of `" + f.name + "` (in a copy that only `" +
                                               std::string(kernel_name_) + "` calls)"
                                         : " of `" + f.name + "`";
    const auto pad = [&](const shared_array& a) {
      const std::string inner(body.substr(a.inner_begin, a.inner_end - a.inner_begin));
      const bool simple = inner.find_first_of("+-*/%?<>&|") == std::string::npos;
      return text_edit{a.inner_begin, a.inner_end - a.inner_begin,
                       (simple ? inner : "(" + inner + ")") + " + 1"};
    };
    const std::string rationale =
        "A two-dimensional shared array whose rows are a multiple of the 32 banks long puts the "
        "elements of one column in one bank, so the threads of a warp that write (or read) a "
        "column are served one after the other; one padding element per row spreads them over "
        "all banks. Every use indexes both dimensions, so only the layout changes.";
    for (const shared_array& a : arrays) {
      std::string after;
      if (patched(owner, {pad(a)}, after)) {
        emit("rule:pad-shared:" + f.name + ":" + a.name,
             "pad the shared array `" + a.name + "` by one element per row" + where, rationale,
             after);
      }
    }
    if (arrays.size() >= 2) {
      std::vector<text_edit> edits;
      for (const shared_array& a : arrays) {
        edits.push_back(pad(a));
      }
      std::string after;
      if (patched(owner, edits, after)) {
        emit("rule:pad-shared-all:" + f.name,
             "pad all " + std::to_string(arrays.size()) + " two-dimensional shared arrays" + where,
             rationale, after);
      }
    }
  }

  void propose_launch_bounds(std::uint32_t block_threads) {
    const declaration& k = *kernel_;
    if (k.from_macro) {
      explain("`" + k.name + "` is written by a macro, so its declarator cannot be edited");
      return;
    }
    const std::size_t head_end = k.body_offset;
    const std::string_view head = text_.substr(k.range.begin, head_end - k.range.begin);
    const std::size_t bounds = head.find("__launch_bounds__");
    if (bounds == std::string_view::npos) {
      if (block_threads == 0) {
        explain("the block size of the launch is unknown");
        return;
      }
      const std::vector<std::size_t> declarator =
          call_sites(text_, k.name, k.range.begin, head_end);
      if (declarator.empty()) {
        explain("the declarator of `" + k.name + "` was not found in its declaration");
        return;
      }
      const std::string n = std::to_string(block_threads);
      emit("rule:launch-bounds:" + n, "__launch_bounds__(" + n + ") on `" + k.name + "`",
           "The kernel is launched with " + n +
               " threads per block; saying so lets the compiler budget registers for that block "
               "size instead of the 1024-thread maximum, which can avoid spills or allow more "
               "resident blocks.",
           apply_edits(text_, {{declarator.back(), 0, "__launch_bounds__(" + n + ") "}}));
      return;
    }
    // Launch bounds with one argument: ask for a minimum of blocks per multiprocessor too.
    const std::size_t open = head.find('(', bounds);
    if (open == std::string_view::npos) {
      explain("the `__launch_bounds__` of `" + k.name + "` has no arguments in its text");
      return;
    }
    int depth = 0;
    bool comma = false;
    std::size_t close = std::string_view::npos;
    for (std::size_t i = open; i < head.size(); ++i) {
      depth += head[i] == '(' ? 1 : head[i] == ')' ? -1 : 0;
      comma = comma || (depth == 1 && head[i] == ',');
      if (depth == 0) {
        close = i;
        break;
      }
    }
    if (close == std::string_view::npos || comma) {
      explain("`" + k.name + "` has `__launch_bounds__` with a minimum of blocks already");
      return;
    }
    const std::string m = std::to_string(min_blocks_per_sm);
    const std::string args(head.substr(open + 1, close - open - 1));
    emit("rule:launch-bounds-min-blocks:" + m,
         "__launch_bounds__(" + args + ", " + m + ") on `" + k.name + "`",
         "Asking for at least " + m +
             " resident blocks per multiprocessor caps the registers per thread so that they fit: "
             "more warps to hide latency, at the risk of register spills.",
         apply_edits(text_, {{k.range.begin + close, 0, ", " + m}}));
  }

  const source_model& model_;
  std::string_view text_;
  std::string_view source_name_;
  std::string_view kernel_name_;
  std::set<std::string> skip_;
  const declaration* kernel_ = nullptr;
  std::set<std::string> region_;
  std::vector<messages::proposal> out_;
  std::string_view rule_;                    ///< the rule running, for emit() and explain()
  std::size_t padding_candidates_ = 0;       ///< shared arrays the padding rule could pad
  std::vector<std::string> not_grid_stride_; ///< loops the vector rule found of another shape
  std::map<std::string, rule_log, std::less<>> log_;
};

} // namespace

std::string to_line(const rule_not_applied& entry) {
  return entry.rule + ": " + entry.reason;
}

rule_transforms_result run_rule_transforms(const source_model& model,
                                           std::string_view text,
                                           std::string_view source_name,
                                           std::string_view kernel,
                                           std::uint32_t block_threads,
                                           const std::vector<std::string>& skip_ids) {
  return proposer(model, text, source_name, kernel, skip_ids).run(block_threads);
}

std::vector<messages::proposal> rule_proposals(const source_model& model,
                                               std::string_view text,
                                               std::string_view source_name,
                                               std::string_view kernel,
                                               std::uint32_t block_threads,
                                               const std::vector<std::string>& skip_ids) {
  return run_rule_transforms(model, text, source_name, kernel, block_threads, skip_ids).proposals;
}

} // namespace rpl::stages::optimize
