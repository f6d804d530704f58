#include "stages/optimize/loop_vectorizer.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <regex>
#include <set>

namespace rpl::stages::optimize {

namespace {

struct token {
  std::string text;
  std::size_t begin = 0;
  std::size_t end = 0;
};

bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_';
}
bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

/// C/C++ tokens of `text` from `from` on, comments skipped; stops after `limit` tokens. A
/// preprocessor directive becomes one "#" token (it makes the loop unrecognised).
std::vector<token> lex(std::string_view text, std::size_t from, std::size_t limit) {
  static const std::array<std::string_view, 22> punctuators = {
      "<<=", ">>=", "->", "::", "++", "--", "+=", "-=", "*=", "/=", "%=",
      "&=",  "|=",  "^=", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||"};
  std::vector<token> out;
  std::size_t i = from;
  while (i < text.size() && out.size() < limit) {
    const char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      ++i;
    } else if (text.compare(i, 2, "//") == 0) {
      const std::size_t nl = text.find('\n', i);
      i = nl == std::string_view::npos ? text.size() : nl;
    } else if (text.compare(i, 2, "/*") == 0) {
      const std::size_t close = text.find("*/", i + 2);
      i = close == std::string_view::npos ? text.size() : close + 2;
    } else if (ident_start(c)) {
      std::size_t j = i;
      while (j < text.size() && ident_char(text[j])) {
        ++j;
      }
      out.push_back({std::string(text.substr(i, j - i)), i, j});
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c)) != 0 ||
               (c == '.' && i + 1 < text.size() &&
                std::isdigit(static_cast<unsigned char>(text[i + 1])) != 0)) {
      std::size_t j = i;
      while (j < text.size() &&
             (ident_char(text[j]) || text[j] == '.' ||
              ((text[j] == '+' || text[j] == '-') && (text[j - 1] == 'e' || text[j - 1] == 'E')))) {
        ++j;
      }
      out.push_back({std::string(text.substr(i, j - i)), i, j});
      i = j;
    } else if (c == '"' || c == '\'') {
      std::size_t j = i + 1;
      while (j < text.size() && text[j] != c) {
        j += text[j] == '\\' ? 2 : 1;
      }
      j = std::min(j + 1, text.size());
      out.push_back({std::string(text.substr(i, j - i)), i, j});
      i = j;
    } else {
      std::size_t n = 1;
      for (const std::string_view p : punctuators) {
        if (text.compare(i, p.size(), p) == 0) {
          n = p.size();
          break;
        }
      }
      out.push_back({std::string(text.substr(i, n)), i, i + n});
      i += n;
    }
  }
  return out;
}

/// The index just past the bracket closing the one at `open` (tokens "(", "[" or "{"); 0 when it
/// is not closed.
std::size_t matching(const std::vector<token>& t, std::size_t open) {
  int depth = 0;
  for (std::size_t k = open; k < t.size(); ++k) {
    const std::string& s = t[k].text;
    depth += (s == "(" || s == "[" || s == "{") ? 1 : (s == ")" || s == "]" || s == "}") ? -1 : 0;
    if (depth == 0) {
      return k + 1;
    }
  }
  return 0;
}

/// The first token index in [from, to) spelled `s` at bracket depth 0, or `to`.
std::size_t
find_at_depth0(const std::vector<token>& t, std::size_t from, std::size_t to, std::string_view s) {
  int depth = 0;
  for (std::size_t k = from; k < to; ++k) {
    const std::string& x = t[k].text;
    if (depth == 0 && x == s) {
      return k;
    }
    depth += (x == "(" || x == "[" || x == "{") ? 1 : (x == ")" || x == "]" || x == "}") ? -1 : 0;
  }
  return to;
}

bool is_identifier(const std::string& s) {
  return !s.empty() && ident_start(s[0]);
}

bool is_assignment(const std::string& s) {
  return s == "=" || s == "+=" || s == "-=" || s == "*=" || s == "/=" || s == "%=" || s == "&=" ||
         s == "|=" || s == "^=" || s == "<<=" || s == ">>=";
}

std::string
slice(std::string_view text, const std::vector<token>& t, std::size_t from, std::size_t to) {
  return std::string(text.substr(t[from].begin, t[to - 1].end - t[from].begin));
}

/// What is known, at the loop, of a name declared before it: a pointer's element type, or the
/// geometry expression an integer variable holds.
struct scope_variable {
  bool pointer = false;    ///< a single-level pointer
  std::string element;     ///< its element type ("float"), when a pointer
  bool restricted = false; ///< declared __restrict__
  std::string geometry;    ///< "blockDim.x*gridDim.x": initialised so and never written after
  /// Its value may differ between threads of one row of the grid (it was computed from
  /// threadIdx.x, blockIdx.x, an intrinsic or such a variable): the rewrite changes which thread
  /// handles an element, so the body must not read it.
  bool thread_x_dependent = false;
};
using scope = std::map<std::string, scope_variable, std::less<>>;

