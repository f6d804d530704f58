#include "stages/hardware/arch_model.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <mutex>

#include "stages/hardware/embedded_arch_models.hpp"

namespace rpl::stages {
namespace {

using nlohmann::json;

[[noreturn]] void fail(std::string_view origin, const std::string& what) {
  throw arch_error(std::string(origin) + ": " + what);
}

/// Reads the models' {"value", "source"} entries with errors that name the file and the key.
class value_reader {
public:
  value_reader(const json& doc, std::string_view origin) : origin_(origin) {
    if (!doc.contains("values") || !doc.at("values").is_object())
      fail(origin_, "missing key 'values'; fix: add an object of {\"value\", \"source\"} entries");
    values_ = &doc.at("values");
  }

  bool has(const std::string& key) const { return values_->contains(key); }

  const json& value(const std::string& key) const {
    if (!values_->contains(key))
      fail(origin_, "missing key 'values." + key +
                        "'; fix: add {\"value\": ..., \"source\": \"<reference section>\"}");
    const json& entry = values_->at(key);
    if (!entry.is_object() || !entry.contains("value"))
      fail(origin_, "key 'values." + key + "' is not a {\"value\", \"source\"} object");
    return entry.at("value");
  }

  std::uint64_t u64(const std::string& key) const {
    const json& v = value(key);
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
      fail(origin_,
           "key 'values." + key + "' has value " + v.dump() + "; expected a non-negative integer");
    return v.get<std::uint64_t>();
  }

  std::uint32_t u32(const std::string& key) const {
    const std::uint64_t v = u64(key);
    if (v > std::numeric_limits<std::uint32_t>::max())
      fail(origin_, "key 'values." + key + "' has value " + std::to_string(v) +
                        "; expected at most 2^32 - 1");
    return static_cast<std::uint32_t>(v);
  }

  std::uint32_t positive(const std::string& key) const {
    const std::uint32_t v = u32(key);
    if (v == 0)
      fail(origin_, "key 'values." + key + "' has value 0; expected a positive integer");
    return v;
  }

  bool boolean(const std::string& key) const {
    const json& v = value(key);
    if (!v.is_boolean())
      fail(origin_, "key 'values." + key + "' has value " + v.dump() + "; expected true or false");
    return v.get<bool>();
  }

  std::string string(const std::string& key) const {
    const json& v = value(key);
    if (!v.is_string())
      fail(origin_, "key 'values." + key + "' has value " + v.dump() + "; expected a string");
    return v.get<std::string>();
  }

