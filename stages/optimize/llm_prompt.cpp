#include "stages/optimize/llm_prompt.hpp"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace rpl::stages::optimize {
namespace {

/// A fence longer than any backtick run in `text`, so that a source holding ``` cannot close it.
std::string fence_for(std::string_view text) {
  std::size_t longest = 0;
  std::size_t run = 0;
  for (const char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return std::string(std::max<std::size_t>(3, longest + 1), '`');
}

std::string fenced(std::string_view text, std::string_view language) {
  const auto fence = fence_for(text);
  std::string out = fence;
  out += language;
  out += '\n';
  out += text;
  if (!text.empty() && text.back() != '\n')
    out += '\n';
  out += fence;
  out += '\n';
  return out;
}

std::size_t line_count(std::string_view text) {
  auto lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
  if (!text.empty() && text.back() != '\n')
    ++lines;
  return lines;
}

bool is_identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

/// The 1-based line of the first `name(` or `name<` (the kernel's declaration, usually), 0 if none.
std::size_t kernel_line(std::string_view source, std::string_view name) {
  if (name.empty())
    return 0;
  for (auto at = source.find(name); at != std::string_view::npos; at = source.find(name, at + 1)) {
    if (at > 0 && is_identifier_char(source[at - 1]))
      continue;
    auto next = at + name.size();
    if (next < source.size() && is_identifier_char(source[next]))
      continue;
    while (next < source.size() && (source[next] == ' ' || source[next] == '\t'))
      ++next;
    if (next < source.size() && (source[next] == '(' || source[next] == '<'))
      return static_cast<std::size_t>(std::count(
                 source.begin(), source.begin() + static_cast<std::ptrdiff_t>(at), '\n')) +
             1;
  }
  return 0;
}

std::string system_message(const messages::propose_request& request) {
  const std::string language = request.language == "hip" ? "HIP" : "CUDA";
  std::string text;
  text += "You are a GPU performance engineer. You make one " + language +
          " kernel faster, one change at a time; a tool applies your change, compiles it, checks "
          "the kernel's results against the original and measures it.\n\n";
  text += "Rules for every change:\n";
  text += "- Change only the kernel named in the request, inside its file.\n";
  text += "- Keep its name, signature, template parameters, launch contract (grid, block size, "
          "dynamic shared memory) and ABI; keep its results the same for every input.\n";
  text += "- No new global variables, no new #include or #define, no inline assembly, no host "
          "code, no changes to other functions.\n";
  text += "- Do not repeat a change that an earlier attempt already tried.\n\n";
  text += "Answer format:\n";
  text += "1. A first line `Title: <one line naming the change>`.\n";
  text += "2. Exactly ONE unified diff of the file in a ```diff fence: `--- a/" +
          request.source_name + "`, `+++ b/" + request.source_name +
          "`, then @@ hunks whose context and removed lines are copied exactly from the source "
          "as given (same whitespace), with 3 lines of context.\n";
  text += "3. A short rationale (at most 5 sentences): why it should be faster for this kernel.\n";
  text += "No other code blocks.";
  return text;
}

std::string header_section(const messages::propose_request& request) {
  std::string text = "Kernel: `" + request.kernel + "` in `" + request.source_name + "` (" +
                     (request.language.empty() ? std::string("cuda") : request.language) + ")";
  if (request.block_threads > 0)
    text += ", launched with " + std::to_string(request.block_threads) + " threads per block";
  text += ".\n";
  if (!request.compile_flags.empty()) {
    text += "Compile flags:";
    for (const auto& flag : request.compile_flags)
      text += " " + flag;
    text += "\n";
  }
  return text;
}

std::string source_section(const messages::propose_request& request) {
  std::string text = "\n## Source of " + request.source_name + " (exact text, " +
                     std::to_string(line_count(request.source)) + " lines";
  if (const auto line = kernel_line(request.source, request.kernel); line > 0)
    text += "; `" + request.kernel + "` starts near line " + std::to_string(line);
  text += "; your diff must apply to it)\n";
  text += fenced(request.source, request.language == "hip" ? "cpp" : "cuda");
  return text;
}

std::string analysis_section(const std::string& analysis) {
  if (analysis.empty())
    return "\n## Analysis\n(none available)\n";
  return "\n## Analysis\n" + analysis + (analysis.back() == '\n' ? "" : "\n");
}

std::string attempt_outcome(const messages::proposal_attempt& attempt) {
  std::string text = "Outcome: ";
  text += attempt.verdict.empty() ? std::string("unknown") : attempt.verdict;
  if (!attempt.stage.empty())
    text += " at stage " + attempt.stage;
  text += "\n";
  return text;
}

std::string attempt_section(const messages::proposal_attempt& attempt,
                            std::size_t number,
                            const prompt_budget& budget) {
  std::string text = "\n### Attempt " + std::to_string(number) + ": " +
                     (attempt.title.empty() ? std::string("(untitled)") : attempt.title) + "\n";
  text += attempt_outcome(attempt);
  if (!attempt.detail.empty())
    text += "Detail:\n" + fenced(clip_text(attempt.detail, budget.attempt_detail_chars), "text");
  if (!attempt.diff.empty())
    text += "Diff:\n" + fenced(clip_text(attempt.diff, budget.attempt_diff_chars), "diff");
  return text;
}

std::string new_change_task(const messages::propose_request& request, bool has_history) {
  std::string text =
      "\n## Task\nPropose one change to `" + request.kernel + "` that you expect to make it faster";
  if (has_history)
    text += ", different from the attempts above";
  text += ". Answer in the format of the rules: the title line, one ```diff fence against the "
          "source above, the rationale.\n";
  return text;
}

std::string repair_task(const messages::propose_request& request,
                        const messages::proposal_attempt& failed,
                        const prompt_budget& budget) {
  std::string text = "\n## Task: repair round " + std::to_string(request.repair_round) +
                     " of 2\nThe last attempt, \"" + failed.title + "\", did not work. " +
                     attempt_outcome(failed);
  if (!failed.detail.empty())
    text += "Its errors:\n" + fenced(clip_text(failed.detail, budget.repair_detail_chars), "text");
  if (!failed.diff.empty())
    text += "Its diff:\n" + fenced(clip_text(failed.diff, budget.attempt_diff_chars), "diff");
  text += "Fix that attempt so that it compiles and keeps the kernel's results, keeping its idea "
          "where you can. Answer with one unified diff against the source of " +
          request.source_name +
          " exactly as shown above (the failed diff is not applied to it), in the format of the "
          "rules.\n";
  return text;
}

} // namespace

std::size_t chat_prompt::chars() const {
  std::size_t total = 0;
  for (const auto& message : messages)
    total += message.content.size();
  return total;
}

std::string clip_text(const std::string& text, std::size_t max_chars) {
  if (text.size() <= max_chars)
    return text;
  const std::string note_prefix = "\n[... ";
  const std::string note = note_prefix + std::to_string(text.size()) + " characters, cut]\n";
  if (max_chars <= note.size())
    return text.substr(0, max_chars);
  auto keep = max_chars - note.size();
  // Cut at a line end where one is near, so that a diff or an error list keeps whole lines.
  if (const auto newline = text.rfind('\n', keep);
      newline != std::string::npos && newline > keep / 2)
    keep = newline;
  return text.substr(0, keep) + note;
}

chat_prompt make_chat_prompt(const messages::propose_request& request,
                             const prompt_budget& budget) {
  chat_prompt prompt;
  const auto system = system_message(request);
  const bool repair = request.repair_round > 0 && !request.history.empty();
  const std::size_t earlier =
      repair ? request.history.size() - 1 : request.history.size(); // the history section's part

  const auto head = header_section(request) + source_section(request);
  const auto task = repair ? repair_task(request, request.history.back(), budget)
                           : new_change_task(request, !request.history.empty());
  auto analysis = analysis_section(request.analysis);

  // Room for the notes on what was left out, so that they never push the prompt over the budget.
  constexpr std::size_t notes_chars = 120;
  const auto limit = budget.max_chars > notes_chars ? budget.max_chars - notes_chars : 0;
  const auto fixed = system.size() + head.size() + task.size();
  if (fixed + analysis.size() > limit) {
    const auto room = limit > fixed ? limit - fixed : 0;
    prompt.analysis_cut = !request.analysis.empty();
    analysis = analysis_section(clip_text(request.analysis, room > 40 ? room - 40 : 0));
    prompt.over_budget = fixed + analysis.size() > limit;
  }

  // Newest first into the room that is left, then printed oldest first.
  std::vector<std::string> sections;
  auto used = fixed + analysis.size();
  std::size_t kept = 0;
  for (std::size_t i = earlier; i-- > 0;) {
    auto section = attempt_section(request.history[i], i + 1, budget);
    const auto extra = section.size();
    if (used + extra > limit)
      break;
    used += extra;
    sections.push_back(std::move(section));
    ++kept;
  }
  std::reverse(sections.begin(), sections.end());

  std::string user = head + analysis;
  if (kept > 0) {
    user += "\n## Earlier attempts (oldest first";
    if (kept < earlier)
      user += "; the " + std::to_string(earlier - kept) + " oldest left out for length";
    user += ")\n";
    for (const auto& section : sections)
      user += section;
  } else if (earlier > 0) {
    user += "\n## Earlier attempts\n" + std::to_string(earlier) +
            " earlier attempts were left out for length.\n";
  }
  user += task;

  prompt.attempts_shown = kept + (repair ? 1 : 0);
  prompt.attempts_dropped = earlier - kept;
  prompt.messages.push_back({"system", system});
  prompt.messages.push_back({"user", std::move(user)});
  return prompt;
}

} // namespace rpl::stages::optimize
