#include "stages/analysis/kernel_roofline.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <initializer_list>
#include <string_view>

namespace rpl::stages::analysis {

namespace {

using nlohmann::json;

std::string lower(std::string s) {
  for (char& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::optional<double> number(const json& values, const char* key) {
  if (!values.is_object() || !values.contains(key))
    return std::nullopt;
  const json& entry = values.at(key);
  const json& v = entry.is_object() ? entry.value("value", json()) : entry;
  return v.is_number() ? std::optional<double>(v.get<double>()) : std::nullopt;
}

/// A counter name put together from parts without allocating (every name here is short): a
/// dispatch's roofline looks up about forty of them, for tens of thousands of dispatches.
class counter_name {
public:
  counter_name(std::initializer_list<std::string_view> parts) {
    for (const std::string_view part : parts) {
      const std::size_t n = std::min(part.size(), text_.size() - size_);
      std::copy_n(part.data(), n, text_.data() + size_);
      size_ += n;
      complete_ = complete_ && n == part.size();
    }
  }
  /// The whole name, or nullopt if it did not fit (then no counter has it: see below).
  std::optional<std::string_view> view() const {
    return complete_ ? std::optional<std::string_view>(std::string_view(text_.data(), size_))
                     : std::nullopt;
  }

private:
  std::array<char, 192> text_{};
  std::size_t size_ = 0;
  bool complete_ = true;
};

/// A counter's value per dispatch: NAME_sum (derived) or NAME (instances summed), averaged over
/// the dispatches that recorded it.
std::optional<double> counter(const rocpd::kernel_counters& k, std::string_view name) {
  const counter_name derived{name, "_sum"};
  // A name longer than the buffer is looked up as a string (no counter name is that long).
  const std::string long_derived = derived.view() ? std::string() : std::string(name) + "_sum";
  for (const std::string_view key :
       {derived.view() ? *derived.view() : std::string_view(long_derived), name}) {
    const auto it = k.counters.find(key);
    if (it != k.counters.end() && it->second.dispatches > 0)
      return it->second.sum / static_cast<double>(it->second.dispatches);
  }
  return std::nullopt;
}

struct reader {
  const rocpd::kernel_counters& k;
  std::vector<std::string> missing;
  double operator()(std::string_view name) {
    const auto v = counter(k, name);
    if (!v)
      missing.emplace_back(name);
    return v.value_or(0);
  }
  double operator()(std::initializer_list<std::string_view> parts) {
    const counter_name name(parts);
    return name.view() ? (*this)(*name.view()) : (*this)(join_parts(parts));
  }
  static std::string join_parts(std::initializer_list<std::string_view> parts) {
    std::string out;
    for (const std::string_view part : parts)
      out += part;
    return out;
  }
};

std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words)
    out += (out.empty() ? "" : ", ") + w;
  return out;
}

} // namespace

peaks peaks_for(const arch_model& model,
                const std::string& product_name,
                const std::map<std::string, double>& overrides) {
  peaks p;
  const json& products = model.raw.contains("products") ? model.raw.at("products") : json();
  const json* chosen = nullptr;
  if (products.is_array()) {
    const std::string want = lower(product_name);
    for (const auto& product : products) {
      const std::string name = lower(product.value("name", ""));
      bool alias = false;
      if (product.contains("aliases") && product["aliases"].is_array())
        for (const auto& a : product["aliases"])
          alias = alias || (a.is_string() && lower(a.get<std::string>()) == want);
      if (!want.empty() && (alias || name.rfind(want, 0) == 0 || want.rfind(name, 0) == 0)) {
        chosen = &product;
        break;
      }
    }
    if (chosen == nullptr && !products.empty()) {
      chosen = &products.front();
      p.notes.push_back("peaks: no " + model.target + " product named \"" + product_name +
                        "\" in configs/arch/" + model.target + ".json; assumed " +
                        chosen->value("name", "?") + " (override with --peak)");
    }
  }
  const json values = chosen ? chosen->value("values", json::object()) : json::object();
  p.product = chosen ? chosen->value("name", "") : "";
  const json& arch = model.raw.contains("values") ? model.raw.at("values") : json();
  p.bytes_per_s = number(values, "hbm_bytes_per_second");
  if (model.vendor == "amd") {
    const auto cus = number(values, "cus");
    const auto mhz = number(values, "peak_engine_clock_mhz");
    if (cus && mhz) {
      const double per_clock = *cus * *mhz * 1e6;
      if (const auto valu = number(arch, "valu_flops_per_clock_per_cu"))
        for (const char* type : {"valu_f16", "valu_f32", "valu_f64"})
          p.flops_per_s[type] = *valu * per_clock;
      for (const char* type : {"f16", "bf16", "f32", "f64", "f8"}) {
        const std::string key = std::string("mfma_") + type + "_flops_per_clock_per_cu";
        if (const auto v = number(arch, key.c_str()))
          p.flops_per_s[std::string("mfma_") + type] = *v * per_clock;
      }
    }
  } else {
    const auto sms = number(values, "sms");
    const auto mhz = number(values, "boost_clock_mhz");
    const double per_clock = sms && mhz ? *sms * *mhz * 1e6 : 0;
    auto peak = [&](const char* type, const char* per_second, const char* per_clock_key,
                    double ops_per_instruction) {
      if (const auto v = number(values, per_second))
        p.flops_per_s[type] = *v;
      else if (const auto c = number(values, per_clock_key); c && per_clock > 0)
        p.flops_per_s[type] = *c * ops_per_instruction * per_clock;
    };
    peak("fp32", "fp32_flops_per_second", "fp32_ffma_per_clock_per_sm", 2);
    peak("fp64", "fp64_flops_per_second", "fp64_dfma_per_clock_per_sm", 2);
    peak("bf16_tensor", "bf16_tensor_flops_per_second", "bf16_dense_wgmma_flops_per_clock_per_sm",
         1);
    if (p.flops_per_s.count("bf16_tensor"))
      p.flops_per_s["fp16_tensor"] = p.flops_per_s["bf16_tensor"]; // same rate (§1.5, §1.6)
    peak("tf32_tensor", "tf32_tensor_flops_per_second", "", 1);
    peak("fp64_tensor", "fp64_tensor_flops_per_second", "", 1);
  }
  for (const auto& [key, value] : overrides) {
    if (key == "hbm")
      p.bytes_per_s = value;
    else
      p.flops_per_s[key] = value;
    p.notes.push_back("peak " + key + " overridden: " + std::to_string(value));
  }
  return p;
}

roofline_outcome compute_roofline(const rocpd::kernel_counters& k,
                                  const peaks& roofs,
                                  std::optional<double> timeline_duration_ns) {
  roofline_outcome out;
  kernel_roofline r;
  r.name = k.name;
  r.target = k.target;
  r.dispatches = k.dispatches;
  r.duration_ns = timeline_duration_ns.value_or(
      k.dispatches > 0 ? k.duration_sum_ns / static_cast<double>(k.dispatches) : 0);
  reader get{k, {}};
  const bool amd = k.target.rfind("gfx", 0) == 0;
  if (amd) {
    for (const std::string_view t : {"F16", "F32", "F64"}) {
      r.flops["valu_" + lower(std::string(t))] =
          64 * (get({"SQ_INSTS_VALU_ADD_", t}) + get({"SQ_INSTS_VALU_MUL_", t}) +
                get({"SQ_INSTS_VALU_TRANS_", t}) + 2 * get({"SQ_INSTS_VALU_FMA_", t}));
    }
    for (const std::string_view t : {"F16", "BF16", "F32", "F64"})
      r.flops["mfma_" + lower(std::string(t))] = 512 * get({"SQ_INSTS_VALU_MFMA_MOPS_", t});
    if (const auto f8 = counter(k, "SQ_INSTS_VALU_MFMA_MOPS_F8"))
      r.flops["mfma_f8"] = 512 * *f8;
    double bytes = 0;
    std::vector<std::pair<std::string, double>> terms;
    if (k.target == "gfx90a") {
      const double rd = get("TCC_EA_RDREQ"), rd32 = get("TCC_EA_RDREQ_32B");
      const double wr = get("TCC_EA_WRREQ"), wr64 = get("TCC_EA_WRREQ_64B");
      terms = {{"TCC_EA_RDREQ - TCC_EA_RDREQ_32B", rd - rd32},
               {"TCC_EA_WRREQ - TCC_EA_WRREQ_64B", wr - wr64}};
      bytes = 32 * rd32 + 64 * (rd - rd32) + 64 * wr64 + 32 * (wr - wr64);
    } else if (k.target == "gfx942") {
      const double bubble = get("TCC_BUBBLE"), rd = get("TCC_EA0_RDREQ");
      const double rd32 = get("TCC_EA0_RDREQ_32B"), wr = get("TCC_EA0_WRREQ");
      const double wr64 = get("TCC_EA0_WRREQ_64B");
      terms = {{"TCC_EA0_RDREQ - TCC_BUBBLE - TCC_EA0_RDREQ_32B", rd - bubble - rd32},
               {"TCC_EA0_WRREQ - TCC_EA0_WRREQ_64B", wr - wr64}};
      bytes = 128 * bubble + 32 * rd32 + 64 * (rd - bubble - rd32) + 32 * (wr - wr64) + 64 * wr64;
    } else {
      out.missing = "no HBM byte formula for " + k.target +
                    " (hardware-models.md §1.1 gives gfx90a and gfx942)";
      return out;
    }
    for (const auto& [what, value] : terms)
      if (value < 0)
        out.problems.push_back(k.name + ": " + what + " = " + std::to_string(value) +
                               " is negative: the HBM byte formula does not hold for these "
                               "counters (mixed passes or a counter overflow); not used");
    r.dram_bytes = bytes;
  } else {
    auto op = [&](const char* name) {
      return get({"smsp__sass_thread_inst_executed_op_", name, "_pred_on.sum"});
    };
    r.flops["fp32"] = op("fadd") + op("fmul") + 2 * op("ffma");
    r.flops["fp64"] = op("dadd") + op("dmul") + 2 * op("dfma");
    r.flops["fp16"] = 2 * op("hadd") + 2 * op("hmul") + 4 * op("hfma");
    auto tensor = [&](const char* name) {
      return get({"sm__ops_path_tensor_op_", name, "_sparsity_off.sum"});
    };
    // wgmma (hgmma) exists on Hopper (sm_90) only; mma.sync (hmma) everywhere.
    const bool hopper = k.target == "sm_90";
    auto hgmma = [&](const char* name) { return hopper ? tensor(name) : 0.0; };
    r.flops["bf16_tensor"] = hgmma("hgmma_src_bf16_dst_fp32") + tensor("hmma_src_bf16_dst_fp32");
    r.flops["fp16_tensor"] = hgmma("hgmma_src_fp16") + tensor("hmma_src_fp16_dst_fp32");
    r.flops["tf32_tensor"] = hgmma("hgmma_src_tf32_dst_fp32") + tensor("hmma_src_tf32_dst_fp32");
    if (const auto total = counter(k, "dram__bytes.sum");
        total && !counter(k, "dram__bytes_read.sum"))
      r.dram_bytes = *total;
    else
      r.dram_bytes = get("dram__bytes_read.sum") + get("dram__bytes_write.sum");
    r.sol_compute_pct = counter(k, "sm__throughput.avg.pct_of_peak_sustained_elapsed");
    r.sol_memory_pct =
        counter(k, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed");
    if (const auto lanes = counter(k, "smsp__thread_inst_executed_per_inst_executed.ratio"))
      r.active_thread_fraction = *lanes / 32.0;
    r.issue_active = counter(k, "smsp__issue_active.avg.per_cycle_active");
    // CPIStall: each reason's warps stalled per issue over the warp latency per issued instruction.
    if (const auto latency = counter(k, "smsp__average_warp_latency_per_inst_issued.ratio");
        latency && *latency > 0) {
      const std::string prefix = "smsp__average_warps_issue_stalled_";
      const std::string suffix = "_per_issue_active.ratio";
      for (const auto& [name, total] : k.counters) {
        if (name.rfind(prefix, 0) != 0 || name.size() <= prefix.size() + suffix.size() ||
            name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0 ||
            total.dispatches == 0)
          continue;
        const double share = total.sum / static_cast<double>(total.dispatches) / *latency;
        if (!r.top_stall_share || share > *r.top_stall_share) {
          r.top_stall = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
          r.top_stall_share = share;
        }
      }
    }
  }
  if (!get.missing.empty()) {
    out.missing = "counters missing for " + k.name + ": " + join(get.missing) +
                  " (record them with `rocm-perf profile --counters roofline`)";
    return out;
  }
  for (const auto& [type, value] : r.flops)
    if (!std::isfinite(value) || value < 0)
      out.problems.push_back(k.name + ": " + type + " FLOPs = " + std::to_string(value) +
                             " is not a finite count; not used");
  if (r.duration_ns <= 0)
    out.problems.push_back(k.name + ": no duration to divide by; not used");
  if (!out.problems.empty())
    return out;

  const double seconds = r.duration_ns / 1e9;
  for (const auto& [type, value] : r.flops) {
    r.total_flops += value;
    if (r.dominant_type.empty() || value > r.flops[r.dominant_type])
      r.dominant_type = type;
  }
  r.flops_per_s = r.total_flops / seconds;
  if (r.dram_bytes) {
    r.bytes_per_s = *r.dram_bytes / seconds;
    if (*r.dram_bytes > 0)
      r.intensity = r.total_flops / *r.dram_bytes;
  }
  if (const auto peak = roofs.flops_per_s.find(r.dominant_type); peak != roofs.flops_per_s.end())
    r.peak_flops_per_s = peak->second;
  r.peak_bytes_per_s = roofs.bytes_per_s;
  if (r.peak_flops_per_s && *r.peak_flops_per_s > 0)
    r.percent_of_compute_peak = 100 * r.flops_per_s / *r.peak_flops_per_s;
  if (r.peak_bytes_per_s && r.bytes_per_s && *r.peak_bytes_per_s > 0)
    r.percent_of_memory_peak = 100 * *r.bytes_per_s / *r.peak_bytes_per_s;
  if (r.peak_flops_per_s && r.peak_bytes_per_s && *r.peak_bytes_per_s > 0)
    r.ridge_point = *r.peak_flops_per_s / *r.peak_bytes_per_s;
  if (r.ridge_point && r.intensity)
    r.bound = *r.intensity >= *r.ridge_point ? "compute" : "memory";
  else if (r.ridge_point && r.total_flops > 0 && r.dram_bytes && *r.dram_bytes == 0)
    r.bound = "compute"; // no DRAM traffic at all
  out.roofline = std::move(r);
  return out;
}

std::vector<std::optional<kernel_roofline>>
dispatch_rooflines(const rocpd::kernel_counters& counters, const peaks& roofs) {
  std::vector<std::optional<kernel_roofline>> out;
  out.reserve(counters.dispatches_by_ordinal.size());
  // One kernel_counters for all: a kernel's dispatches mostly carry the same counters, whose
  // values are then written over the last dispatch's (no map built per dispatch).
  rocpd::kernel_counters one;
  one.name = counters.name;
  one.target = counters.target;
  one.product = counters.product;
  one.dispatches = 1;
  for (const auto& d : counters.dispatches_by_ordinal) {
    one.duration_sum_ns = d.duration_ns;
    const bool same_names =
        one.counters.size() == d.counters.size() &&
        std::equal(d.counters.begin(), d.counters.end(), one.counters.begin(),
                   [](const auto& a, const auto& b) { return a.first == b.first; });
    if (same_names) {
      auto at = one.counters.begin();
      for (const auto& entry : d.counters)
        (at++)->second = {entry.second, 1};
    } else {
      one.counters.clear();
      for (const auto& [name, value] : d.counters)
        one.counters.emplace_hint(one.counters.end(), name, rocpd::counter_total{value, 1});
    }
    out.push_back(compute_roofline(one, roofs, std::nullopt).roofline);
  }
  return out;
}

json to_json(const kernel_roofline& r) {
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  return {{"name", r.name},
          {"target", r.target},
          {"dispatches_with_counters", r.dispatches},
          {"duration_ns", r.duration_ns},
          {"flops_by_type", r.flops},
          {"flops", r.total_flops},
          {"dram_bytes", opt(r.dram_bytes)},
          {"arithmetic_intensity", opt(r.intensity)},
          {"flops_per_second", r.flops_per_s},
          {"dram_bytes_per_second", opt(r.bytes_per_s)},
          {"dominant_type", r.dominant_type},
          {"peak_flops_per_second", opt(r.peak_flops_per_s)},
          {"peak_dram_bytes_per_second", opt(r.peak_bytes_per_s)},
          {"percent_of_compute_peak", opt(r.percent_of_compute_peak)},
          {"percent_of_memory_peak", opt(r.percent_of_memory_peak)},
          {"ridge_point", opt(r.ridge_point)},
          {"bound", r.bound.empty() ? json(nullptr) : json(r.bound)},
          {"ncu_sol_compute_pct", opt(r.sol_compute_pct)},
          {"ncu_sol_memory_pct", opt(r.sol_memory_pct)},
          {"issue_active", opt(r.issue_active)},
          {"top_stall", r.top_stall.empty() ? json(nullptr) : json(r.top_stall)},
          {"top_stall_share", opt(r.top_stall_share)}};
}

json to_json(const peaks& p) {
  return {{"product", p.product},
          {"flops_per_second", p.flops_per_s},
          {"dram_bytes_per_second", p.bytes_per_s ? json(*p.bytes_per_s) : json(nullptr)},
          {"notes", p.notes}};
}

} // namespace rpl::stages::analysis
