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

/// The thread-geometry terms of [from, to) joined, casts and the parentheses that do not change
/// the meaning dropped: "blockIdx.x*blockDim.x+threadIdx.x"; empty when anything else (another
/// variable, a constant) is there.
std::string geometry_expression(const std::vector<token>& t, std::size_t from, std::size_t to) {
  static const std::set<std::string, std::less<>> cast_words = {
      "static_cast", "size_t",   "std",       "::", "int", "unsigned", "long",
      "int64_t",     "uint64_t", "ptrdiff_t", "<",  ">",   "const"};
  static const std::set<std::string, std::less<>> geometry = {"blockIdx", "blockDim", "threadIdx",
                                                              "gridDim"};
  std::string out;
  for (std::size_t k = from; k < to; ++k) {
    const std::string& s = t[k].text;
    if (geometry.count(s) != 0 && k + 2 < to && t[k + 1].text == "." && t[k + 2].text == "x") {
      out += s + ".x";
      k += 2;
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

/// The element type of a pointer parameter's type ("const float *__restrict" -> "float"); empty
/// when it is not a single-level pointer.
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

std::string
slice(std::string_view text, const std::vector<token>& t, std::size_t from, std::size_t to) {
  return std::string(text.substr(t[from].begin, t[to - 1].end - t[from].begin));
}

bool is_assignment(const std::string& s) {
  return s == "=" || s == "+=" || s == "-=" || s == "*=" || s == "/=" || s == "%=" || s == "&=" ||
         s == "|=" || s == "^=" || s == "<<=" || s == ">>=";
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

/// The loop's parts when `t` starts with a grid-stride loop over the global thread index whose
/// bound does not use the index; nullopt otherwise.
std::optional<grid_stride_loop> match_grid_stride_loop(std::string_view text,
                                                       const std::vector<token>& t) {
  if (t.size() < 12 || t[0].text != "for" || t[1].text != "(") {
    return std::nullopt;
  }
  const std::size_t header_end = matching(t, 1); // past ')'
  if (header_end == 0 || header_end >= t.size()) {
    return std::nullopt;
  }
  const std::size_t close = header_end - 1;
  grid_stride_loop loop;
  // Init: T i = START ;
  const std::size_t semi1 = find_at_depth0(t, 2, close, ";");
  const std::size_t eq = find_at_depth0(t, 2, semi1, "=");
  if (semi1 == close || eq == semi1 || eq < 4 || !ident_start(t[eq - 1].text[0])) {
    return std::nullopt;
  }
  loop.index = t[eq - 1].text;
  loop.index_type = slice(text, t, 2, eq - 1);
  // Condition: i < N ;
  const std::size_t semi2 = find_at_depth0(t, semi1 + 1, close, ";");
  if (semi2 == close || semi2 < semi1 + 4 || t[semi1 + 1].text != loop.index ||
      t[semi1 + 2].text != "<") {
    return std::nullopt;
  }
  // Increment: i += STEP
  if (close < semi2 + 4 || t[semi2 + 1].text != loop.index || t[semi2 + 2].text != "+=") {
    return std::nullopt;
  }
  loop.start_from = eq + 1, loop.start_to = semi1;
  loop.bound_from = semi1 + 3, loop.bound_to = semi2;
  loop.step_from = semi2 + 3, loop.step_to = close;
  if (!is_global_index(geometry_expression(t, loop.start_from, loop.start_to)) ||
      !is_grid_size(geometry_expression(t, loop.step_from, loop.step_to))) {
    return std::nullopt;
  }
  for (std::size_t k = loop.bound_from; k < loop.bound_to; ++k) {
    if (t[k].text == loop.index) {
      return std::nullopt;
    }
  }
  // Body: a block or one statement.
  loop.body_from = header_end;
  if (t[loop.body_from].text == "{") {
    loop.body_to = matching(t, loop.body_from);
  } else {
    loop.body_to = find_at_depth0(t, loop.body_from, t.size(), ";");
    loop.body_to = loop.body_to == t.size() ? 0 : loop.body_to + 1;
  }
  if (loop.body_to == 0 || loop.body_to <= loop.body_from + 1) {
    return std::nullopt;
  }
  return loop;
}

/// What the loop body does with the pointer parameters.
struct body_accesses {
  struct access {
    std::size_t from = 0, to = 0; ///< token range of `P [ i ]`
    std::string array;
  };
  std::vector<access> accesses;
  std::vector<std::string> arrays; ///< in order of first use
  std::set<std::string> read, written;
  vector_kind kind{};
};

/// The body's accesses when every use of the index is `P[i]` of a pointer parameter, all of one
/// vectorisable element type, at least one written, with no control flow, synchronisation or
/// atomics, and no name the rewrite would add; nullopt otherwise.
std::optional<body_accesses> scan_body(const std::vector<token>& t,
                                       const grid_stride_loop& loop,
                                       const std::vector<parameter_info>& parameters) {
  static const std::set<std::string, std::less<>> refused = {
      "if",     "else",          "for",      "while",      "do",       "switch", "case",
      "return", "break",         "continue", "goto",       "?",        "&&",     "||",
      "#",      "__syncthreads", "asm",      "__syncwarp", "atomicAdd"};
  std::map<std::string, std::string> element_of; // pointer parameter -> element type
  for (const parameter_info& p : parameters) {
    const std::string element = pointee(p.type);
    if (!element.empty()) {
      element_of[p.name] = element;
    }
  }
  const std::string& index = loop.index;
  const std::size_t body_from = loop.body_from, body_to = loop.body_to;
  body_accesses out;
  std::string element;
  for (std::size_t k = body_from; k < body_to; ++k) {
    const std::string& s = t[k].text;
    if (refused.count(s) != 0 || s.rfind("atomic", 0) == 0) {
      return std::nullopt;
    }
    const bool array = element_of.count(s) != 0;
    if (s == index) {
      return std::nullopt; // the index outside an array subscript
    }
    if (!array) {
      continue;
    }
    if (k > body_from && (t[k - 1].text == "." || t[k - 1].text == "->")) {
      return std::nullopt; // a member of the same name: keep it simple
    }
    if (k + 3 >= body_to || t[k + 1].text != "[" || t[k + 2].text != index ||
        t[k + 3].text != "]") {
      return std::nullopt; // the pointer used otherwise than at [i]
    }
    if (element.empty()) {
      element = element_of[s];
    } else if (element_of[s] != element) {
      return std::nullopt; // arrays of different element types
    }
    if (std::find(out.arrays.begin(), out.arrays.end(), s) == out.arrays.end()) {
      out.arrays.push_back(s);
    }
    const std::string& next = t[k + 4].text;
    const bool pre =
        k > body_from && (t[k - 1].text == "++" || t[k - 1].text == "--" || t[k - 1].text == "&");
    if (pre && t[k - 1].text == "&") {
      return std::nullopt; // its address taken
    }
    if (is_assignment(next) || next == "++" || next == "--" || pre) {
      out.written.insert(s);
    }
    if (next != "=" && next != "[") {
      out.read.insert(s);
    }
    if (next == "[") {
      return std::nullopt;
    }
    out.accesses.push_back({k, k + 4, s});
    k += 3;
  }
  const std::optional<vector_kind> kind = vector_of(element);
  if (!kind || out.written.empty()) {
    return std::nullopt;
  }
  out.kind = *kind;
  // Names the rewrite introduces must not be taken in the loop.
  for (std::size_t k = 0; k < body_to; ++k) {
    if (t[k].text.rfind("rpl_", 0) == 0) {
      return std::nullopt;
    }
  }
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

/// The replacement: when every array is 16-byte aligned, the vector loop (one vector load per
/// array read, the body once per lane, one vector store per array written) and the scalar tail;
/// else the original loop.
std::string vector_loop_text(std::string_view text,
                             const std::vector<token>& t,
                             const grid_stride_loop& loop,
                             const body_accesses& body,
                             const std::string& indent) {
  static const std::array<const char*, 4> lanes = {"x", "y", "z", "w"};
  const std::size_t body_from = loop.body_from, body_to = loop.body_to;
  const std::string start = slice(text, t, loop.start_from, loop.start_to);
  const std::string bound = slice(text, t, loop.bound_from, loop.bound_to);
  const std::string step = slice(text, t, loop.step_from, loop.step_to);
  const std::string original(text.substr(t[0].begin, t[body_to - 1].end - t[0].begin));
  const std::string body_text =
      std::string(text.substr(t[body_from].begin, t[body_to - 1].end - t[body_from].begin));
  const std::size_t body_base = t[body_from].begin;
  const bool braced = t[body_from].text == "{";
  const std::string vec(body.kind.type);
  const std::string w = std::to_string(body.kind.width);
  const std::string& index = loop.index;
  const std::string& index_type = loop.index_type;
  const std::string in1 = indent + "  ", in2 = indent + "    ";

  std::string aligned;
  for (const std::string& a : body.arrays) {
    aligned += std::string(aligned.empty() ? "" : " &&\n" + in1 + "    ") +
               "reinterpret_cast<unsigned long long>(" + a + ") % 16 == 0";
  }
  const std::string header_gap = in1 + "     "; // under the first clause of `for (`
  std::string out = "if (" + aligned + ") {\n";
  out += in1 + std::string(vectorized_marker) + w + " elements per " + vec +
         " access, then the last (" + bound + ") % " + w + " one at a time.\n";
  out += in1 + "for (" + index_type + " " + local("v") + " = " + start + ";\n" + header_gap +
         local("v") + " < (" + bound + ") / " + w + ";\n" + header_gap + local("v") +
         " += " + step + ") {\n";
  for (const std::string& a : body.arrays) {
    const bool is_read = body.read.count(a) != 0;
    if (is_read) {
      out += in2 + (body.written.count(a) != 0 ? "" : "const ") + vec + " " + local(a) +
             " = reinterpret_cast<const " + vec + "*>(" + a + ")[" + local("v") + "];\n";
    } else {
      out += in2 + vec + " " + local(a) + ";\n";
    }
  }
  for (unsigned lane = 0; lane < body.kind.width; ++lane) {
    std::string b = body_text;
    for (auto it = body.accesses.rbegin(); it != body.accesses.rend(); ++it) {
      b.replace(t[it->from].begin - body_base, t[it->to - 1].end - t[it->from].begin,
                local(it->array) + "." + lanes[lane]);
    }
    out += in2 + reindent(braced ? b : "{ " + b + " }", "    ") + "\n";
  }
  for (const std::string& a : body.arrays) {
    if (body.written.count(a) != 0) {
      out += in2 + "reinterpret_cast<" + vec + "*>(" + a + ")[" + local("v") + "] = " + local(a) +
             ";\n";
    }
  }
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

std::optional<vectorized_loop> vectorize_grid_stride_loop(
    std::string_view text, std::size_t loop_offset, const std::vector<parameter_info>& parameters) {
  const std::vector<token> t = lex(text, loop_offset, 4096);
  const std::optional<grid_stride_loop> loop = match_grid_stride_loop(text, t);
  if (!loop) {
    return std::nullopt;
  }
  const std::optional<body_accesses> body = scan_body(t, *loop, parameters);
  if (!body) {
    return std::nullopt;
  }
  vectorized_loop result;
  result.replaced = {t[0].begin, t[loop->body_to - 1].end};
  result.replacement = vector_loop_text(text, t, *loop, *body, loop_indent(text, loop_offset));
  result.vector_type = body->kind.type;
  result.width = body->kind.width;
  result.arrays = body->arrays;
  return result;
}

} // namespace rpl::stages::optimize
