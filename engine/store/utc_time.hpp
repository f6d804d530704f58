#pragma once
/// The one wording of "now" in the engine's stores: UTC, ISO 8601 to the second
/// ("2026-11-27T01:43:00Z"), as the results store and the optimize journal record it.

#include <string>

namespace rpl::engine {

std::string utc_timestamp();

} // namespace rpl::engine