  std::vector<std::uint64_t> u64_array(const std::string& key) const {
    const json& v = value(key);
    std::vector<std::uint64_t> out;
    if (v.is_array())
      for (const json& e : v) {
        if (!e.is_number_unsigned()) {
          out.clear();
          break;
        }
        out.push_back(e.get<std::uint64_t>());
      }
    if (out.empty() || !std::is_sorted(out.begin(), out.end()))
      fail(origin_, "key 'values." + key + "' has value " + v.dump() +
                        "; expected a non-empty ascending array of non-negative integers");
    return out;
  }

private:
  std::string_view origin_;
  const json* values_ = nullptr;
};

void check_sources(const json& values, std::string_view origin, const std::string& where) {
  for (const auto& [key, entry] : values.items()) {
    if (!entry.is_object() || !entry.contains("value") || !entry.contains("source") ||
        !entry.at("source").is_string() || entry.at("source").get<std::string>().empty())
      fail(origin, "key '" + where + "." + key +
                       "' has no source; fix: write it as {\"value\": ..., \"source\": \"<where "
                       "the number comes from>\"}");
  }
}

amd_limits parse_amd(const value_reader& r,
                     const std::vector<std::uint32_t>& wave_sizes,
                     std::string_view origin) {
  amd_limits m;
  m.unit = r.string("occupancy_unit");
  if (m.unit != "CU" && m.unit != "WGP")
    fail(origin,
         "key 'values.occupancy_unit' has value \"" + m.unit + "\"; expected \"CU\" or \"WGP\"");
  const bool wgp = m.unit == "WGP";
  m.simds_per_unit = r.positive(wgp ? "simds_per_wgp" : "simds_per_cu");
  m.max_waves_per_simd = r.positive("max_waves_per_simd");
  for (const std::uint32_t w : wave_sizes) {
    vgpr_file file;
    file.registers_per_lane = r.positive("vgprs_per_lane_wave" + std::to_string(w));
    file.granule = r.positive("vgpr_granule_wave" + std::to_string(w));
    m.vgpr_files.emplace(w, file);
  }
  m.max_vgprs_per_wave = r.positive("max_vgprs_per_wave");
  m.unified_vgpr_agpr = r.boolean("unified_vgpr_agpr");
  if (m.unified_vgpr_agpr) {
    m.max_agprs_per_wave = r.positive("max_agprs_per_wave");
    m.max_unified_vgprs_per_wave = r.positive("max_unified_vgprs_per_wave");
    m.agpr_offset_alignment = r.positive("agpr_offset_alignment");
  } else {
    m.max_unified_vgprs_per_wave = m.max_vgprs_per_wave;
  }
  m.max_sgprs_per_wave = r.positive("max_sgprs_per_wave");
  if (r.has("waves_by_sgprs")) {
    const json& steps = r.value("waves_by_sgprs");
    std::uint32_t previous = 0;
    for (const json& step : steps.is_array() ? steps : json::array()) {
      if (!step.is_array() || step.size() != 2 || !step[0].is_number_unsigned() ||
          !step[1].is_number_unsigned() || step[0].get<std::uint32_t>() <= previous)
        fail(origin, "key 'values.waves_by_sgprs' has step " + step.dump() +
                         "; expected [max SGPRs, waves per SIMD] pairs with ascending SGPRs");
      previous = step[0].get<std::uint32_t>();
      m.waves_by_sgprs.emplace_back(previous, step[1].get<std::uint32_t>());
    }
    if (m.waves_by_sgprs.empty())
      fail(origin, "key 'values.waves_by_sgprs' is empty; expected [max SGPRs, waves] pairs");
  } else if (r.boolean("sgprs_limit_occupancy")) {
    fail(origin, "key 'values.sgprs_limit_occupancy' is true but 'values.waves_by_sgprs' is "
                 "missing; fix: add the SGPR steps");
  }
  m.lds_per_unit_bytes = r.u64(wgp ? "lds_per_wgp_bytes" : "lds_per_cu_bytes");
  m.max_lds_per_workgroup_bytes = r.u64("max_lds_per_workgroup_bytes");
  m.lds_granule_bytes = r.positive("lds_granule_bytes");
  m.max_workgroup_size = r.positive("max_workgroup_size");
  m.barriers_per_unit = r.positive(wgp ? "barriers_per_wgp" : "barriers_per_cu");
  m.single_wave_workgroup_uses_barrier = r.boolean("single_wave_workgroup_uses_barrier");
  return m;
}

nvidia_limits parse_nvidia(const value_reader& r, std::string_view origin) {
  nvidia_limits m;
  m.max_warps_per_sm = r.positive("max_warps_per_sm");
  m.max_blocks_per_sm = r.positive("max_blocks_per_sm");
  m.registers_per_sm = r.positive("registers_per_sm");
  m.registers_per_block = r.positive("registers_per_block");
  m.sub_partitions_per_sm = r.positive("sub_partitions_per_sm");
  m.register_allocation_unit_size = r.positive("register_allocation_unit_size");
  if (const std::string g = r.string("register_allocation_granularity"); g != "warp")
    fail(origin, "key 'values.register_allocation_granularity' has value \"" + g +
                     "\"; only \"warp\" is modelled");
  m.max_registers_per_thread = r.positive("max_registers_per_thread");
  m.max_threads_per_block = r.positive("max_threads_per_block");
  m.shared_memory_per_sm_bytes = r.u64("shared_memory_per_sm_bytes");
  for (const std::uint64_t kib : r.u64_array("shared_memory_carveouts_kib"))
    m.shared_memory_carveouts_bytes.push_back(kib * 1024);
  if (m.shared_memory_carveouts_bytes.back() != m.shared_memory_per_sm_bytes)
    fail(origin, "key 'values.shared_memory_carveouts_kib' ends at " +
                     std::to_string(m.shared_memory_carveouts_bytes.back() / 1024) +
                     " KiB but 'values.shared_memory_per_sm_bytes' is " +
                     std::to_string(m.shared_memory_per_sm_bytes) + "; they must agree");
  m.reserved_shared_memory_per_block_bytes = r.u64("reserved_shared_memory_per_block_bytes");
  m.shared_memory_allocation_unit_bytes = r.positive("shared_memory_allocation_unit_bytes");
  m.max_shared_memory_per_block_bytes = r.u64("max_shared_memory_per_block_bytes");
  m.default_max_shared_memory_per_block_bytes = r.u64("default_max_shared_memory_per_block_bytes");
  return m;
}

std::string lower_trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  std::string out(s);
  for (char& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c));
  });
}

