#include "stages/search/landscape.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <nlohmann/json.hpp>

namespace rpl::stages {

namespace {

/// Whether `key` (written by Python: 1.0 for a float one, not 1) names the values of `config`.
bool key_matches(const std::string& key, const configuration& config) {
  std::size_t at = 0;
  for (std::size_t p = 0; p < config.params.size(); ++p) {
    const std::size_t comma = p + 1 == config.params.size() ? key.size() : key.find(',', at);
    if (comma == std::string::npos)
      return false;
    const std::string field = key.substr(at, comma - at);
    const param_value& v = config.params[p].second;
    if (const auto* text = std::get_if<std::string>(&v)) {
      if (field != *text)
        return false;
    } else {
      char* end = nullptr;
      const double number = std::strtod(field.c_str(), &end);
      const double want = std::holds_alternative<double>(v)
                              ? std::get<double>(v)
                              : static_cast<double>(std::get<std::int64_t>(v));
      if (end == field.c_str() || *end != '\0' || number != want)
        return false;
    }
    at = comma + 1;
  }
  return at >= key.size();
}

} // namespace

std::string cache_key(const configuration& config) {
  std::string key;
  for (const auto& [name, value] : config.params) {
    if (!key.empty())
      key += ',';
    key += to_string(value);
  }
  return key;
}

std::string python_key(const configuration& config) {
  std::string key;
  for (const auto& [name, value] : config.params) {
    if (!key.empty())
      key += ',';
    std::string text = to_string(value);
    if (std::holds_alternative<double>(value) &&
        text.find_first_of(".eEn") == std::string::npos) // whole: Python writes 2.0
      text += ".0";
    key += text;
  }
  return key;
}

std::optional<std::size_t> landscape::find(std::string_view key) const {
  const auto it = index.find(std::string(key));
  if (it == index.end())
    return std::nullopt;
  return it->second;
}

double landscape::cost(std::size_t entry) const {
  const auto& v = entries[entry].value;
  if (!v)
    return HUGE_VAL;
  return higher_is_better ? -*v : *v;
}

std::optional<std::size_t> landscape::best() const {
  std::optional<std::size_t> out;
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (entries[i].value && (!out || cost(i) < cost(*out)))
      out = i;
  return out;
}

space landscape::as_space() const {
  space s;
  s.origin = origin;
  s.names = parameters;
  s.configurations.reserve(entries.size());
  for (const auto& e : entries)
    s.configurations.push_back(e.config);
  s.total = entries.size();
  return s;
}

landscape parse_kernel_tuner_cache(std::string_view text, const std::string& origin) {
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  const std::string fix = "; fix: pass a Kernel Tuner cache file (a .json or .json.gz that "
                          "kernel_tuner's cache= option or `rocm-perf export --format "
                          "kernel-tuner` wrote)";
  if (doc.is_discarded() || !doc.is_object())
    throw landscape_error(origin + ": not a JSON object" + fix);
  if (!doc.contains("tune_params_keys") || !doc["tune_params_keys"].is_array() ||
      doc["tune_params_keys"].empty())
    throw landscape_error(origin + ": no \"tune_params_keys\" list of parameter names" + fix);
  if (!doc.contains("cache") || !doc["cache"].is_object())
    throw landscape_error(origin + ": no \"cache\" object of measured configurations" + fix);
  landscape l;
  l.origin = origin;
  l.kernel_name = doc.value("kernel_name", std::string());
  l.device_name = doc.value("device_name", std::string());
  if (doc.contains("objective") && doc["objective"].is_string())
    l.objective = doc["objective"].get<std::string>();
  if (doc.contains("objective_higher_is_better") && doc["objective_higher_is_better"].is_boolean())
    l.higher_is_better = doc["objective_higher_is_better"].get<bool>();
  for (const auto& name : doc["tune_params_keys"]) {
    if (!name.is_string())
      throw landscape_error(origin + ": \"tune_params_keys\" holds a non-string" + fix);
    l.parameters.push_back(name.get<std::string>());
  }
  const auto& cache = doc["cache"];
  l.entries.reserve(cache.size());
  for (const auto& [key, entry] : cache.items()) {
    if (!entry.is_object())
      throw landscape_error(origin + ": cache entry \"" + key + "\" is not an object" + fix);
    landscape_entry e;
    for (const auto& name : l.parameters) {
      const auto it = entry.find(name);
      const auto value = it == entry.end() ? std::nullopt : from_json_value(*it);
      if (!value)
        throw landscape_error(origin + ": cache entry \"" + key +
                              "\" has no value of parameter \"" + name + "\"" + fix);
      e.config.params.emplace_back(name, *value);
    }
    const std::string own = cache_key(e.config);
    if (own != key && !key_matches(key, e.config))
      throw landscape_error(origin + ": cache entry \"" + key + "\" holds the parameters of \"" +
                            own + "\"" + fix);
    const auto objective = entry.find(l.objective);
    if (objective == entry.end())
      throw landscape_error(origin + ": cache entry \"" + key + "\" has no \"" + l.objective +
                            "\" (the objective)" + fix);
    if (objective->is_number() && std::isfinite(objective->get<double>())) {
      e.value = objective->get<double>();
    } else {
      e.failure = objective->is_string() ? objective->get<std::string>() : objective->dump();
    }
    if (const auto times = entry.find("times"); times != entry.end() && times->is_array())
      for (const auto& t : *times)
        if (t.is_number() && std::isfinite(t.get<double>()))
          e.samples.push_back(t.get<double>());
    l.index.emplace(key, l.entries.size());
    if (own != key)
      l.index.emplace(own, l.entries.size());
    l.entries.push_back(std::move(e));
  }
  if (l.entries.empty())
    throw landscape_error(origin + ": the cache is empty: nothing was measured" + fix);
  return l;
}

nlohmann::json to_kernel_tuner_cache(const landscape& l) {
  nlohmann::json keys = l.parameters;
  nlohmann::json values = nlohmann::json::object();
  for (std::size_t p = 0; p < l.parameters.size(); ++p) {
    nlohmann::json seen = nlohmann::json::array();
    for (const auto& e : l.entries) {
      const nlohmann::json v = to_json_value(e.config.params[p].second);
      if (std::find(seen.begin(), seen.end(), v) == seen.end())
        seen.push_back(v);
    }
    values[l.parameters[p]] = std::move(seen);
  }
  nlohmann::json cache = nlohmann::json::object();
  for (const auto& e : l.entries) {
    nlohmann::json entry = nlohmann::json::object();
    for (const auto& [name, value] : e.config.params)
      entry[name] = to_json_value(value);
    entry[l.objective] = e.value ? nlohmann::json(*e.value) : nlohmann::json(e.failure);
    if (!e.samples.empty())
      entry["times"] = e.samples;
    cache[python_key(e.config)] = std::move(entry);
  }
  return {{"kernel_name", l.kernel_name},
          {"device_name", l.device_name},
          {"objective", l.objective},
          {"objective_higher_is_better", l.higher_is_better},
          {"tune_params_keys", std::move(keys)},
          {"tune_params", std::move(values)},
          {"cache", std::move(cache)}};
}

} // namespace rpl::stages