/// The thread-geometry terms of [from, to) joined, casts and the parentheses that do not change
/// the meaning dropped: "blockIdx.x*blockDim.x+threadIdx.x"; a variable of `known` holding such
/// terms stands for them; empty when anything else (another variable, a constant) is there.
std::string geometry_expression(const std::vector<token>& t,
                                std::size_t from,
                                std::size_t to,
                                const scope& known) {
  static const std::set<std::string, std::less<>> cast_words = {
      "static_cast", "size_t",   "std",       "::", "int", "unsigned", "long",
      "int64_t",     "uint64_t", "ptrdiff_t", "<",  ">",   "const"};
  static const std::set<std::string, std::less<>> geometry = {"blockIdx", "blockDim", "threadIdx",
                                                              "gridDim"};
  std::string out;
  for (std::size_t k = from; k < to; ++k) {
    const std::string& s = t[k].text;
    const auto variable = known.find(s);
    if (geometry.count(s) != 0 && k + 2 < to && t[k + 1].text == "." && t[k + 2].text == "x") {
      out += s + ".x";
      k += 2;
    } else if (variable != known.end() && !variable->second.geometry.empty()) {
      out += "(" + variable->second.geometry + ")";
    } else if (s == "*" || s == "+" || s == "(" || s == ")") {
      out += s;
    } else if (cast_words.count(s) == 0) {
      return {};
    }
  }
  // "()" is what is left of a C-style cast; parentheses around one term, around a product (a
  // product binds tighter than the sum around it) or around everything change nothing.
  static const std::regex empty(R"(\(\))");
  static const std::regex term(R"(\(([A-Za-z]+\.x)\))");
  static const std::regex product(R"(\(([A-Za-z]+\.x\*[A-Za-z]+\.x)\))");
  for (std::string before; before != out;) {
    before = out;
    out = std::regex_replace(out, empty, "");
    out = std::regex_replace(out, term, "$1");
    out = std::regex_replace(out, product, "$1");
  }
  if (out.size() > 2 && out.front() == '(' && out.back() == ')' &&
      out.find_first_of("()", 1) == out.size() - 1) {
    out = out.substr(1, out.size() - 2);
  }
  return out;
}

bool is_global_index(const std::string& e) {
  return e == "blockIdx.x*blockDim.x+threadIdx.x" || e == "blockDim.x*blockIdx.x+threadIdx.x" ||
         e == "threadIdx.x+blockIdx.x*blockDim.x" || e == "threadIdx.x+blockDim.x*blockIdx.x";
}

bool is_grid_size(const std::string& e) {
  return e == "gridDim.x*blockDim.x" || e == "blockDim.x*gridDim.x";
}

/// The element type of a pointer's type ("const float *__restrict" -> "float"); empty when it is
/// not a single-level pointer.
std::string pointee(std::string_view type) {
  std::string out;
  int stars = 0;
  for (const token& t : lex(type, 0, 64)) {
    if (t.text == "*") {
      ++stars;
    } else if (t.text == "const" || t.text == "volatile" || t.text == "__restrict" ||
               t.text == "__restrict__" || t.text == "restrict") {
      continue;
    } else if (stars == 0) {
      out += (out.empty() ? "" : " ") + t.text;
    } else {
      return {};
    }
  }
  return stars == 1 ? out : std::string();
}

scope_variable pointer_variable(std::string_view type) {
  scope_variable v;
  v.element = pointee(type);
  v.pointer = !v.element.empty();
  v.restricted = v.pointer && type.find("restrict") != std::string_view::npos;
  return v;
}

/// Whether `t[k]` is the thread's or the block's x index (threadIdx, blockIdx without .y or .z).
bool x_geometry_at(const std::vector<token>& t, std::size_t k) {
  if (t[k].text != "threadIdx" && t[k].text != "blockIdx") {
    return false;
  }
  return k + 2 >= t.size() || t[k + 1].text != "." ||
         (t[k + 2].text != "y" && t[k + 2].text != "z");
}

/// Whether [from, to) computes something that may differ between threads of one grid row: the x
/// index, a warp or lane intrinsic, inline assembly, or a variable of `known` that does.
bool thread_x_dependent(const std::vector<token>& t,
                        std::size_t from,
                        std::size_t to,
                        const scope& known) {
  static const std::array<std::string_view, 13> per_lane = {
      "__shfl", "__ballot", "__activemask", "__match", "__reduce", "__any", "__all",
      "__lane", "__smid",   "__warpid",     "asm",     "__asm",    "clock"};
  for (std::size_t k = from; k < to; ++k) {
    const std::string& s = t[k].text;
    const auto variable = known.find(s);
    const auto intrinsic = [&](std::string_view prefix) { return s.rfind(prefix, 0) == 0; };
    if (x_geometry_at(t, k) || std::any_of(per_lane.begin(), per_lane.end(), intrinsic) ||
        (variable != known.end() && variable->second.thread_x_dependent &&
         (k == from || t[k - 1].text != "."))) {
      return true;
    }
  }
  return false;
}

