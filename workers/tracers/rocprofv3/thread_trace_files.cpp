#include "workers/tracers/rocprofv3/thread_trace_files.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace rpl::workers::tracers {

namespace {

namespace att = stages::att;
namespace fs = std::filesystem;

bool is_stats_csv(const fs::path& p) {
  const std::string name = p.filename().string();
  return name.rfind("stats_", 0) == 0 && p.extension() == ".csv";
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw att::thread_trace_error(path.string() + ": cannot be read; fix: check the path and "
                                                  "its permissions");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The files a folder holds: every stats_*.csv under it, else every code.json, sorted.
std::vector<fs::path> files_in(const fs::path& folder) {
  std::vector<fs::path> stats, code;
  std::error_code error;
  for (fs::recursive_directory_iterator it(folder, error), end; !error && it != end;
       it.increment(error)) {
    if (!it->is_regular_file())
      continue;
    if (is_stats_csv(it->path()))
      stats.push_back(it->path());
    else if (it->path().filename() == "code.json")
      code.push_back(it->path());
  }
  if (error)
    throw att::thread_trace_error(folder.string() + ": cannot be listed (" + error.message() +
                                  "); fix: check the path and its permissions");
  auto& found = stats.empty() ? code : stats;
  if (found.empty())
    throw att::thread_trace_error(
        folder.string() +
        ": no stats_*.csv or code.json under it; fix: pass the folder of `rocprofv3 --att -d "
        "FOLDER -- APP` (the decoder, librocprof-trace-decoder.so, must have run)");
  std::sort(found.begin(), found.end());
  return found;
}

} // namespace

thread_trace_files read_thread_traces(const std::vector<fs::path>& paths) {
  thread_trace_files out;
  std::vector<att::kernel_block> blocks;
  for (const fs::path& path : paths) {
    std::error_code error;
    const fs::file_status status = fs::status(path, error);
    if (error || !fs::exists(status))
      throw att::thread_trace_error(path.string() + ": no such file or folder; fix: pass the "
                                                    "folder rocprofv3 --att wrote, or one of its "
                                                    "stats_*.csv or code.json files");
    const std::vector<fs::path> files =
        fs::is_directory(status) ? files_in(path) : std::vector<fs::path>{path};
    for (const fs::path& file : files) {
      const std::string text = read_text(file);
      std::vector<att::kernel_block> found;
      if (file.extension() == ".json")
        found = att::parse_code_json(text, file.string());
      else if (file.extension() == ".csv")
        found = att::parse_stats_csv(text, file.string());
      else
        throw att::thread_trace_error(file.string() +
                                      ": neither a stats_*.csv nor a code.json; fix: pass the "
                                      "thread-trace output of rocprofv3 --att");
      blocks.insert(blocks.end(), std::make_move_iterator(found.begin()),
                    std::make_move_iterator(found.end()));
      out.files.push_back(file);
    }
  }
  out.kernels = att::summarize(blocks);
  return out;
}

} // namespace rpl::workers::tracers
