#include "workers/replay/replay_report.hpp"

#include <cstdio>
#include <filesystem>

#include "stages/capture/capture_manifest.hpp"
#include "stages/statistics/statistics.hpp"

namespace rpl::workers::replay {

namespace sc = rpl::stages::capture;

replay_arguments parse_replay_arguments(int argc, char** argv, const extra_flag& extra) {
  replay_arguments o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const std::function<std::string()> value = [&]() -> std::string {
      if (i + 1 >= argc) {
        throw bad_input(a + " needs a value");
      }
      return argv[++i];
    };
    if (a == "--iterations") {
      o.iterations = std::stoi(value());
    } else if (a == "--warmup") {
      o.warmup = std::stoi(value());
    } else if (a == "--tolerance-abs") {
      o.tolerance = o.tolerance.value_or(sc::float_tolerance{});
      o.tolerance->abs = std::stod(value());
    } else if (a == "--tolerance-rel") {
      o.tolerance = o.tolerance.value_or(sc::float_tolerance{});
      o.tolerance->rel = std::stod(value());
    } else if (a == "--json-out") {
      o.json_out = value();
    } else if (o.dir.empty() && !a.empty() && a[0] != '-') {
      o.dir = a;
    } else if (!extra(a, value)) {
      throw bad_input("unknown argument '" + a + "'");
    }
  }
  if (o.dir.empty()) {
    throw bad_input("no capture folder given");
  }
  if (o.iterations < 1 || o.warmup < 0) {
    throw bad_input("--iterations must be at least 1 and --warmup at least 0");
  }
  return o;
}

void emit(const replay_arguments& arguments, const nlohmann::json& doc) {
  const std::string text = doc.dump(2) + "\n";
  if (arguments.json_out.empty()) {
    std::fputs(text.c_str(), stdout);
    return;
  }
  const std::filesystem::path path(arguments.json_out);
  capture::write_text(path.parent_path(), path.filename().string(), text);
}

region_check check_regions(const capture::capture_directory& c,
                           const std::vector<std::vector<std::uint8_t>>& before,
                           const std::function<std::vector<std::uint8_t>(std::size_t)>& read_back,
                           const std::optional<sc::float_tolerance>& tolerance) {
  region_check check;
  for (std::size_t i = 0; i < c.regions.size(); ++i) {
    const auto& r = c.regions[i];
    const auto now = read_back(i);
    const auto expected =
        r.after_file.empty() ? before[i] : capture::read_bytes(c.dir, r.after_file, r.size);
    if (!r.after_file.empty()) {
      check.written.push_back(i);
    }
    const auto result = sc::compare_output(expected, now, tolerance);
    if (!result.equal()) {
      check.mismatched.push_back({{"base", sc::hex_address(r.base)},
                                  {"size", r.size},
                                  {"written_by_capture", !r.after_file.empty()},
                                  {"mismatched", result.mismatched},
                                  {"first_offset", result.first_mismatch_offset}});
    }
  }
  return check;
}

nlohmann::json red_zones_json(const std::vector<stages::capture::va_range>& zones,
                              const std::optional<stages::capture::red_zone_violation>& found,
                              const std::string& phase) {
  std::uint64_t bytes = 0;
  for (const auto& z : zones)
    bytes += z.size;
  nlohmann::json out = {{"zones", zones.size()}, {"bytes", bytes}, {"violation", nullptr}};
  if (found) {
    out["violation"] = {
        {"region", stages::capture::hex_address(found->region)},
        {"side", found->side},
        {"offset", found->offset},
        {"changed", found->changed},
        {"phase", phase},
        {"message", "memory out of bounds: " + phase + " " + stages::capture::describe(*found)}};
  }
  return out;
}

nlohmann::json verification_json(const region_check& check,
                                 std::size_t regions,
                                 const std::optional<sc::float_tolerance>& tolerance) {
  return {{"mode", sc::describe(tolerance)},
          {"passed", check.passed()},
          {"regions_compared", regions},
          {"regions_written", check.written.size()},
          {"mismatched_regions", check.mismatched}};
}

nlohmann::json timing_json(const std::vector<std::int64_t>& samples_ns,
                           const replay_arguments& arguments,
                           std::size_t restored_regions,
                           const timing_details& details) {
  const auto stats = rpl::stages::summarize(samples_ns);
  nlohmann::json out = {{"method", to_string(details.method)}};
  if (details.requested && *details.requested != details.method) {
    out["requested"] = to_string(*details.requested);
    out["fallback_reason"] = details.fallback_reason;
  }
  if (details.method == timing_method::events_per_batch) {
    out["batch_size"] = details.batch_size;
  }
  if (details.records) {
    const auto& r = *details.records;
    out["cupti_records"] = {{"timed", r.timed},
                            {"warmup", r.warmup},
                            {"other", r.other},
                            {"incomplete", r.incomplete},
                            {"dropped", r.dropped}};
  }
  out.update(nlohmann::json{{"warmup", arguments.warmup},
                            {"iterations", arguments.iterations},
                            {"restored_regions", restored_regions},
                            {"median_ns", stats.median},
                            {"mean_ns", stats.mean},
                            {"stddev_ns", stats.stddev},
                            {"cv", stats.cv},
                            {"min_ns", stats.min},
                            {"max_ns", stats.max},
                            {"stability", rpl::stages::to_string(stats.stability)},
                            {"samples_ns", samples_ns}});
  return out;
}

int replay_main(const char* program, const std::function<int()>& body) {
  try {
    return body();
  } catch (const bad_input& error) {
    std::fprintf(stderr, "%s: %s\n", program, error.what());
    return 2;
  } catch (const std::invalid_argument& error) {
    std::fprintf(stderr, "%s: a number was expected (%s)\n", program, error.what());
    return 2;
  } catch (const sc::capture_error& error) {
    std::fprintf(stderr, "%s: %s\n", program, error.what());
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s: %s\n", program, error.what());
    return 1;
  }
}

} // namespace rpl::workers::replay
