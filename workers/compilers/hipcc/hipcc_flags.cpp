// The HIP/ROCm flags of clang that hipcc passes on: each moves the installation whose headers,
// device libraries and programs the compiler uses to a folder of the engine's choosing. clang++
// compiles HIP too, so the host dialect reads this table as well (detail/flag_table.hpp).
#include "workers/compilers/detail/flag_table.hpp"

namespace rpl::workers::detail {

namespace {

constexpr std::string_view hipcc_installation =
    "chooses the ROCm/HIP installation (headers, device "
    "libraries, programs) the compiler uses";

constexpr flag_rule hipcc_rules_table[] = {
    {"--hip-path", value_form::equals, flag_role::refuse, hipcc_installation},
    {"--rocm-path", value_form::equals, flag_role::refuse, hipcc_installation},
    {"--hip-device-lib-path", value_form::equals, flag_role::refuse, hipcc_installation},
    {"--rocm-device-lib-path", value_form::equals, flag_role::refuse, hipcc_installation},
    {"--hipspv-pass-plugin", value_form::prefix, flag_role::refuse, "loads code into the compiler"},
    {"--hip-device-lib", value_form::equals, flag_role::library_name},
    {"--offload-arch", value_form::equals, flag_role::plain},
    {"--amdgpu-target", value_form::equals, flag_role::plain},
};

} // namespace

std::span<const flag_rule> hipcc_flag_rules() {
  return hipcc_rules_table;
}

} // namespace rpl::workers::detail
