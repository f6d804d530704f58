#include "stages/optimize/source_guard.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <optional>
#include <regex>

namespace rpl::stages::optimize {

namespace {

const declaration* find_kernel(const source_model& model, std::string_view kernel) {
  for (const declaration& d : model.declarations) {
    if (d.kind == decl_kind::kernel && d.is_definition &&
        (d.name == kernel || d.qualified_name == kernel)) {
      return &d;
    }
  }
  return nullptr;
}

/// Function definitions by qualified name (overloads share one entry: they move together).
std::map<std::string, std::vector<const declaration*>> definitions(const source_model& model) {
  std::map<std::string, std::vector<const declaration*>> out;
  for (const declaration& d : model.declarations) {
    if (is_function(d.kind) && d.is_definition) {
      out[d.qualified_name].push_back(&d);
    }
  }
  return out;
}

std::set<std::string>
reach(const source_model& model, const declaration& kernel, bool device_only) {
  const auto defs = definitions(model);
  std::set<std::string> seen{kernel.qualified_name};
  std::vector<const declaration*> work{&kernel};
  while (!work.empty()) {
    const declaration* d = work.back();
    work.pop_back();
    for (const std::string& callee : d->calls) {
      const auto it = defs.find(callee);
      if (it == defs.end() || seen.count(callee) != 0) {
        continue;
      }
      const decl_kind kind = it->second.front()->kind;
      if (kind == decl_kind::device_function ||
          (!device_only && kind == decl_kind::host_device_function)) {
        seen.insert(callee);
        for (const declaration* def : it->second) {
          work.push_back(def);
        }
      }
    }
  }
  return seen;
}

/// The region of `model`, limited to `allowed` names when given (the patched source's region may
/// hold only what the original region held, plus new functions).
std::set<std::string> region_of(const source_model& model,
                                std::string_view kernel,
                                const std::set<std::string>* existing_before,
                                const std::set<std::string>* region_before) {
  const declaration* k = find_kernel(model, kernel);
  if (k == nullptr) {
    return {};
  }
  std::set<std::string> region = reach(model, *k, true);
  if (existing_before != nullptr && region_before != nullptr) {
    for (auto it = region.begin(); it != region.end();) {
      const bool allowed = *it == k->qualified_name || region_before->count(*it) != 0 ||
                           existing_before->count(*it) == 0;
      it = allowed ? std::next(it) : region.erase(it);
    }
  }
  // Drop, until nothing changes, any function that something outside the region names.
  bool changed = true;
  while (changed) {
    changed = false;
    for (const declaration& d : model.declarations) {
      const bool inside = is_function(d.kind) && d.is_definition && region.count(d.qualified_name);
      if (inside) {
        continue;
      }
      for (const std::string& callee : d.calls) {
        if (callee != k->qualified_name && region.erase(callee) != 0) {
          changed = true;
        }
      }
    }
    // A function left in the region must still be reached from the kernel through the region.
    std::set<std::string> reached{k->qualified_name};
    std::vector<std::string> work{k->qualified_name};
    const auto defs = definitions(model);
    while (!work.empty()) {
      const std::string name = work.back();
      work.pop_back();
      const auto it = defs.find(name);
      if (it == defs.end()) {
        continue;
      }
      for (const declaration* def : it->second) {
        for (const std::string& callee : def->calls) {
          if (region.count(callee) != 0 && reached.insert(callee).second) {
            work.push_back(callee);
          }
        }
      }
    }
    if (reached.size() != region.size()) {
      region = reached;
      changed = true;
    }
  }
  return region;
}

bool in_region(const declaration& d, const std::set<std::string>& region) {
  return is_function(d.kind) && d.is_definition && region.count(d.qualified_name) != 0;
}

std::string describe(const declaration& d) {
  std::string name = d.qualified_name.empty() ? d.name : d.qualified_name;
  if (name.empty()) {
    name = d.tokens.empty() ? std::string("(unnamed)") : d.tokens.front();
  }
  return std::string(to_string(d.kind)) + " `" + name + "` (line " + std::to_string(d.line) + ")";
}

/// A key that matches a declaration with its counterpart in the other model.
std::vector<std::string> keys_of(const std::vector<const declaration*>& decls) {
  std::map<std::string, int> seen;
  std::vector<std::string> out;
  for (const declaration* d : decls) {
    std::string base = std::string(to_string(d->kind)) + ":" +
                       (d->qualified_name.empty() ? d->name : d->qualified_name);
    if (d->qualified_name.empty() && d->name.empty() && !d->tokens.empty()) {
      base += d->tokens.front();
    }
    out.push_back(base + "#" + std::to_string(seen[base]++));
  }
  return out;
}

/// The head of a function: its tokens up to the body, `__launch_bounds__(...)` left out (adding
/// or changing launch bounds is allowed).
std::vector<std::string> head_without_launch_bounds(const declaration& d) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < d.tokens.size(); ++i) {
    if (d.tokens[i] == "{") {
      break;
    }
    if (d.tokens[i] == "__launch_bounds__") {
      int depth = 0;
      std::size_t j = i + 1;
      for (; j < d.tokens.size(); ++j) {
        depth += d.tokens[j] == "(" ? 1 : d.tokens[j] == ")" ? -1 : 0;
        if (depth == 0) {
          break;
        }
      }
      i = j;
      continue;
    }
    out.push_back(d.tokens[i]);
  }
  return out;
}