/// Whether the name at `k` is assigned, incremented or has its address taken there.
bool written_at(const std::vector<token>& t, std::size_t k) {
  const std::string none;
  const std::string& next = k + 1 < t.size() ? t[k + 1].text : none;
  const std::string& prev = k > 0 ? t[k - 1].text : none;
  if (prev == "." || prev == "->") {
    return false; // a member of the same name
  }
  if (is_assignment(next) || next == "++" || next == "--" || prev == "++" || prev == "--") {
    return true;
  }
  const auto operand_end = [](const std::string& s) {
    return is_identifier(s) || std::isdigit(static_cast<unsigned char>(s[0])) != 0 || s == ")" ||
           s == "]";
  };
  return prev == "&" && (k < 2 || !operand_end(t[k - 2].text));
}

/// A variable declared at `k` (a statement's first token): `TYPE NAME =`, `TYPE NAME;` or `TYPE
/// NAME,`; the index of NAME, or 0 when the statement is not such a declaration.
std::size_t declared_name(const std::vector<token>& t, std::size_t k) {
  static const std::set<std::string, std::less<>> stops = {"=", ";", ",", "(", ")",
                                                           "[", "{", "}", "."};
  std::size_t j = k;
  while (j < t.size() && stops.count(t[j].text) == 0) {
    ++j;
  }
  if (j >= t.size() || j < k + 2 || (t[j].text != "=" && t[j].text != ";" && t[j].text != ",") ||
      !is_identifier(t[j - 1].text)) {
    return 0;
  }
  return j - 1;
}

/// Whether every word of [from, to) names an integer type.
bool integer_type(const std::vector<token>& t, std::size_t from, std::size_t to) {
  static const std::set<std::string, std::less<>> words = {
      "const", "int",     "unsigned", "long",    "short",    "signed",    "size_t", "std",
      "::",    "int64_t", "uint64_t", "int32_t", "uint32_t", "ptrdiff_t", "auto"};
  for (std::size_t k = from; k < to; ++k) {
    if (words.count(t[k].text) == 0) {
      return false;
    }
  }
  return from < to;
}

/// A variable declared before the loop, at brace depth `depth`.
struct declared {
  std::string name;
  int depth = 0;
  scope_variable variable;
};

scope visible_scope(const std::vector<parameter_info>& parameters,
                    const std::vector<declared>& live) {
  scope out;
  for (const parameter_info& p : parameters) {
    out[p.name] = pointer_variable(p.type);
  }
  for (const declared& d : live) {
    out[d.name] = d.variable; // a later declaration hides an earlier one
  }
  return out;
}

/// The variable declared by the statement [k, ...) whose name is at `name`.
declared declaration_at(std::string_view text,
                        const std::vector<token>& t,
                        std::size_t k,
                        std::size_t name,
                        int depth,
                        const scope& now) {
  declared d{t[name].text, depth, pointer_variable(slice(text, t, k, name))};
  if (t[name + 1].text == "=") {
    const std::size_t end = std::min(find_at_depth0(t, name + 2, t.size(), ";"),
                                     find_at_depth0(t, name + 2, t.size(), ","));
    if (!d.variable.pointer && integer_type(t, k, name)) {
      d.variable.geometry = geometry_expression(t, name + 2, end, now);
    }
    d.variable.thread_x_dependent = thread_x_dependent(t, name + 2, end, now);
  }
  return d;
}

/// The write of the name at `k` (written_at): it no longer holds its geometry, and it depends on
/// the thread when what is assigned does (or its address is taken).
void record_write(const std::vector<token>& t,
                  std::size_t k,
                  std::vector<declared>& live,
                  const scope& now) {
  for (auto it = live.rbegin(); it != live.rend(); ++it) {
    if (it->name != t[k].text) {
      continue;
    }
    it->variable.geometry.clear();
    std::size_t end = k + 1;
    while (end < t.size() && t[end].text != ";" && t[end].text != ")") {
      ++end;
    }
    it->variable.thread_x_dependent = it->variable.thread_x_dependent ||
                                      thread_x_dependent(t, k + 1, end, now) ||
                                      (k > 0 && t[k - 1].text == "&");
    return;
  }
}

