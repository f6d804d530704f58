#pragma once
/// The wording the readers of the project's JSON inputs share in their error messages
/// (space.hpp's space files, launch_spec.hpp's launch files): what a value is, and a name quoted.

#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace rpl::stages {

/// "null", "a boolean", "a string", "an array", "an object", "binary data" or "a number": what to
/// call the value in a message such as "is an array; fix: ...".
std::string json_type_phrase(const nlohmann::ordered_json& value);

/// The text between double quotes, as the messages name keys and values.
std::string in_double_quotes(std::string_view text);

} // namespace rpl::stages