std::string join(const std::vector<std::string>& tokens, std::size_t limit = 160) {
  std::string out;
  for (const std::string& t : tokens) {
    out += (out.empty() ? "" : " ") + t;
    if (out.size() > limit) {
      return out.substr(0, limit) + "...";
    }
  }
  return out;
}

/// The text outside every declaration and file-scope directive, without comments and whitespace:
/// namespace braces, stray tokens.
std::string gaps(const source_model& model, std::string_view text) {
  std::vector<byte_range> covered;
  for (const declaration& d : model.declarations) {
    covered.push_back(d.range);
  }
  for (const directive_info& d : model.directives) {
    covered.push_back(d.range);
  }
  std::sort(covered.begin(), covered.end(),
            [](const byte_range& a, const byte_range& b) { return a.begin < b.begin; });
  std::string raw;
  std::size_t pos = 0;
  for (const byte_range& r : covered) {
    if (r.begin > pos) {
      raw.append(text.substr(pos, std::min(r.begin, text.size()) - pos));
    }
    raw.push_back('\n');
    pos = std::max(pos, std::min(r.end, text.size()));
  }
  if (pos < text.size()) {
    raw.append(text.substr(pos));
  }
  std::string out;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw.compare(i, 2, "//") == 0) {
      while (i < raw.size() && raw[i] != '\n') {
        ++i;
      }
    } else if (raw.compare(i, 2, "/*") == 0) {
      const std::size_t close = raw.find("*/", i + 2);
      i = close == std::string::npos ? raw.size() : close + 1;
    } else if (!std::isspace(static_cast<unsigned char>(raw[i]))) {
      out.push_back(raw[i]);
    }
  }
  return out;
}

std::string normalized(std::string_view directive) {
  std::string out;
  bool space = false;
  for (const char c : directive) {
    if (c == '\\' || std::isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
    } else {
      if (space) {
        out.push_back(' ');
      }
      space = false;
      out.push_back(c);
    }
  }
  return out;
}

bool is_unroll_pragma(std::string_view directive) {
  const std::string n = normalized(directive);
  return n.rfind("# pragma unroll", 0) == 0 || n.rfind("#pragma unroll", 0) == 0 ||
         n.rfind("#pragma nounroll", 0) == 0 || n.rfind("# pragma nounroll", 0) == 0;
}

/// A line of a tunable macro's block (tunable_macros.hpp): `#ifndef RPL_X`, `#define RPL_X 4`,
/// `#if RPL_X > 0`, `#endif`. Nothing else: no other name, no value but an integer.
bool is_knob_directive(std::string_view directive) {
  static const std::regex knob(
      R"(#\s*(ifndef RPL_[A-Z0-9_]+|define RPL_[A-Z0-9_]+ -?[0-9]+|if RPL_[A-Z0-9_]+ > 0|endif))");
  return std::regex_match(normalized(directive), knob);
}

/// What the guards count inside function bodies.
struct body_counts {
  std::map<std::string, int> storage;  ///< static, __device__, __constant__, __managed__
  std::map<std::string, int> asm_uses; ///< asm, __asm__, __asm
  std::map<std::string, int> launches; ///< <<<, cudaMalloc..., printf
};

bool is_launch_name(const std::string& t) {
  static constexpr std::array<std::string_view, 10> prefixes = {
      "cudaLaunch", "cudaStream", "cudaGraph", "cudaMalloc", "cudaMemcpy",
      "hipLaunch",  "hipStream",  "hipMalloc", "hipMemcpy",  "hipGraph"};
  if (t == "malloc" || t == "free" || t == "printf" || t == "<<<") {
    return true;
  }
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](std::string_view p) { return t.rfind(p, 0) == 0; });
}