/// The parameters, and the variables declared in the function from `scope_begin` up to the loop
/// at `loop_offset` in blocks still open there (a later declaration hides an earlier one); the
/// index of a `for` header counts as declared in the block around the `for`.
scope scan_scope(std::string_view text,
                 std::size_t scope_begin,
                 std::size_t loop_offset,
                 const std::vector<parameter_info>& parameters) {
  std::vector<declared> live;
  if (scope_begin >= loop_offset) {
    return visible_scope(parameters, live);
  }
  const std::vector<token> t = lex(text.substr(0, loop_offset), scope_begin, loop_offset);
  int braces = 0;
  int parens = 0;
  bool statement_start = true;
  for (std::size_t k = 0; k < t.size(); ++k) {
    const std::string& s = t[k].text;
    if (s == "{" || s == "}") {
      if (s == "}") {
        live.erase(std::remove_if(live.begin(), live.end(),
                                  [&](const declared& d) { return d.depth == braces; }),
                   live.end());
      }
      braces += s == "{" ? 1 : -1;
      parens = 0;
      statement_start = true;
      continue;
    }
    const bool for_header = s == "(" && k > 0 && t[k - 1].text == "for";
    parens += s == "(" ? 1 : s == ")" ? -1 : 0;
    if ((s == ";" && parens == 0) || for_header) {
      statement_start = true;
      continue;
    }
    const bool at_start = statement_start && (parens == 0 || t[k - 1].text == "(");
    statement_start = false;
    if (const std::size_t name = at_start ? declared_name(t, k) : 0; name != 0) {
      live.push_back(declaration_at(text, t, k, name, braces, visible_scope(parameters, live)));
      k = name; // the name itself is declared, not written
      continue;
    }
    if (is_identifier(s) && written_at(t, k)) {
      record_write(t, k, live, visible_scope(parameters, live));
    }
  }
  return visible_scope(parameters, live);
}

struct vector_kind {
  const char* type;
  unsigned width;
};

std::optional<vector_kind> vector_of(const std::string& element) {
  static const std::map<std::string, vector_kind, std::less<>> kinds = {
      {"float", {"float4", 4}},       {"int", {"int4", 4}},       {"unsigned", {"uint4", 4}},
      {"unsigned int", {"uint4", 4}}, {"double", {"double2", 2}},
  };
  const auto it = kinds.find(element);
  if (it == kinds.end()) {
    return std::nullopt;
  }
  return it->second;
}

/// `text` with `extra` added after each newline: a block moved deeper keeps its shape.
std::string reindent(std::string_view text, const std::string& extra) {
  std::string out;
  for (const char c : text) {
    out.push_back(c);
    if (c == '\n') {
      out += extra;
    }
  }
  return out;
}

/// `for (T i = START; i < BOUND; i += STEP) BODY` as token ranges of the loop's tokens.
struct grid_stride_loop {
  std::string index;
  std::string index_type;
  std::size_t start_from = 0, start_to = 0;
  std::size_t bound_from = 0, bound_to = 0;
  std::size_t step_from = 0, step_to = 0;
  std::size_t body_from = 0, body_to = 0; ///< a block with its braces, or one statement
};

/// The loop's header parts when `t` starts with `for (T i = ...; i < ...; i += ...)` and a body;
/// `why` says what differs otherwise.
std::optional<grid_stride_loop>
split_for_loop(std::string_view text, const std::vector<token>& t, std::string& why) {
  if (t.empty() || t[0].text != "for") {
    why = "not a `for` loop";
    return std::nullopt;
  }
  const std::size_t header_end = t.size() > 1 && t[1].text == "(" ? matching(t, 1) : 0;
  if (header_end == 0 || header_end >= t.size()) {
    why = "its header is not complete";
    return std::nullopt;
  }
  const std::size_t close = header_end - 1;
  grid_stride_loop loop;
  const std::size_t semi1 = find_at_depth0(t, 2, close, ";");
  const std::size_t eq = find_at_depth0(t, 2, semi1, "=");
  if (semi1 == close || eq == semi1 || eq < 4 || !is_identifier(t[eq - 1].text)) {
    why = "not a grid-stride loop: its init is not `T i = START`";
    return std::nullopt;
  }
  loop.index = t[eq - 1].text;
  loop.index_type = slice(text, t, 2, eq - 1);
  const std::size_t semi2 = find_at_depth0(t, semi1 + 1, close, ";");
  if (semi2 == close || semi2 < semi1 + 4 || t[semi1 + 1].text != loop.index ||
      t[semi1 + 2].text != "<") {
    why = "not a grid-stride loop: its condition is not `" + loop.index + " < N`";
    return std::nullopt;
  }
  if (close < semi2 + 4 || t[semi2 + 1].text != loop.index || t[semi2 + 2].text != "+=") {
    why = "not a grid-stride loop: its increment is not `" + loop.index + " += STEP`";
    return std::nullopt;
  }
  loop.start_from = eq + 1, loop.start_to = semi1;
  loop.bound_from = semi1 + 3, loop.bound_to = semi2;
  loop.step_from = semi2 + 3, loop.step_to = close;
  loop.body_from = header_end;
  if (t[loop.body_from].text == "{") {
    loop.body_to = matching(t, loop.body_from);
  } else {
    loop.body_to = find_at_depth0(t, loop.body_from, t.size(), ";");
    loop.body_to = loop.body_to == t.size() ? 0 : loop.body_to + 1;
  }
  if (loop.body_to == 0 || loop.body_to <= loop.body_from + 1) {
    why = "its body is empty or longer than the vectoriser reads (4096 tokens)";
    return std::nullopt;
  }
  return loop;
}

