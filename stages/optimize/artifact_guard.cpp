#include "stages/optimize/artifact_guard.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <optional>
#include <set>

#include "stages/hardware/code_object_globals.hpp"
#include "stages/hardware/code_object_metadata.hpp"
#include "stages/hardware/cuda_cubin.hpp"
#include "stages/hardware/elf_symbols.hpp"

namespace rpl::stages::optimize {

namespace {

/// One parameter as the host fills it; `kind` is the AMD value_kind, empty on NVIDIA.
struct parameter {
  std::uint64_t offset = 0, size = 0;
  std::string kind;
  bool operator==(const parameter&) const = default;
};

struct kernel_layout {
  std::string name;
  std::vector<parameter> parameters;
  std::uint64_t total_bytes = 0;
};

/// The device code for one architecture, every translation unit's merged.
struct device_image {
  std::vector<kernel_layout> kernels;
  std::vector<device_variable> globals;
};

/// Either vendor's device code, keyed by architecture ("sm_90", "gfx90a:xnack-").
struct artifact {
  std::string vendor; ///< "NVIDIA" or "AMDGPU"
  std::map<std::string, device_image> images;
};

bool starts_with(std::span<const std::byte> bytes, std::string_view prefix) {
  return bytes.size() >= prefix.size() &&
         std::equal(prefix.begin(), prefix.end(), bytes.begin(), [](char c, std::byte b) {
           return static_cast<unsigned char>(c) == std::to_integer<unsigned char>(b);
         });
}

artifact read_nvidia(std::span<const std::byte> bytes, std::string_view origin) {
  artifact out;
  out.vendor = "NVIDIA";
  for (auto& cubin : read_cuda_device_code(bytes, origin)) {
    auto& image = out.images[cubin.arch];
    for (auto& kernel : cubin.kernels) {
      kernel_layout layout;
      layout.name = std::move(kernel.name);
      layout.total_bytes = kernel.parameter_bytes;
      for (const auto& p : kernel.parameters) {
        layout.parameters.push_back({p.offset_bytes, p.size_bytes, {}});
      }
      image.kernels.push_back(std::move(layout));
    }
    std::move(cubin.globals.begin(), cubin.globals.end(), std::back_inserter(image.globals));
  }
  return out;
}

artifact read_amd(std::span<const std::byte> bytes, std::string_view origin) {
  artifact out;
  out.vendor = "AMDGPU";
  const auto objects = read_code_objects_from_memory(bytes, origin);
  const auto variables = read_code_object_globals(bytes, origin);
  std::vector<std::string> keys;
  for (const auto& object : objects) {
    auto key = object.processor + (object.features.empty() ? "" : ":" + object.features);
    auto& image = out.images[key];
    for (const auto& kernel : object.kernels) {
      kernel_layout layout;
      layout.name = kernel.name;
      for (const auto& arg : kernel.args) {
        if (arg.value_kind.starts_with("hidden_")) {
          continue;
        }
        layout.parameters.push_back({arg.offset, arg.size, arg.value_kind});
        layout.total_bytes = std::max(layout.total_bytes, arg.offset + arg.size);
      }
      image.kernels.push_back(std::move(layout));
    }
    keys.push_back(std::move(key));
  }
  // Both readers walk the containers in the same order; match by bundle entry otherwise.
  for (std::size_t i = 0; i < variables.size(); ++i) {
    std::optional<std::size_t> match;
    if (variables.size() == objects.size()) {
      match = i;
    } else {
      for (std::size_t j = 0; j < objects.size() && !match; ++j) {
        if (objects[j].bundle_entry == variables[i].bundle_entry) {
          match = j;
        }
      }
    }
    if (match) {
      auto& globals = out.images[keys[*match]].globals;
      globals.insert(globals.end(), variables[i].globals.begin(), variables[i].globals.end());
    }
  }
  return out;
}

/// Reads either vendor's artifact, telling them apart by magic bytes and ELF e_machine. Throws
/// metadata_error, as the readers do.
artifact read_artifact(std::span<const std::byte> bytes, std::string_view origin) {
  if (bytes.empty()) {
    throw metadata_error(std::string(origin) +
                         ": the artifact is empty; the compile produced no output file, check "
                         "the build command's -o");
  }
  if (is_cuda_device_code(bytes)) {
    return read_nvidia(bytes, origin);
  }
  if (is_elf_file(bytes) || starts_with(bytes, "__CLANG_OFFLOAD_BUNDLE__") ||
      starts_with(bytes, "CCOB")) {
    return read_amd(bytes, origin);
  }
  throw metadata_error(std::string(origin) +
                       ": not a cubin, fatbinary, AMDGPU code object, offload bundle or ELF "
                       "(first bytes match no known magic); pass the compiler's output file");
}

std::string join(const std::vector<std::string>& names) {
  constexpr std::size_t shown = 6;
  std::string text;
  for (std::size_t i = 0; i < names.size() && i < shown; ++i) {
    text += (i == 0 ? "" : ", ") + names[i];
  }
  if (names.size() > shown) {
    text += " and " + std::to_string(names.size() - shown) + " more";
  }
  return text;
}

std::string describe(const parameter& p) {
  return "offset " + std::to_string(p.offset) + " size " + std::to_string(p.size) +
         (p.kind.empty() ? "" : " " + p.kind);
}

/// Whether `mangled` is the kernel the user named: the same symbol, or a C++ function whose
/// unqualified name is `plain` (`_Z5scalePfi`, `_ZN2ns5scaleEPf`, `_Z4tmplILi3EEvPf`).
bool names_kernel(const std::string& mangled, std::string_view plain) {
  if (mangled == plain) {
    return true;
  }
  if (!mangled.starts_with("_Z") || plain.empty()) {
    return false;
  }
  const auto needle = std::to_string(plain.size()) + std::string(plain);
  for (auto at = mangled.find(needle, 2); at != std::string::npos;
       at = mangled.find(needle, at + 1)) {
    if (!std::isdigit(static_cast<unsigned char>(mangled[at - 1]))) {
      return true;
    }
  }
  return false;
}

/// The unqualified function name inside an Itanium-mangled name (`_Z5scalePfi` and
/// `_ZN2ns5scaleIfEEvPT_` give `scale`); the name itself when it is not mangled (extern "C").
/// Two kernels with the same plain name and different symbols are one kernel whose signature
/// changed.
std::string plain_name(const std::string& mangled) {
  if (!mangled.starts_with("_Z")) {
    return mangled;
  }
  std::size_t at = 2;
  const bool nested = at < mangled.size() && mangled[at] == 'N';
  if (nested) {
    ++at;
    while (at < mangled.size() &&
           (mangled[at] == 'K' || mangled[at] == 'V' || mangled[at] == 'r')) {
      ++at;
    }
  }
  std::string last;
  while (at < mangled.size() && std::isdigit(static_cast<unsigned char>(mangled[at]))) {
    std::size_t length = 0;
    while (at < mangled.size() && std::isdigit(static_cast<unsigned char>(mangled[at]))) {
      length = length * 10 + static_cast<std::size_t>(mangled[at] - '0');
      ++at;
    }
    if (length > mangled.size() - at) {
      return mangled;
    }
    last = mangled.substr(at, length);
    at += length;
    if (!nested) {
      break;
    }
  }
  return last.empty() ? mangled : last;
}

/// The first difference between two layouts of one kernel, or nothing.
std::optional<std::string> layout_difference(const kernel_layout& before,
                                             const kernel_layout& after) {
  const auto& a = before.parameters;
  const auto& b = after.parameters;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (!(a[i] == b[i])) {
      return "parameter " + std::to_string(i) + ": " + describe(a[i]) + " became " + describe(b[i]);
    }
  }
  if (a.size() != b.size()) {
    const bool added = b.size() > a.size();
    const auto i = std::min(a.size(), b.size());
    return std::to_string(a.size()) + " parameters became " + std::to_string(b.size()) +
           " (parameter " + std::to_string(i) + ": " + describe(added ? b[i] : a[i]) +
           (added ? " added" : " removed") + ")";
  }
  if (before.total_bytes != after.total_bytes) {
    return "parameter bytes " + std::to_string(before.total_bytes) + " became " +
           std::to_string(after.total_bytes);
  }
  return std::nullopt;
}

void compare_image(const std::string& arch,
                   const device_image& before,
                   const device_image& after,
                   std::string_view kernel,
                   std::vector<artifact_finding>& findings) {
  const auto names_of = [](const device_image& image) {
    std::set<std::string> names;
    for (const auto& k : image.kernels) {
      names.insert(k.name);
    }
    return names;
  };
  const auto had = names_of(before), has = names_of(after);
  std::vector<std::string> added, removed;
  std::set_difference(has.begin(), has.end(), had.begin(), had.end(), std::back_inserter(added));
  std::set_difference(had.begin(), had.end(), has.begin(), has.end(), std::back_inserter(removed));
  if (!added.empty() || !removed.empty()) {
    std::string detail = arch + ": the kernel entries differ from the original's:";
    if (!added.empty()) {
      detail += " added " + join(added) + (removed.empty() ? "" : ";");
    }
    if (!removed.empty()) {
      detail += " removed " + join(removed);
    }
    findings.push_back({"kernel_symbols_changed",
                        detail + "; the host launches kernels by these names, so keep every "
                                 "__global__ signature and add no kernel"});
  }

  const bool named = std::any_of(before.kernels.begin(), before.kernels.end(),
                                 [&](const auto& k) { return names_kernel(k.name, kernel); });
  for (const auto& old_kernel : before.kernels) {
    if (named && !names_kernel(old_kernel.name, kernel)) {
      continue;
    }
    auto now = std::find_if(after.kernels.begin(), after.kernels.end(),
                            [&](const auto& k) { return k.name == old_kernel.name; });
    std::string renamed;
    if (now == after.kernels.end()) {
      // A C++ kernel whose parameter types changed has a new mangled name: find it among the
      // added entries by its plain name, and say how its layout changed too.
      const auto plain = plain_name(old_kernel.name);
      const auto same_plain = [&](const std::string& name) { return plain_name(name) == plain; };
      if (std::count_if(added.begin(), added.end(), same_plain) != 1 ||
          std::count_if(removed.begin(), removed.end(), same_plain) != 1) {
        continue; // reported as a removed entry above, with no unambiguous successor
      }
      const auto successor = *std::find_if(added.begin(), added.end(), same_plain);
      now = std::find_if(after.kernels.begin(), after.kernels.end(),
                         [&](const auto& k) { return k.name == successor; });
      renamed = " became " + successor;
    }
    if (const auto difference = layout_difference(old_kernel, *now)) {
      findings.push_back(
          {"parameter_layout_changed", "kernel " + old_kernel.name + " (" + arch + ")" + renamed +
                                           ": " + *difference +
                                           "; the host passes the original arguments, so keep the "
                                           "parameter types and their order"});
    }
  }

  for (const auto& variable : after.globals) {
    const auto old = std::find_if(before.globals.begin(), before.globals.end(),
                                  [&](const auto& g) { return g.name == variable.name; });
    if (old == before.globals.end()) {
      findings.push_back({"new_global", arch + ": new device variable " + variable.name + " (" +
                                            std::to_string(variable.size_bytes) + " bytes in " +
                                            variable.section +
                                            "); the host never initialises it, so keep state "
                                            "in registers, shared memory or the arguments"});
    } else if (old->size_bytes != variable.size_bytes) {
      findings.push_back({"new_global", arch + ": device variable " + variable.name + " was " +
                                            std::to_string(old->size_bytes) + " bytes, is " +
                                            std::to_string(variable.size_bytes) +
                                            "; the host sized its copies for the original, so "
                                            "keep the variable's type"});
    }
  }
}

} // namespace