void count_body(const declaration& d, body_counts& counts) {
  bool in_body = false;
  for (std::size_t i = 0; i < d.tokens.size(); ++i) {
    const std::string& t = d.tokens[i];
    if (!in_body) {
      in_body = t == "{";
      continue;
    }
    if (t == "static" || t == "__device__" || t == "__constant__" || t == "__managed__") {
      ++counts.storage[t];
    } else if (t == "asm" || t == "__asm__" || t == "__asm") {
      ++counts.asm_uses[t];
    } else if (t == "<<" && i + 1 < d.tokens.size() && d.tokens[i + 1] == "<") {
      ++counts.launches["<<<"];
    } else if (is_launch_name(t)) {
      ++counts.launches[t];
    }
  }
}

void compare_counts(const std::map<std::string, int>& before,
                    const std::map<std::string, int>& after,
                    const std::vector<const declaration*>& region_after,
                    const char* guard,
                    const char* what,
                    std::vector<guard_finding>& findings) {
  for (const auto& [token, count] : after) {
    const auto it = before.find(token);
    const int had = it == before.end() ? 0 : it->second;
    if (count <= had) {
      continue;
    }
    std::string where;
    for (const declaration* d : region_after) {
      body_counts c;
      count_body(*d, c);
      const auto& m = std::string_view(guard) == "new_global"   ? c.storage
                      : std::string_view(guard) == "inline_asm" ? c.asm_uses
                                                                : c.launches;
      if (m.count(token) != 0) {
        where += (where.empty() ? "" : ", ") + describe(*d);
      }
    }
    findings.push_back({guard, std::string(what) + " `" + token + "` appears " +
                                   std::to_string(count) + " time(s) in the target region (was " +
                                   std::to_string(had) + "), in " + where});
  }
}

/// What the guards after kernel_missing read: both sources, the kernel's definition in each, and
/// the declarations of the target regions with their body counts.
struct guard_inputs {
  const source_model& before;
  std::string_view before_text;
  const source_model& after;
  std::string_view after_text;
  std::string_view kernel;
  const declaration& kernel_before;
  const declaration& kernel_after;
  std::set<std::string> region_before;
  std::set<std::string> region_after;
  /// Every function the original kernel reaches: what the original region could have used.
  std::vector<const declaration*> reach_before;
  std::vector<const declaration*> region_decls_after;
  body_counts counts_before; ///< over reach_before
  body_counts counts_after;  ///< over region_decls_after
};

std::optional<guard_finding>
guard_kernel_missing(const declaration* kb, const declaration* ka, std::string_view kernel) {
  if (kb != nullptr && ka != nullptr) {
    return std::nullopt;
  }
  return guard_finding{"kernel_missing", "kernel `" + std::string(kernel) + "` is not defined in " +
                                             (kb == nullptr ? "the original" : "the patched") +
                                             " source"};
}

/// The kernel's mangled name, return type, parameters and head, launch bounds aside.
void guard_signature_changed(const guard_inputs& in, std::vector<guard_finding>& findings) {
  const declaration* kb = &in.kernel_before;
  const declaration* ka = &in.kernel_after;
  std::string what;
  if (kb->mangled_name != ka->mangled_name) {
    what = "mangled name `" + kb->mangled_name + "` became `" + ka->mangled_name + "`";
  } else if (kb->return_type != ka->return_type) {
    what = "return type `" + kb->return_type + "` became `" + ka->return_type + "`";
  } else if (kb->parameters.size() != ka->parameters.size()) {
    what = std::to_string(kb->parameters.size()) + " parameters became " +
           std::to_string(ka->parameters.size());
  } else if (kb->template_parameters != ka->template_parameters) {
    what = "template parameters changed";
  } else {
    for (std::size_t i = 0; i < kb->parameters.size() && what.empty(); ++i) {
      if (kb->parameters[i] != ka->parameters[i]) {
        what = "parameter " + std::to_string(i + 1) + " `" + kb->parameters[i].type + " " +
               kb->parameters[i].name + "` became `" + ka->parameters[i].type + " " +
               ka->parameters[i].name + "`";
      }
    }
  }
  if (what.empty()) {
    const auto hb = head_without_launch_bounds(*kb);
    const auto ha = head_without_launch_bounds(*ka);
    if (hb != ha) {
      what = "declaration `" + join(hb) + "` became `" + join(ha) + "`";
    }
  }
  if (!what.empty()) {
    findings.push_back({"signature_changed", "kernel `" + std::string(in.kernel) + "` (line " +
                                                 std::to_string(ka->line) + "): " + what});
  }
}