/// The loop's parts when `t` starts with a grid-stride loop over the global thread index whose
/// bound does not use the index; `why` says what differs otherwise.
std::optional<grid_stride_loop> match_grid_stride_loop(std::string_view text,
                                                       const std::vector<token>& t,
                                                       const scope& known,
                                                       std::string& why) {
  std::optional<grid_stride_loop> loop = split_for_loop(text, t, why);
  if (!loop) {
    return std::nullopt;
  }
  if (!is_global_index(geometry_expression(t, loop->start_from, loop->start_to, known))) {
    why = "not a grid-stride loop: its start `" + slice(text, t, loop->start_from, loop->start_to) +
          "` is not the thread's global x index (blockIdx.x * blockDim.x + threadIdx.x)";
    return std::nullopt;
  }
  if (!is_grid_size(geometry_expression(t, loop->step_from, loop->step_to, known))) {
    why = "not a grid-stride loop: its step `" + slice(text, t, loop->step_from, loop->step_to) +
          "` is not the grid's x size (blockDim.x * gridDim.x)";
    return std::nullopt;
  }
  for (std::size_t k = loop->bound_from; k < loop->bound_to; ++k) {
    if (t[k].text == loop->index) {
      why = "its bound `" + slice(text, t, loop->bound_from, loop->bound_to) + "` uses `" +
            loop->index + "`";
      return std::nullopt;
    }
  }
  return loop;
}

/// What the loop body does with the pointers.
struct body_accesses {
  struct access {
    std::size_t from = 0, to = 0; ///< token range of `P [ ... ]`
    std::string array;
    std::size_t statement = 0; ///< which statement of the body, counted by `;`
    bool read = false, written = false;
  };
  std::vector<access> accesses;
  std::vector<std::string> arrays;           ///< in order of first use
  std::map<std::string, std::string> offset; ///< E of `P[E + i]`, "" for `P[i]`
  std::map<std::string, std::string> first;  ///< the first access's text, for messages
  std::set<std::string> read, written;
  std::vector<std::string> store_order; ///< written arrays, by their last write
  std::set<std::string> names;          ///< what the bound, step, start and offsets read
  vector_kind kind{};
};

/// Why the body's token `s` makes the loop unrecognised, or empty.
std::string refused_construct(const std::string& s) {
  static const std::set<std::string, std::less<>> control = {
      "if",     "else",  "for",      "while", "do", "switch", "case",
      "return", "break", "continue", "goto",  "?",  "&&",     "||"};
  if (control.count(s) != 0) {
    return "the loop body has control flow (`" + s + "`)";
  }
  if (s == "#") {
    return "the loop body has a preprocessor directive";
  }
  if (s == "asm" || s == "__asm__") {
    return "the loop body has inline assembly";
  }
  if (s.rfind("atomic", 0) == 0) {
    return "the loop body calls " + s;
  }
  if (s.rfind("__sync", 0) == 0 || s.rfind("__threadfence", 0) == 0 || s == "__barrier_sync") {
    return "the loop body has a barrier or fence (`" + s + "`)";
  }
  static const std::array<std::string_view, 8> warp = {
      "__shfl", "__ballot", "__any", "__all", "__activemask", "__match", "__reduce", "__uni"};
  for (const std::string_view w : warp) {
    if (s.rfind(w, 0) == 0) {
      return "the loop body uses the warp-level `" + s + "` (lanes change elements)";
    }
  }
  if (s.rfind("rpl_", 0) == 0) {
    return "the loop body uses `" + s + "`, a name the rewrite would introduce";
  }
  return {};
}

/// The offset E of a subscript [from, to) that is `i`, `E + i` or `i + E`; nullopt (with `why`)
/// when it is something else or E uses a name the rewrite cannot hoist.
std::optional<std::string> subscript_offset(std::string_view text,
                                            const std::vector<token>& t,
                                            std::size_t from,
                                            std::size_t to,
                                            const std::string& index,
                                            std::set<std::string>& names,
                                            std::string& why) {
  if (to == from + 1 && t[from].text == index) {
    return std::string();
  }
  std::size_t e_from = 0, e_to = 0;
  if (to >= from + 3 && t[from].text == index && t[from + 1].text == "+") {
    e_from = from + 2, e_to = to;
  } else if (to >= from + 3 && t[to - 1].text == index && t[to - 2].text == "+") {
    e_from = from, e_to = to - 2;
  } else {
    why = "`" + slice(text, t, from - 2, to + 1) + "`: a subscript other than " + index + ", E + " +
          index + " or " + index + " + E";
    return std::nullopt;
  }
  static const std::set<std::string, std::less<>> operators = {"*", "/", "%", "+",
                                                               "-", "(", ")", "."};
  for (std::size_t k = e_from; k < e_to; ++k) {
    const std::string& s = t[k].text;
    const bool name = is_identifier(s) && s != index && (k + 1 == e_to || t[k + 1].text != "(");
    const bool number = std::isdigit(static_cast<unsigned char>(s[0])) != 0;
    if (!name && !number && operators.count(s) == 0) {
      why = "`" + slice(text, t, from - 2, to + 1) +
            "`: the offset has more than names, numbers and + - * / %";
      return std::nullopt;
    }
    if (name && (k == e_from || t[k - 1].text != ".")) {
      names.insert(s);
    }
  }
  return slice(text, t, e_from, e_to);
}

