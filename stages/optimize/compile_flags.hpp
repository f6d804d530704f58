#pragma once
/// What a build command tells the source parser (libclang): its language and the flags that
/// change what the preprocessor and the front end see. One rule for every caller (the kernel
/// lane's --launch mode, the application mode, the proposers' requests, the parser itself).

#include <string>
#include <string_view>
#include <vector>

namespace rpl::stages::optimize {

/// "hip" for a .hip file or a hipcc build (`compiler`: the build command's argv[0], may be
/// empty), else "cuda".
std::string source_language(std::string_view source_path, std::string_view compiler);

/// The -D, -U, -I, -isystem and -std flags of `words` (a build command's arguments, without the
/// compiler), in order; a flag with a separate value keeps it as the next word; `--std=` is
/// written `-std=`.
std::vector<std::string> parser_flags(const std::vector<std::string>& words);

} // namespace rpl::stages::optimize
