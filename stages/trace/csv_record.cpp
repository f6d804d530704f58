#include "stages/trace/csv_record.hpp"

namespace rpl::stages::csv {

std::vector<std::string> read_record(std::string_view text, std::size_t& at) {
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false, in_quotes = false;
  while (at < text.size()) {
    const char c = text[at++];
    if (in_quotes) {
      if (c == '"') {
        if (at < text.size() && text[at] == '"') {
          field += '"';
          ++at;
        } else {
          in_quotes = false;
        }
      } else {
        field += c;
      }
      continue;
    }
    if (c == '"') {
      if (!field.empty() || quoted)
        throw csv_error("a quote in the middle of a field");
      quoted = in_quotes = true;
    } else if (c == ',') {
      fields.push_back(std::move(field));
      field.clear();
      quoted = false;
    } else if (c == '\n') {
      break;
    } else if (c != '\r') {
      field += c;
    }
  }
  if (in_quotes)
    throw csv_error("a quoted field never ends");
  fields.push_back(std::move(field));
  return fields;
}

} // namespace rpl::stages::csv
