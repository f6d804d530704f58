#include "stages/capture/capture_manifest.hpp"

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace rpl::stages::capture {

namespace {

[[noreturn]] void fail(const std::string& where, const std::string& problem) {
  throw capture_error(where + ": " + problem +
                      "; fix: capture the dispatch again with rocm-perf isolate");
}

template <class T> T field(const nlohmann::json& doc, const char* key, const std::string& where) {
  if (!doc.contains(key)) {
    fail(where, std::string("missing \"") + key + "\"");
  }
  try {
    return doc.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    fail(where,
         std::string("\"") + key + "\" has the wrong type (" + doc.at(key).type_name() + ")");
  }
}

/// A file name the manifest gives: relative, inside the capture directory.
std::string file_field(const nlohmann::json& doc, const char* key, const std::string& where) {
  auto name = field<std::string>(doc, key, where);
  if (name.empty() || name.front() == '/' || name.find("..") != std::string::npos) {
    fail(where, std::string("\"") + key + "\" = \"" + name +
                    "\" is not a file name inside the capture directory");
  }
  return name;
}

std::array<std::uint32_t, 3>
dims(const nlohmann::json& doc, const char* key, const std::string& where) {
  const auto values = field<std::vector<std::uint32_t>>(doc, key, where);
  if (values.size() != 3 ||
      std::any_of(values.begin(), values.end(), [](auto v) { return v == 0; })) {
    fail(where, std::string("\"") + key + "\" must be three positive numbers");
  }
  return {values[0], values[1], values[2]};
}

} // namespace

std::string hex_address(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

std::uint64_t parse_address(const std::string& text, const std::string& where) {
  const bool is_hex = text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
  const std::string digits = is_hex ? text.substr(2) : text;
  if (digits.empty() || digits.size() > (is_hex ? 16u : 20u)) {
    fail(where, "\"" + text + "\" is not an address");
  }
  std::uint64_t value = 0;
  for (char c : digits) {
    int d = -1;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (is_hex && c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (is_hex && c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    }
    if (d < 0) {
      fail(where, "\"" + text + "\" is not an address");
    }
    const std::uint64_t radix = is_hex ? 16 : 10;
    if (value > (UINT64_MAX - static_cast<std::uint64_t>(d)) / radix) {
      fail(where, "\"" + text + "\" is beyond 64 bits");
    }
    value = value * radix + static_cast<std::uint64_t>(d);
  }
  return value;
}

std::string before_file_name(std::uint64_t base) {
  return "memory/region_" + hex_address(base) + ".bin";
}

std::string after_file_name(std::uint64_t base) {
  return "after/region_" + hex_address(base) + ".bin";
}

std::uint64_t kernarg_bytes(const std::vector<kernel_param>& params) {
  std::uint64_t end = 0;
  for (const auto& p : params) {
    end = std::max<std::uint64_t>(end, std::uint64_t{p.offset} + p.size);
  }
  return end;
}

nlohmann::json to_json(const dispatch_manifest& m) {
  nlohmann::json params = nlohmann::json::array();
  for (const auto& p : m.params) {
    params.push_back({{"offset", p.offset}, {"size", p.size}});
  }
  nlohmann::json pools = nlohmann::json::array();
  for (const auto& p : m.driver_pools) {
    pools.push_back(
        {{"base", hex_address(p.base)}, {"size", p.size}, {"hint", hex_address(p.hint)}});
  }
  return {{"format", "rocm-perf-capture"},
          {"format_version", m.format},
          {"backend", m.backend},
          {"kernel", m.kernel},
          {"dispatch_index", m.dispatch_index},
          {"device", {{"name", m.device_name}, {"arch", m.arch}, {"ordinal", m.device_ordinal}}},
          {"grid", m.grid},
          {"block", m.block},
          {"dynamic_shared_bytes", m.dynamic_shared_bytes},
          {"params", params},
          {"kernarg", m.kernarg_file},
          {"code_object", m.code_object_file},
          {"granularity", m.granularity},
          {"driver_pools", pools},
          {"command", m.command},
          {"pid", m.pid}};
}

dispatch_manifest dispatch_from_json(const nlohmann::json& doc, const std::string& where) {
  if (!doc.is_object() || doc.value("format", std::string()) != "rocm-perf-capture") {
    fail(where, "not a rocm-perf capture (\"format\" is not \"rocm-perf-capture\")");
  }
  dispatch_manifest m;
  m.format = field<int>(doc, "format_version", where);
  if (m.format != format_version) {
    throw capture_error(where + ": format_version " + std::to_string(m.format) +
                        ", but this rocm-perf reads version " + std::to_string(format_version) +
                        "; fix: capture again with this rocm-perf, or replay with the one that "
                        "captured it");
  }
  m.backend = field<std::string>(doc, "backend", where);
  if (m.backend != "cuda" && m.backend != "hsa") {
    fail(where, "backend \"" + m.backend + "\" is neither \"cuda\" nor \"hsa\"");
  }
  m.kernel = field<std::string>(doc, "kernel", where);
  if (m.kernel.empty()) {
    fail(where, "the kernel name is empty");
  }
  m.dispatch_index = field<std::uint64_t>(doc, "dispatch_index", where);
  const auto device = field<nlohmann::json>(doc, "device", where);
  m.device_name = field<std::string>(device, "name", where);
  m.arch = field<std::string>(device, "arch", where);
  m.device_ordinal = field<int>(device, "ordinal", where);
  m.grid = dims(doc, "grid", where);
  m.block = dims(doc, "block", where);
  m.dynamic_shared_bytes = field<std::uint32_t>(doc, "dynamic_shared_bytes", where);
  for (const auto& p : field<nlohmann::json>(doc, "params", where)) {
    kernel_param param{field<std::uint32_t>(p, "offset", where),
                       field<std::uint32_t>(p, "size", where)};
    if (param.size == 0) {
      fail(where, "a parameter of size 0");
    }
    m.params.push_back(param);
  }
  m.kernarg_file = file_field(doc, "kernarg", where);
  m.code_object_file = file_field(doc, "code_object", where);
  m.granularity = field<std::uint64_t>(doc, "granularity", where);
  if (m.granularity == 0 || (m.granularity & (m.granularity - 1)) != 0) {
    fail(where, "granularity " + std::to_string(m.granularity) + " is not a power of two");
  }
  if (doc.contains("driver_pools")) {
    for (const auto& p : field<nlohmann::json>(doc, "driver_pools", where)) {
      m.driver_pools.push_back({parse_address(field<std::string>(p, "base", where), where),
                                field<std::uint64_t>(p, "size", where),
                                parse_address(p.value("hint", std::string("0x0")), where)});
    }
  }
  m.command = doc.value("command", std::vector<std::string>{});
  m.pid = doc.value("pid", std::int64_t{0});
  return m;
}

nlohmann::json regions_to_json(const std::vector<memory_region>& regions) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& r : regions) {
    nlohmann::json entry = {
        {"base", hex_address(r.base)}, {"size", r.size}, {"file", r.file}, {"order", r.order}};
    entry["after_file"] =
        r.after_file.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.after_file);
    list.push_back(std::move(entry));
  }
  return {{"format_version", format_version}, {"regions", list}};
}

