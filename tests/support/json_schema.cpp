#include "support/json_schema.hpp"

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

#include "support/test_support.hpp"

namespace rpl::testing {

std::vector<std::string> schema_errors(const nlohmann::json& document,
                                       const std::string& schema_file) {
  const auto schema_json =
      nlohmann::json::parse(read_text(source_dir / "docs" / "schema" / schema_file));
  valijson::Schema schema;
  valijson::SchemaParser parser;
  valijson::adapters::NlohmannJsonAdapter schema_adapter(schema_json);
  parser.populateSchema(schema_adapter, schema);
  valijson::Validator validator;
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter target(document);
  std::vector<std::string> errors;
  if (!validator.validate(schema, target, &results)) {
    valijson::ValidationResults::Error error;
    while (results.popError(error)) {
      std::string where;
      for (const auto& part : error.context) {
        where += part;
      }
      errors.push_back(where + ": " + error.description);
    }
  }
  return errors;
}

} // namespace rpl::testing
