#pragma once
/// Validates a JSON document against one of docs/schema/*.json (valijson); returns the errors.
/// Defined in json_schema.cpp, so that valijson is compiled once for all the tests that use it.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rpl::testing {

std::vector<std::string> schema_errors(const nlohmann::json& document,
                                       const std::string& schema_file);

} // namespace rpl::testing
