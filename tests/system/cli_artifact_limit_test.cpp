// Artifacts travel in bounded chunks with a size limit (issue 13, item 3): a build larger than
// --max-artifact-bytes is not sent back; its candidate is invalid with the reason, and a run with
// no valid candidate exits 3. Every other system test moves its artifacts in (1 MiB) chunks.
#include <algorithm>

#include <gtest/gtest.h>

#include "support/test_support.hpp"

namespace rpl {
namespace {

TEST(artifact_limit, a_build_over_the_limit_is_invalid_with_its_reason) {
  rpl::testing::temp_dir dir;
  const auto db = dir / "r.db";
  auto args = rpl::testing::remote_sweep_args(db);
  const auto workers = std::find(args.begin(), args.end(), "--compile-workers");
  ASSERT_NE(workers, args.end());
  workers[1] = "1"; // one local worker
  args.insert(args.end(), {"--max-artifact-bytes", "1000"});
  const auto out = rpl::testing::run_rocm_perf(args);
  EXPECT_EQ(out.exit_code, 3) << out.output;
  EXPECT_EQ(rpl::testing::query_int(
                db, "SELECT COUNT(*) FROM candidates WHERE status = 'invalid' AND reason LIKE "
                    "'too_large: artifact of % bytes exceeds the engine''s limit of 1000 bytes%'"),
            4)
      << out.output;
  EXPECT_EQ(rpl::testing::run_rocm_perf({"autotune", "--max-artifact-bytes", "0"}).exit_code, 2);
}

} // namespace
} // namespace rpl