std::string known_list() {
  std::string out;
  for (const std::string& name : known_targets())
    out += (out.empty() ? "" : ", ") + name;
  return out;
}

} // namespace

arch_model parse_arch(std::string_view json_text, std::string_view origin) {
  json doc;
  try {
    doc = json::parse(json_text);
  } catch (const json::parse_error& e) {
    fail(origin, std::string("is not valid JSON: ") + e.what());
  }
  if (!doc.is_object())
    fail(origin, "is not a JSON object; expected {\"target\", \"vendor\", ...}");
  arch_model model;
  for (const char* key : {"target", "vendor", "family"}) {
    if (!doc.contains(key) || !doc.at(key).is_string() || doc.at(key).get<std::string>().empty())
      fail(origin, std::string("missing key '") + key + "'; expected a non-empty string");
  }
  model.target = doc.at("target").get<std::string>();
  model.vendor = doc.at("vendor").get<std::string>();
  model.family = doc.at("family").get<std::string>();

  const value_reader r(doc, origin);
  check_sources(doc.at("values"), origin, "values");
  if (doc.contains("products")) {
    if (!doc.at("products").is_array())
      fail(origin, "key 'products' is not an array");
    std::size_t i = 0;
    for (const json& product : doc.at("products")) {
      const std::string where = "products[" + std::to_string(i++) + "]";
      if (!product.is_object() || !product.contains("name") || !product.at("name").is_string())
        fail(origin, "key '" + where + ".name' is missing; expected a product name");
      if (product.contains("values"))
        check_sources(product.at("values"), origin, where + ".values");
    }
  }

  if (model.vendor == "amd") {
    model.wave_size = r.positive("wave_size");
    for (const std::uint64_t w : r.u64_array("wave_sizes"))
      model.wave_sizes.push_back(static_cast<std::uint32_t>(w));
    model.amd = parse_amd(r, model.wave_sizes, origin);
  } else if (model.vendor == "nvidia") {
    model.wave_size = r.positive("warp_size");
    model.wave_sizes = {model.wave_size};
    model.nvidia = parse_nvidia(r, origin);
  } else {
    fail(origin, "key 'vendor' has value \"" + model.vendor + "\"; expected \"amd\" or \"nvidia\"");
  }
  if (std::find(model.wave_sizes.begin(), model.wave_sizes.end(), model.wave_size) ==
      model.wave_sizes.end())
    fail(origin, "the default wave size " + std::to_string(model.wave_size) +
                     " is not among 'values.wave_sizes'");
  model.raw = std::move(doc);
  return model;
}

std::string normalize_target(std::string_view target) {
  std::string t = lower_trimmed(target);
  if (const auto gfx = t.find("gfx"); gfx != std::string::npos) {
    t = t.substr(gfx);
    return t.substr(0, t.find(':'));
  }
  std::string_view s = t;
  for (const std::string_view prefix : {"compute_", "sm_", "sm", "compute"}) {
    if (s.substr(0, prefix.size()) == prefix) {
      s.remove_prefix(prefix.size());
      break;
    }
  }
  // Arch-specific ("sm_90a") and family ("sm_100f") variants share the base limits.
  std::string digits(s);
  if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f'))
    digits.pop_back();
  if (const auto dot = digits.find('.'); dot != std::string::npos)
    digits.erase(dot, 1);
  if (all_digits(digits))
    return "sm_" + digits;
  return t;
}

std::vector<std::string> known_targets() {
  std::vector<std::string> names;
  for (const embedded_file& file : embedded_arch_models())
    names.emplace_back(file.name);
  std::sort(names.begin(), names.end());
  return names;
}

arch_model load_arch(std::string_view target) {
  static std::mutex mutex;
  static std::map<std::string, arch_model, std::less<>> cache;

  const std::string name = normalize_target(target);
  const std::lock_guard lock(mutex);
  if (const auto it = cache.find(name); it != cache.end())
    return it->second;
  for (const embedded_file& file : embedded_arch_models()) {
    if (file.name != name)
      continue;
    arch_model model = parse_arch(file.text, "configs/arch/" + name + ".json");
    if (model.target != name)
      throw arch_error("configs/arch/" + name + ".json: key 'target' is \"" + model.target +
                       "\"; it must match the file name");
    return cache.emplace(name, std::move(model)).first->second;
  }
  throw arch_error("unknown target '" + std::string(target) + "'; known targets: " + known_list() +
                   "; fix: pass one of them with --arch");
}

} // namespace rpl::stages