/// Everything outside the target regions: the same declarations, token for token, in the same
/// order, with the same text between them.
void guard_outside_target_changed(const guard_inputs& in, std::vector<guard_finding>& findings) {
  std::vector<const declaration*> ob, oa;
  for (const declaration& d : in.before.declarations) {
    if (!in_region(d, in.region_before)) {
      ob.push_back(&d);
    }
  }
  for (const declaration& d : in.after.declarations) {
    if (!in_region(d, in.region_after)) {
      oa.push_back(&d);
    }
  }
  const std::vector<std::string> kb_keys = keys_of(ob), ka_keys = keys_of(oa);
  const std::set<std::string> sb(kb_keys.begin(), kb_keys.end()),
      sa(ka_keys.begin(), ka_keys.end());
  std::vector<std::string> problems;
  for (std::size_t i = 0; i < oa.size(); ++i) {
    if (sb.count(ka_keys[i]) == 0) {
      problems.push_back(describe(*oa[i]) + " was added outside the target region");
    }
  }
  for (std::size_t i = 0; i < ob.size(); ++i) {
    if (sa.count(kb_keys[i]) == 0) {
      problems.push_back(describe(*ob[i]) + " was removed or moved into the target region");
    }
  }
  std::map<std::string, const declaration*> by_key;
  for (std::size_t i = 0; i < ob.size(); ++i) {
    by_key[kb_keys[i]] = ob[i];
  }
  for (std::size_t i = 0; i < oa.size(); ++i) {
    const auto it = by_key.find(ka_keys[i]);
    if (it != by_key.end() && it->second->tokens != oa[i]->tokens) {
      problems.push_back(describe(*oa[i]) + " changed");
    }
  }
  if (problems.empty()) {
    std::vector<std::string> common_b, common_a;
    for (const std::string& k : kb_keys) {
      if (sa.count(k) != 0) {
        common_b.push_back(k);
      }
    }
    for (const std::string& k : ka_keys) {
      if (sb.count(k) != 0) {
        common_a.push_back(k);
      }
    }
    if (common_b != common_a) {
      problems.push_back("declarations outside the target region were reordered");
    }
  }
  if (problems.empty() && gaps(in.before, in.before_text) != gaps(in.after, in.after_text)) {
    problems.push_back("code between declarations changed (namespace braces or stray tokens)");
  }
  for (const std::string& p : problems) {
    findings.push_back({"outside_target_changed", p});
  }
}

/// File scope, and directives inside the region other than unroll pragmas and the lines of
/// tunable macros' blocks.
void guard_directive_changed(const guard_inputs& in, std::vector<guard_finding>& findings) {
  std::vector<std::string> db, da;
  for (const directive_info& d : in.before.directives) {
    db.push_back(normalized(d.text));
  }
  for (const directive_info& d : in.after.directives) {
    da.push_back(normalized(d.text));
  }
  if (db != da) {
    std::multiset<std::string> mb(db.begin(), db.end());
    std::string what;
    for (const directive_info& d : in.after.directives) {
      const auto it = mb.find(normalized(d.text));
      if (it == mb.end()) {
        what += (what.empty() ? "" : "; ") +
                ("new `" + normalized(d.text) + "` at line " + std::to_string(d.line));
      } else {
        mb.erase(it);
      }
    }
    for (const std::string& gone : mb) {
      what += (what.empty() ? "" : "; ") + ("`" + gone + "` removed");
    }
    findings.push_back(
        {"directive_changed", what.empty() ? "file-scope directives were reordered" : what});
  }
  const auto inside = [](const std::vector<const declaration*>& decls, std::string_view text) {
    std::multiset<std::string> out;
    for (const directive_info& d : scan_directives(text)) {
      for (const declaration* decl : decls) {
        if (decl->range.contains(d.range.begin) && !is_unroll_pragma(d.text) &&
            !is_knob_directive(d.text)) {
          out.insert(normalized(d.text));
        }
      }
    }
    return out;
  };
  std::multiset<std::string> rb = inside(in.reach_before, in.before_text);
  for (const std::string& d : inside(in.region_decls_after, in.after_text)) {
    const auto it = rb.find(d);
    if (it == rb.end()) {
      findings.push_back({"directive_changed", "new `" + d + "` inside the target region"});
    } else {
      rb.erase(it);
    }
  }
}

/// Namespace-scope variables, and static/__device__/__constant__ locals.
void guard_new_global(const guard_inputs& in, std::vector<guard_finding>& findings) {
  std::set<std::string> vars_before;
  for (const declaration& d : in.before.declarations) {
    if (is_variable(d.kind)) {
      vars_before.insert(d.qualified_name);
    }
  }
  for (const declaration& d : in.after.declarations) {
    if (is_variable(d.kind) && vars_before.count(d.qualified_name) == 0) {
      findings.push_back({"new_global", "new namespace-scope " + describe(d)});
    }
  }
  compare_counts(in.counts_before.storage, in.counts_after.storage, in.region_decls_after,
                 "new_global", "storage class", findings);
}

