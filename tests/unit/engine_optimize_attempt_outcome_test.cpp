// The stage, verdict and finding enums of an optimize attempt
// (engine/optimize/attempt_outcome.hpp): every value has a name that reads back to it, and
// docs/optimize.md names every one of them, so the docs' tables follow the code. And the guard list
// (engine/optimize/guards/guard_list.cpp): ordered by the room each guard runs in, names unique.

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "engine/optimize/attempt_outcome.hpp"
#include "engine/optimize/proposal_guard.hpp"

namespace rpl::engine {
namespace {

std::string optimize_doc() {
  std::ifstream in(std::filesystem::path(RPL_SOURCE_DIR) / "docs" / "optimize.md");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

template <class Enum, class Parse>
void expect_round_trip(std::span<const Enum> values, Parse parse, const std::string& doc) {
  std::set<std::string> names;
  for (const Enum value : values) {
    const std::string name(to_string(value));
    ASSERT_FALSE(name.empty());
    EXPECT_TRUE(names.insert(name).second) << name << " twice";
    const auto back = parse(name);
    ASSERT_TRUE(back.has_value()) << name;
    EXPECT_EQ(*back, value) << name;
    EXPECT_NE(doc.find("`" + name + "`"), std::string::npos)
        << "docs/optimize.md does not name `" << name << "`";
  }
  EXPECT_FALSE(parse("no-such-name").has_value());
}

TEST(attempt_outcome, every_stage_verdict_and_finding_reads_back_and_is_documented) {
  const std::string doc = optimize_doc();
  ASSERT_FALSE(doc.empty()) << "docs/optimize.md not found";
  expect_round_trip<attempt_stage>(all_stages(), parse_stage, doc);
  expect_round_trip<attempt_verdict>(all_verdicts(), parse_verdict, doc);
  expect_round_trip<attempt_finding>(all_findings(), parse_finding, doc);
  EXPECT_EQ(to_string(attempt_finding::validation_odd_size), "validation:odd_size");
  EXPECT_EQ(to_string(attempt_stage::none), "");
  EXPECT_EQ(parse_stage(""), attempt_stage::none);
}

TEST(proposal_guards, the_list_is_in_room_order_with_unique_names) {
  const auto guards = proposal_guards();
  ASSERT_GE(guards.size(), 5u);
  std::set<std::string> names;
  int last_room = -1;
  for (const auto& guard : guards) {
    EXPECT_TRUE(names.insert(std::string(guard->name())).second) << guard->name();
    const int room = static_cast<int>(guard->reads());
    EXPECT_GE(room, last_room) << guard->name() << " reads " << to_string(guard->reads())
                               << ", which exists only after the guard before it runs";
    last_room = room;
  }
  EXPECT_EQ(guards.front()->name(), "patch_applies") << "the diff applies before anything reads it";
  EXPECT_EQ(guards.back()->reads(), guard_input::pre_acceptance)
      << "the sanitizer pass: only a candidate about to be accepted pays for it";
}

} // namespace
} // namespace rpl::engine