/// Records the access `P[...]` at `k` (P a pointer of `known`); false (with `why`) when it cannot
/// be vectorised. `element` is the element type of the accesses so far.
bool add_access(std::string_view text,
                const std::vector<token>& t,
                std::size_t k,
                const grid_stride_loop& loop,
                const scope& known,
                const scope_variable& pointer,
                std::size_t statement,
                std::string& element,
                body_accesses& out,
                std::string& why) {
  const std::string& s = t[k].text;
  if (k + 1 >= loop.body_to || t[k + 1].text != "[") {
    why = "the pointer `" + s + "` is used other than as `" + s + "[" + loop.index + "]`";
    return false;
  }
  const std::size_t close = matching(t, k + 1); // past `]`
  if (close == 0 || close > loop.body_to) {
    why = "the subscript of `" + s + "` is not closed";
    return false;
  }
  std::set<std::string> names;
  const std::optional<std::string> offset =
      subscript_offset(text, t, k + 2, close - 1, loop.index, names, why);
  if (!offset) {
    return false;
  }
  for (const std::string& name : names) {
    const auto variable = known.find(name);
    if (variable != known.end() && variable->second.thread_x_dependent) {
      why = "the offset of `" + slice(text, t, k, close) + "` reads `" + name +
            "`, which depends on the thread's x index";
      return false;
    }
  }
  out.names.insert(names.begin(), names.end());
  if (!vector_of(pointer.element)) {
    why = "`" + s + "` points to `" + pointer.element +
          "`, which has no 16-byte vector type here (float, int, unsigned, double)";
    return false;
  }
  if (element.empty()) {
    element = pointer.element;
  } else if (pointer.element != element) {
    why = "arrays of different element types (" + element + " and `" + s + "` " + pointer.element +
          ")";
    return false;
  }
  const auto seen = out.offset.find(s);
  if (seen != out.offset.end() && seen->second != *offset) {
    why = "`" + s + "` is accessed at two offsets (`" + out.first[s] + "` and `" +
          slice(text, t, k, close) + "`)";
    return false;
  }
  out.offset[s] = *offset;
  out.first.emplace(s, slice(text, t, k, close));
  if (std::find(out.arrays.begin(), out.arrays.end(), s) == out.arrays.end()) {
    out.arrays.push_back(s);
  }
  const std::string& prev = k > loop.body_from ? t[k - 1].text : "";
  const std::string& next = close < loop.body_to ? t[close].text : "";
  if (prev == "&" || next == "[" || next == "." || next == "->") {
    why = "`" + slice(text, t, k, close) + "` is used other than as a value";
    return false;
  }
  body_accesses::access a{k, close, s, statement, false, false};
  a.written = is_assignment(next) || next == "++" || next == "--" || prev == "++" || prev == "--";
  a.read = next != "=";
  if (a.written) {
    out.written.insert(s);
  }
  if (a.read) {
    out.read.insert(s);
  }
  out.accesses.push_back(a);
  return true;
}

/// Whether the name at `k` of the body is declared (`T name`, `T* name`) or written there.
bool declared_or_written(const std::vector<token>& t, std::size_t k, std::size_t body_from) {
  if (written_at(t, k)) {
    return true;
  }
  if (k <= body_from) {
    return false;
  }
  const std::string& prev = t[k - 1].text;
  if (is_identifier(prev)) {
    return true;
  }
  return (prev == "*" || prev == "&") && k >= body_from + 3 && is_identifier(t[k - 2].text) &&
         (t[k - 3].text == ";" || t[k - 3].text == "{" || t[k - 3].text == "}" ||
          t[k - 3].text == "const");
}