void guard_inline_asm(const guard_inputs& in, std::vector<guard_finding>& findings) {
  compare_counts(in.counts_before.asm_uses, in.counts_after.asm_uses, in.region_decls_after,
                 "inline_asm", "inline assembly", findings);
}

/// New host or host-device functions, new kernels.
void guard_host_code(const guard_inputs& in, std::vector<guard_finding>& findings) {
  std::set<std::string> functions_before;
  for (const declaration& d : in.before.declarations) {
    if (is_function(d.kind)) {
      functions_before.insert(std::string(to_string(d.kind)) + ":" + d.qualified_name);
    }
  }
  for (const declaration& d : in.after.declarations) {
    const bool hostish = d.kind == decl_kind::host_function ||
                         d.kind == decl_kind::host_device_function || d.kind == decl_kind::kernel;
    if (hostish &&
        functions_before.count(std::string(to_string(d.kind)) + ":" + d.qualified_name) == 0) {
      findings.push_back({"host_code", "new " + describe(d)});
    }
  }
}

void guard_device_launch(const guard_inputs& in, std::vector<guard_finding>& findings) {
  compare_counts(in.counts_before.launches, in.counts_after.launches, in.region_decls_after,
                 "device_launch", "launch, allocation or printf", findings);
}

} // namespace

std::set<std::string> reachable_functions(const source_model& model, std::string_view kernel) {
  const declaration* k = find_kernel(model, kernel);
  return k == nullptr ? std::set<std::string>{} : reach(model, *k, false);
}

std::set<std::string> target_region(const source_model& model, std::string_view kernel) {
  return region_of(model, kernel, nullptr, nullptr);
}

namespace {

/// The definitions of the functions the original kernel reaches.
std::vector<const declaration*> reached_definitions(const source_model& model,
                                                    std::string_view kernel) {
  const std::set<std::string> reachable = reachable_functions(model, kernel);
  std::vector<const declaration*> out;
  for (const declaration& d : model.declarations) {
    if (is_function(d.kind) && d.is_definition && reachable.count(d.qualified_name)) {
      out.push_back(&d);
    }
  }
  return out;
}

std::vector<const declaration*> definitions_in(const source_model& model,
                                               const std::set<std::string>& region) {
  std::vector<const declaration*> out;
  for (const declaration& d : model.declarations) {
    if (in_region(d, region)) {
      out.push_back(&d);
    }
  }
  return out;
}

body_counts counts_of(const std::vector<const declaration*>& decls) {
  body_counts counts;
  for (const declaration* d : decls) {
    count_body(*d, counts);
  }
  return counts;
}

} // namespace

std::vector<guard_finding> check_source(const source_model& before,
                                        std::string_view before_text,
                                        const source_model& after,
                                        std::string_view after_text,
                                        std::string_view kernel) {
  const declaration* kb = find_kernel(before, kernel);
  const declaration* ka = find_kernel(after, kernel);
  if (auto missing = guard_kernel_missing(kb, ka, kernel)) {
    return {std::move(*missing)};
  }

  std::set<std::string> existing_before;
  for (const declaration& d : before.declarations) {
    existing_before.insert(d.qualified_name);
  }
  std::set<std::string> region_before = target_region(before, kernel);
  std::set<std::string> region_after = region_of(after, kernel, &existing_before, &region_before);
  std::vector<const declaration*> reach_before = reached_definitions(before, kernel);
  std::vector<const declaration*> region_decls_after = definitions_in(after, region_after);
  body_counts counts_before = counts_of(reach_before);
  body_counts counts_after = counts_of(region_decls_after);
  const guard_inputs in{before,
                        before_text,
                        after,
                        after_text,
                        kernel,
                        *kb,
                        *ka,
                        std::move(region_before),
                        std::move(region_after),
                        std::move(reach_before),
                        std::move(region_decls_after),
                        std::move(counts_before),
                        std::move(counts_after)};

  // The guards in the order their findings are reported.
  std::vector<guard_finding> findings;
  guard_signature_changed(in, findings);
  guard_outside_target_changed(in, findings);
  guard_directive_changed(in, findings);
  guard_new_global(in, findings);
  guard_inline_asm(in, findings);
  guard_host_code(in, findings);
  guard_device_launch(in, findings);
  return findings;
}

} // namespace rpl::stages::optimize