std::vector<artifact_finding> check_artifact(std::span<const std::byte> original,
                                             std::span<const std::byte> candidate,
                                             std::string_view kernel,
                                             std::string_view origin) {
  const std::string original_origin = "the original of " + std::string(origin);
  std::optional<artifact> before, after;
  std::string before_error, after_error;
  try {
    before = read_artifact(original, original_origin);
  } catch (const std::exception& e) { // metadata_error, or msgpack's on a corrupt note
    before_error = e.what();
  }
  try {
    after = read_artifact(candidate, origin);
  } catch (const std::exception& e) {
    after_error = e.what();
  }
  if (!after) {
    return {{"unreadable",
             after_error + (before ? std::string()
                                   : "; the original is unreadable too (" + before_error +
                                         "), so the build itself is at fault, not the patch")}};
  }
  if (!before) {
    return {{"unreadable", "the original is unreadable, so " + std::string(origin) +
                               " has nothing to be compared with: " + before_error}};
  }
  if (before->images.empty()) {
    return {{"unreadable", "the original of " + std::string(origin) +
                               " holds no device code (no kernels for any architecture), so "
                               "there is nothing to compare with; pass the device-code artifact "
                               "(a cubin or code object) of the original build"}};
  }
  if (before->vendor != after->vendor) {
    return {{"unreadable", std::string(origin) + ": is " + after->vendor +
                               " device code but the original is " + before->vendor +
                               "; build both with the same compiler and target"}};
  }
  std::vector<artifact_finding> findings;
  for (const auto& [arch, image] : before->images) {
    const auto now = after->images.find(arch);
    if (now == after->images.end()) {
      std::vector<std::string> archs;
      for (const auto& [other, ignored] : after->images) {
        archs.push_back(other);
      }
      findings.push_back(
          {"kernel_symbols_changed",
           std::string(origin) + " has no code for " + arch + ", which the original has (it has: " +
               (archs.empty() ? "none" : join(archs)) + "); build it for the original's targets"});
      continue;
    }
    compare_image(arch, image, now->second, kernel, findings);
  }
  return findings;
}

kernel_list kernel_names(std::span<const std::byte> bytes, std::string_view origin) {
  kernel_list list;
  try {
    const auto read = read_artifact(bytes, origin);
    std::set<std::string> seen;
    for (const auto& [arch, image] : read.images) {
      for (const auto& kernel : image.kernels) {
        if (seen.insert(kernel.name).second) {
          list.names.push_back(kernel.name);
        }
      }
    }
  } catch (const std::exception& e) {
    list.error = e.what();
  }
  return list;
}

} // namespace rpl::stages::optimize