/// The checks over all accesses: something is written, arrays that may alias are not read after
/// another is written, the names the header and offsets read stay unchanged in the body.
bool check_accesses(const std::vector<token>& t,
                    const grid_stride_loop& loop,
                    const scope& known,
                    body_accesses& out,
                    std::string& why) {
  if (out.written.empty()) {
    why = "nothing is written at the index (the loop only reads)";
    return false;
  }
  for (const auto& w : out.accesses) {
    for (const auto& r : out.accesses) {
      if (w.written && r.read && r.array != w.array && r.statement > w.statement &&
          !known.at(w.array).restricted && !known.at(r.array).restricted) {
        why = "`" + r.array + "` is read after `" + w.array +
              "` is written and they may be the same array (neither is __restrict__)";
        return false;
      }
    }
  }
  static const std::set<std::string, std::less<>> keywords = {
      "const", "int",     "unsigned", "long",     "short",     "signed",    "size_t",
      "std",   "int64_t", "uint64_t", "int32_t",  "uint32_t",  "ptrdiff_t", "static_cast",
      "float", "double",  "blockIdx", "blockDim", "threadIdx", "gridDim",   "x"};
  for (std::size_t k = loop.start_from; k < loop.step_to; ++k) {
    if (is_identifier(t[k].text) && t[k].text != loop.index && keywords.count(t[k].text) == 0) {
      out.names.insert(t[k].text);
    }
  }
  for (std::size_t k = loop.body_from; k < loop.body_to; ++k) {
    if (is_identifier(t[k].text) && out.names.count(t[k].text) != 0 &&
        declared_or_written(t, k, loop.body_from)) {
      why = "the loop body declares or writes `" + t[k].text +
            "`, which the loop's header or an offset reads";
      return false;
    }
  }
  for (auto it = out.accesses.rbegin(); it != out.accesses.rend(); ++it) {
    if (it->written && std::find(out.store_order.begin(), out.store_order.end(), it->array) ==
                           out.store_order.end()) {
      out.store_order.insert(out.store_order.begin(), it->array);
    }
  }
  return true;
}

/// The body's accesses when every use of the index is a subscript of a known pointer (see the
/// header for the forms), all of one vectorisable element type, at least one written, with no
/// construct refused_construct names; `why` says what is not so otherwise.
std::optional<body_accesses> scan_body(std::string_view text,
                                       const std::vector<token>& t,
                                       const grid_stride_loop& loop,
                                       const scope& known,
                                       std::string& why) {
  for (std::size_t k = loop.body_from; k < loop.body_to; ++k) {
    if (why = refused_construct(t[k].text); !why.empty()) {
      return std::nullopt;
    }
  }
  body_accesses out;
  std::string element;
  std::size_t statement = 0;
  for (std::size_t k = loop.body_from; k < loop.body_to; ++k) {
    const std::string& s = t[k].text;
    statement += s == ";" ? 1 : 0;
    if (s == loop.index) {
      // The statement it is in, for the message.
      std::size_t from = k;
      while (from > loop.body_from + 1 && t[from - 1].text != ";" && t[from - 1].text != "{" &&
             t[from - 1].text != "}") {
        --from;
      }
      std::size_t to = k + 1;
      while (to < loop.body_to && t[to - 1].text != ";") {
        ++to;
      }
      why = "the index `" + s + "` is used other than as a subscript of a pointer parameter or " +
            "of a pointer declared before the loop (`" + slice(text, t, from, to) + "`)";
      return std::nullopt;
    }
    const bool member = k > loop.body_from && (t[k - 1].text == "." || t[k - 1].text == "->");
    if (x_geometry_at(t, k)) {
      why = "the loop body reads `" + s +
            ".x` (each thread handles other elements after the rewrite)";
      return std::nullopt;
    }
    const auto pointer = known.find(s);
    if (pointer != known.end() && pointer->second.thread_x_dependent && !member) {
      why = "the loop body reads `" + s + "`, which depends on the thread's x index (each " +
            "thread handles other elements after the rewrite)";
      return std::nullopt;
    }
    if (pointer == known.end() || !pointer->second.pointer || member) {
      continue;
    }
    if (!add_access(text, t, k, loop, known, pointer->second, statement, element, out, why)) {
      return std::nullopt;
    }
    k = out.accesses.back().to - 1;
  }
  if (!check_accesses(t, loop, known, out, why)) {
    return std::nullopt;
  }
  out.kind = *vector_of(element);
  return out;
}

/// A name the rewrite introduces (scan_body refuses loops that already use the prefix).
std::string local(const std::string& name) {
  return "rpl_" + name;
}

/// The indentation of the line the loop starts on; empty when code precedes the loop there.
std::string loop_indent(std::string_view text, std::size_t loop_offset) {
  const std::size_t line_begin = text.rfind('\n', loop_offset == 0 ? 0 : loop_offset - 1);
  const std::size_t lead_from = line_begin == std::string_view::npos ? 0 : line_begin + 1;
  std::string indent(text.substr(lead_from, loop_offset - lead_from));
  if (indent.find_first_not_of(" \t") != std::string::npos) {
    indent.clear();
  }
  return indent;
}

