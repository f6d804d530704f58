#include "stages/trace/counter_values.hpp"

#include "stages/sqlite/sqlite_statement.hpp"
#include "stages/trace/rocpd_reader.hpp"

namespace rpl::stages::rocpd {

std::string kernel_key(const std::string& name) {
  std::string base = name;
  if (base.rfind("void ", 0) == 0)
    base.erase(0, 5);
  // The argument list starts at the first '(' outside template brackets.
  int depth = 0;
  for (std::size_t i = 0; i < base.size(); ++i) {
    if (base[i] == '<')
      ++depth;
    else if (base[i] == '>')
      --depth;
    else if (base[i] == '(' && depth <= 0) {
      base.erase(i);
      break;
    }
  }
  std::string key;
  for (const char c : base)
    if (c != ' ')
      key += c;
  return key;
}

std::map<std::string, kernel_counters>
read_kernel_counters(const std::vector<std::filesystem::path>& paths, std::size_t max_dispatches) {
  std::map<std::string, kernel_counters> out;
  if (paths.empty())
    return out;
  const reader files = reader::open(paths);
  std::map<std::pair<std::size_t, std::int64_t>, std::pair<std::string, std::string>> agents;
  for (const auto& agent : files.agents())
    agents[{agent.database, agent.id}] = {agent.name, agent.product_name};
  for (std::size_t database = 0; database < files.databases().size(); ++database) {
    const database_info& info = files.databases()[database];
    try {
      sqlite::connection db(info.path, SQLITE_OPEN_READONLY);
      for (const auto& sfx : info.uuids) {
        // One row per dispatch and counter, instances summed; the dispatch's own columns repeat.
        sqlite::statement rows(
            db, "SELECT D.id, COALESCE(NULLIF(KS.display_name, ''), KS.kernel_name), D.start, "
                "D.\"end\", D.agent_id, PI.name, SUM(PE.value) FROM rocpd_pmc_event" +
                    sfx + " PE JOIN rocpd_info_pmc" + sfx +
                    " PI ON PI.id = PE.pmc_id JOIN rocpd_kernel_dispatch" + sfx +
                    " D ON D.event_id = PE.event_id JOIN rocpd_info_kernel_symbol" + sfx +
                    " KS ON KS.id = D.kernel_id GROUP BY PE.event_id, PE.pmc_id ORDER BY D.id");
        std::int64_t last_dispatch = -1;
        // The ordinal of each kernel's dispatches within this pass (file and suffix).
        std::map<std::string, std::size_t> ordinal;
        kernel_counters::dispatch* current = nullptr;
        while (rows.step()) {
          const std::int64_t dispatch = rows.column_int64(0);
          const std::string name = rows.column_text(1);
          kernel_counters& k = out[kernel_key(name)];
          if (k.name.empty()) {
            k.name = name;
            const auto agent = agents.find({database, rows.column_int64(4)});
            if (agent != agents.end()) {
              k.target = agent->second.first;
              k.product = agent->second.second;
            }
          }
          if (dispatch != last_dispatch) {
            ++k.dispatches;
            const double duration =
                static_cast<double>(rows.column_int64(3) - rows.column_int64(2));
            k.duration_sum_ns += duration;
            last_dispatch = dispatch;
            const std::size_t n = ordinal[k.name]++;
            current = nullptr;
            if (n < max_dispatches) {
              if (k.dispatches_by_ordinal.size() <= n)
                k.dispatches_by_ordinal.resize(n + 1);
              current = &k.dispatches_by_ordinal[n];
              current->duration_ns = duration;
            }
          }
          const std::string counter_name = rows.column_text(5);
          const double value = rows.column_double(6);
          counter_total& c = k.counters[counter_name];
          c.sum += value;
          ++c.dispatches;
          if (current != nullptr)
            current->counters[counter_name] = value;
        }
      }
    } catch (const sqlite::sqlite_error& error) {
      throw rocpd_error(info.path.string() + ": cannot read its counters (" + error.what() +
                        "); fix: check that the file is a complete rocpd database");
    }
  }
  return out;
}

} // namespace rpl::stages::rocpd
