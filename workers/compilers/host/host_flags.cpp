// The flags of gcc and clang (the drivers, and clang's front end as -Xclang reaches it) that run
// other programs, load code, name files, or pass words on (detail/flag_table.hpp). Every flag not
// named here is judged by its values alone: a path after '=' must be in the job folder.
#include "workers/compilers/detail/flag_table.hpp"

namespace rpl::workers::detail {

namespace {

constexpr std::string_view host_runs = "runs another program";
constexpr std::string_view host_loads = "loads code into the compiler";
constexpr std::string_view host_programs = "chooses the programs the compiler runs";
constexpr std::string_view host_options_file = "reads more arguments from a file";
constexpr std::string_view host_sysroot = "moves the system headers and libraries to a folder the "
                                          "engine chooses";

constexpr flag_rule host_rules_table[] = {
    {"-wrapper", value_form::separate, flag_role::refuse, host_runs},
    {"-fplugin", value_form::prefix, flag_role::refuse, host_loads}, // -fplugin=, -fplugin-arg-
    {"-fpass-plugin", value_form::prefix, flag_role::refuse, host_loads},
    {"-iplugindir", value_form::prefix, flag_role::refuse, host_loads},
    {"-load", value_form::prefix, flag_role::refuse, host_loads},   // clang -cc1 -load X.so
    {"-plugin", value_form::prefix, flag_role::refuse, host_loads}, // -plugin NAME, -plugin-arg-
    {"-add-plugin", value_form::prefix, flag_role::refuse, host_loads}, // clang -cc1
    {"-B", value_form::prefix, flag_role::refuse, host_programs},
    {"--prefix", value_form::prefix, flag_role::refuse, host_programs},
    {"-ccc-", value_form::prefix, flag_role::refuse, host_programs}, // clang's -ccc-install-dir...
    {"--gcc-toolchain", value_form::prefix, flag_role::refuse, host_programs},
    {"--gcc-install-dir", value_form::prefix, flag_role::refuse, host_programs},
    {"-resource-dir", value_form::prefix, flag_role::refuse, host_programs},
    {"--ld-path", value_form::prefix, flag_role::refuse, host_runs},
    {"--ptxas-path", value_form::prefix, flag_role::refuse, host_runs},
    {"--cuda-path", value_form::equals, flag_role::refuse, host_programs},
    {"-fmodule-mapper", value_form::prefix, flag_role::refuse, "can run a program (a '|' mapper)"},
    {"-specs", value_form::prefix, flag_role::refuse, "reads a spec file, which can run programs"},
    {"--specs", value_form::prefix, flag_role::refuse, "reads a spec file, which can run programs"},
    {"--config", value_form::prefix, flag_role::refuse, host_options_file},
    // clang resolves relative paths from there: every "inside the job folder" judgement would be
    // wrong.
    {"-working-directory", value_form::prefix, flag_role::refuse,
     "moves the folder relative paths start from"},
    {"--sysroot", value_form::prefix, flag_role::refuse, host_sysroot},
    {"-isysroot", value_form::prefix, flag_role::refuse, host_sysroot},
    // Words for a tool this table does not know could do anything there.
    {"-X", value_form::prefix, flag_role::refuse, "passes words to a tool the worker cannot check"},
    // Words passed on, judged by that tool's table.
    {"-Xclang", value_form::equals, flag_role::host_flags},
    {"-Xarch_", value_form::prefix_separate, flag_role::host_flags},
    {"-Xopenmp-target", value_form::prefix_separate, flag_role::host_flags},
    {"-Xpreprocessor", value_form::separate, flag_role::host_flags},
    {"-Wp,", value_form::prefix, flag_role::host_flags, {}, true},
    {"-Xlinker", value_form::separate, flag_role::linker_flags},
    {"--for-linker", value_form::equals, flag_role::linker_flags}, // gcc's long -Xlinker
    {"-Xoffload-linker", value_form::prefix_separate, flag_role::linker_flags},
    {"-Wl,", value_form::prefix, flag_role::linker_flags, {}, true},
    {"-Xassembler", value_form::separate, flag_role::tool_flags},
    {"--for-assembler", value_form::equals, flag_role::tool_flags},
    {"-Wa,", value_form::prefix, flag_role::tool_flags, {}, true},
    {"-Xcuda-ptxas", value_form::separate, flag_role::tool_flags},
    {"-Xcuda-fatbinary", value_form::separate, flag_role::tool_flags},
    {"-Xanalyzer", value_form::separate, flag_role::tool_flags},
    {"-mllvm", value_form::equals, flag_role::tool_flags},
    // Written.
    {"-o", value_form::joined, flag_role::write_path},
    {"--output", value_form::equals, flag_role::write_path},
    {"-MF", value_form::joined, flag_role::write_path},
    {"-MJ", value_form::joined, flag_role::write_path},
    {"-dumpdir", value_form::separate, flag_role::write_path},
    {"-dumpbase", value_form::separate, flag_role::write_path},
    {"--dumpdir", value_form::equals, flag_role::write_path},
    {"--dumpbase", value_form::equals, flag_role::write_path},
    {"-aux-info", value_form::separate, flag_role::write_path},
    {"-save-temps=", value_form::prefix, flag_role::write_path},
    {"-dependency-file", value_form::separate, flag_role::write_path}, // clang -cc1
    // Read.
    {"-I", value_form::joined, flag_role::read_path},
    {"-isystem", value_form::joined, flag_role::read_path},
    {"-iquote", value_form::joined, flag_role::read_path},
    {"-idirafter", value_form::joined, flag_role::read_path},
    {"-include", value_form::joined, flag_role::read_path},
    {"-imacros", value_form::joined, flag_role::read_path},
    {"-iprefix", value_form::joined, flag_role::read_path},
    {"-iwithprefix", value_form::joined, flag_role::read_path},
    {"-iwithprefixbefore", value_form::joined, flag_role::read_path},
    {"-internal-isystem", value_form::joined, flag_role::read_path},
    {"-internal-externc-isystem", value_form::joined, flag_role::read_path},
    {"-cxx-isystem", value_form::joined, flag_role::read_path},
    {"-iframework", value_form::joined, flag_role::read_path},
    {"-F", value_form::joined, flag_role::read_path},
    {"-include-pch", value_form::joined, flag_role::read_path},
    {"-ivfsoverlay", value_form::joined, flag_role::read_path},
    {"--include-directory", value_form::equals, flag_role::read_path},
    {"--include-directory-after", value_form::equals, flag_role::read_path},
    {"--include-prefix", value_form::equals, flag_role::read_path},
    {"--include-with-prefix", value_form::equals, flag_role::read_path},
    {"--include-with-prefix-after", value_form::equals, flag_role::read_path},
    {"--include-with-prefix-before", value_form::equals, flag_role::read_path},
    {"--include", value_form::equals, flag_role::read_path},
    {"-L", value_form::joined, flag_role::read_path},
    {"--library-directory", value_form::equals, flag_role::read_path},
    {"-T", value_form::joined, flag_role::read_path}, // a linker script
    // Names, never paths.
    {"-l", value_form::joined, flag_role::library_name},
    {"-fuse-ld=", value_form::prefix, flag_role::program_name},
    // Values that name no file (a macro may well spell a path).
    {"-D", value_form::joined, flag_role::plain},
    {"-U", value_form::joined, flag_role::plain},
    {"--define-macro", value_form::equals, flag_role::plain},
    {"--undefine-macro", value_form::equals, flag_role::plain},
    {"--language", value_form::equals, flag_role::plain},
    {"-A", value_form::joined, flag_role::plain},
    {"-x", value_form::joined, flag_role::plain},
    {"-MT", value_form::joined, flag_role::plain},
    {"-MQ", value_form::joined, flag_role::plain},
    {"-z", value_form::separate, flag_role::plain},
    {"-target", value_form::separate, flag_role::plain},
    {"--param", value_form::equals, flag_role::plain},
    {"-main-file-name", value_form::separate, flag_role::plain},
    {"-fdebug-prefix-map=", value_form::prefix, flag_role::plain},
    {"-ffile-prefix-map=", value_form::prefix, flag_role::plain},
    {"-fmacro-prefix-map=", value_form::prefix, flag_role::plain},
    {"-fprofile-prefix-map=", value_form::prefix, flag_role::plain},
    {"-fcoverage-prefix-map=", value_form::prefix, flag_role::plain},
    {"-print-file-name=", value_form::prefix, flag_role::plain},
    {"-print-prog-name=", value_form::prefix, flag_role::plain},
};

} // namespace

std::span<const flag_rule> host_flag_rules() {
  return host_rules_table;
}

} // namespace rpl::workers::detail