/// The vector loop's body: one vector load per array read, the body once per lane, one vector
/// store per array written.
std::string vector_body_text(std::string_view text,
                             const std::vector<token>& t,
                             const grid_stride_loop& loop,
                             const body_accesses& body,
                             const std::string& in2) {
  static const std::array<const char*, 4> lanes = {"x", "y", "z", "w"};
  const std::string vec(body.kind.type);
  const auto base = [&](const std::string& a) {
    const std::string& e = body.offset.at(a);
    return e.empty() ? a : a + " + (" + e + ")";
  };
  std::string out;
  for (const std::string& a : body.arrays) {
    if (body.read.count(a) != 0) {
      out += in2 + (body.written.count(a) != 0 ? "" : "const ") + vec + " " + local(a) +
             " = reinterpret_cast<const " + vec + "*>(" + base(a) + ")[" + local("v") + "];\n";
    } else {
      out += in2 + vec + " " + local(a) + ";\n";
    }
  }
  const std::size_t body_base = t[loop.body_from].begin;
  const std::string body_text(
      text.substr(body_base, t[loop.body_to - 1].end - t[loop.body_from].begin));
  const bool braced = t[loop.body_from].text == "{";
  for (unsigned lane = 0; lane < body.kind.width; ++lane) {
    std::string b = body_text;
    for (auto it = body.accesses.rbegin(); it != body.accesses.rend(); ++it) {
      b.replace(t[it->from].begin - body_base, t[it->to - 1].end - t[it->from].begin,
                local(it->array) + "." + lanes[lane]);
    }
    out += in2 + reindent(braced ? b : "{ " + b + " }", "    ") + "\n";
  }
  for (const std::string& a : body.store_order) {
    out += in2 + "reinterpret_cast<" + vec + "*>(" + base(a) + ")[" + local("v") +
           "] = " + local(a) + ";\n";
  }
  return out;
}

/// The replacement: when every array is 16-byte aligned, the vector loop and the scalar tail;
/// else the original loop.
std::string vector_loop_text(std::string_view text,
                             const std::vector<token>& t,
                             const grid_stride_loop& loop,
                             const body_accesses& body,
                             const std::string& indent) {
  const std::string start = slice(text, t, loop.start_from, loop.start_to);
  const std::string bound = slice(text, t, loop.bound_from, loop.bound_to);
  const std::string step = slice(text, t, loop.step_from, loop.step_to);
  const std::string original = slice(text, t, 0, loop.body_to);
  const std::string body_text = slice(text, t, loop.body_from, loop.body_to);
  const bool braced = t[loop.body_from].text == "{";
  const std::string vec(body.kind.type);
  const std::string w = std::to_string(body.kind.width);
  const std::string& index = loop.index;
  const std::string& index_type = loop.index_type;
  const std::string in1 = indent + "  ", in2 = indent + "    ";

  std::string aligned;
  for (const std::string& a : body.arrays) {
    const std::string& e = body.offset.at(a);
    aligned += std::string(aligned.empty() ? "" : " &&\n" + in1 + "    ") +
               "reinterpret_cast<unsigned long long>(" + (e.empty() ? a : a + " + (" + e + ")") +
               ") % 16 == 0";
  }
  const std::string header_gap = in1 + "     "; // under the first clause of `for (`
  std::string out = "if (" + aligned + ") {\n";
  out += in1 + std::string(vectorized_marker) + w + " elements per " + vec +
         " access, then the last (" + bound + ") % " + w + " one at a time.\n";
  out += in1 + "for (" + index_type + " " + local("v") + " = " + start + ";\n" + header_gap +
         local("v") + " < (" + bound + ") / " + w + ";\n" + header_gap + local("v") +
         " += " + step + ") {\n";
  out += vector_body_text(text, t, loop, body, in2);
  out += in1 + "}\n";
  out += in1 + "for (" + index_type + " " + index + " = (" + bound + ") / " + w + " * " + w +
         " + " + start + ";\n" + header_gap + index + " < " + bound + ";\n" + header_gap + index +
         " += " + step + ")" + (braced ? " " : "\n" + in2) + reindent(body_text, "  ") + "\n";
  out += indent + "} else {\n";
  out += in1 + reindent(original, "  ") + "\n";
  out += indent + "}";
  return out;
}

} // namespace

vectorize_outcome vectorize_grid_stride_loop(std::string_view text,
                                             std::size_t loop_offset,
                                             const std::vector<parameter_info>& parameters,
                                             std::size_t scope_begin) {
  vectorize_outcome result;
  const std::vector<token> t = lex(text, loop_offset, 4096);
  const scope known = scan_scope(text, scope_begin, loop_offset, parameters);
  const std::optional<grid_stride_loop> loop =
      match_grid_stride_loop(text, t, known, result.refusal);
  if (!loop) {
    return result;
  }
  const std::optional<body_accesses> body = scan_body(text, t, *loop, known, result.refusal);
  if (!body) {
    return result;
  }
  vectorized_loop v;
  v.replaced = {t[0].begin, t[loop->body_to - 1].end};
  v.replacement = vector_loop_text(text, t, *loop, *body, loop_indent(text, loop_offset));
  v.vector_type = body->kind.type;
  v.width = body->kind.width;
  v.arrays = body->arrays;
  result.rewrite = std::move(v);
  result.refusal.clear();
  return result;
}

} // namespace rpl::stages::optimize
