// nvcc's own flags (detail/flag_table.hpp); a flag nvcc does not name is judged by the host table,
// since nvcc passes unknown flags to its host compiler (--forward-unknown-to-host-compiler) and
// the host table refuses what no compiler should run anyway. nvcc writes `-I=DIR` and `-o=FILE`,
// and splits the -X payloads at commas.
#include "workers/compilers/detail/flag_table.hpp"

namespace rpl::workers::detail {

namespace {

constexpr flag_rule nvcc_rules_table[] = {
    {"-ccbin", value_form::prefix, flag_role::refuse, "runs another program as the host compiler"},
    {"--compiler-bindir", value_form::prefix, flag_role::refuse,
     "runs another program as the host compiler"},
    {"-run", value_form::prefix, flag_role::refuse, "runs the program it builds"},
    {"--run", value_form::prefix, flag_role::refuse, "runs the program it builds"},
    {"-optf", value_form::prefix, flag_role::refuse, "reads more arguments from a file"},
    {"--options-file", value_form::prefix, flag_role::refuse, "reads more arguments from a file"},
    {"-Xcompiler", value_form::equals, flag_role::host_flags, {}, true},
    {"--compiler-options", value_form::equals, flag_role::host_flags, {}, true},
    {"-Xlinker", value_form::equals, flag_role::linker_flags, {}, true},
    {"--linker-options", value_form::equals, flag_role::linker_flags, {}, true},
    {"-Xnvlink", value_form::equals, flag_role::linker_flags, {}, true},
    {"--nvlink-options", value_form::equals, flag_role::linker_flags, {}, true},
    {"-Xptxas", value_form::equals, flag_role::tool_flags, {}, true},
    {"--ptxas-options", value_form::equals, flag_role::tool_flags, {}, true},
    {"-Xarchive", value_form::equals, flag_role::tool_flags, {}, true},
    {"--archive-options", value_form::equals, flag_role::tool_flags, {}, true},
    {"-o", value_form::joined, flag_role::write_path},
    {"--output-file", value_form::equals, flag_role::write_path},
    {"-odir", value_form::equals, flag_role::write_path},
    {"--output-directory", value_form::equals, flag_role::write_path},
    {"-keep-dir", value_form::equals, flag_role::write_path},
    {"--keep-dir", value_form::equals, flag_role::write_path},
    {"-MF", value_form::joined, flag_role::write_path},
    {"--dependency-output", value_form::equals, flag_role::write_path},
    {"-time", value_form::equals, flag_role::write_path},
    {"--time", value_form::equals, flag_role::write_path},
    {"-I", value_form::joined, flag_role::read_path},
    {"--include-path", value_form::equals, flag_role::read_path},
    {"-isystem", value_form::joined, flag_role::read_path},
    {"--system-include", value_form::equals, flag_role::read_path},
    {"-include", value_form::joined, flag_role::read_path},
    {"--pre-include", value_form::equals, flag_role::read_path},
    {"-L", value_form::joined, flag_role::read_path},
    {"--library-path", value_form::equals, flag_role::read_path},
    {"-ldir", value_form::equals, flag_role::read_path},
    {"--libdevice-directory", value_form::equals, flag_role::read_path},
    {"-l", value_form::joined, flag_role::library_name},
    {"--library", value_form::equals, flag_role::library_name},
    {"-D", value_form::joined, flag_role::plain},
    {"--define-macro", value_form::equals, flag_role::plain},
    {"-U", value_form::joined, flag_role::plain},
    {"--undefine-macro", value_form::equals, flag_role::plain},
    {"-x", value_form::joined, flag_role::plain},
    {"--x", value_form::equals, flag_role::plain},
    {"-arch", value_form::equals, flag_role::plain},
    {"--gpu-architecture", value_form::equals, flag_role::plain},
    {"-code", value_form::equals, flag_role::plain},
    {"--gpu-code", value_form::equals, flag_role::plain},
    {"-gencode", value_form::equals, flag_role::plain},
    {"--generate-code", value_form::equals, flag_role::plain},
    {"-std", value_form::equals, flag_role::plain},
    {"--std", value_form::equals, flag_role::plain},
    {"-MT", value_form::joined, flag_role::plain},
    {"--dependency-target-name", value_form::equals, flag_role::plain},
    {"-maxrregcount", value_form::equals, flag_role::plain},
    {"--maxrregcount", value_form::equals, flag_role::plain},
};

} // namespace

std::span<const flag_rule> nvcc_flag_rules() {
  return nvcc_rules_table;
}

} // namespace rpl::workers::detail