std::vector<memory_region> regions_from_json(const nlohmann::json& doc, const std::string& where) {
  if (!doc.is_object() || field<int>(doc, "format_version", where) != format_version) {
    fail(where, "not a memory_regions.json of format version " + std::to_string(format_version));
  }
  std::vector<memory_region> regions;
  for (const auto& entry : field<nlohmann::json>(doc, "regions", where)) {
    memory_region r;
    r.base = parse_address(field<std::string>(entry, "base", where), where);
    r.size = field<std::uint64_t>(entry, "size", where);
    if (r.size == 0 || r.base + r.size < r.base) {
      fail(where, "region " + hex_address(r.base) + " has size " + std::to_string(r.size));
    }
    r.file = file_field(entry, "file", where);
    r.order = entry.value("order", std::uint64_t{0});
    if (entry.contains("after_file") && !entry.at("after_file").is_null()) {
      r.after_file = file_field(entry, "after_file", where);
    }
    regions.push_back(std::move(r));
  }
  std::sort(regions.begin(), regions.end(),
            [](const memory_region& a, const memory_region& b) { return a.base < b.base; });
  for (std::size_t i = 1; i < regions.size(); ++i) {
    if (regions[i - 1].base + regions[i - 1].size > regions[i].base) {
      fail(where, "regions " + hex_address(regions[i - 1].base) + " and " +
                      hex_address(regions[i].base) + " overlap");
    }
  }
  return regions;
}

} // namespace rpl::stages::capture
