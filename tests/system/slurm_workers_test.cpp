// Workers under a scheduler (issue 13): a real single-host Slurm (Debian's slurm-wlm and munge,
// started in a temporary folder by scripts/slurm-local) runs `rocm-perf workers slurm`, whose
// srun step is the sweep's only compile worker; the step ends when the sweep does. Skips, with
// slurm-local's reason, where Slurm cannot start (not root, not installed).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/test_support.hpp"
#include "workers/process/child_process.hpp"

namespace rpl {
namespace {

using namespace std::chrono_literals;
using rpl::testing::fixture;
using rpl::testing::query_int;
using rpl::testing::run_rocm_perf;
using rpl::testing::temp_dir;

const auto slurm_local = rpl::testing::source_dir / "scripts" / "slurm-local";

/// A running single-host cluster, stopped on destruction.
class local_slurm {
public:
  explicit local_slurm(std::filesystem::path dir) : dir_(std::move(dir)) {
    workers::child_options options;
    options.argv = {slurm_local.string(), "start", dir_.string()};
    options.reap_descendants = false; // the daemons are meant to outlive the script
    auto started = workers::child_process::spawn(options).finish();
    if (started.exit_code != 0)
      why_not_ = started.output.empty() ? "scripts/slurm-local could not start" : started.output;
  }
  ~local_slurm() {
    workers::child_options options;
    options.argv = {slurm_local.string(), "stop", dir_.string()};
    workers::child_process::spawn(options).finish();
  }
  const std::string& why_not() const { return why_not_; }
  std::string conf() const { return (dir_ / "slurm.conf").string(); }

private:
  std::filesystem::path dir_;
  std::string why_not_;
};

TEST(slurm_workers, a_sweep_compiles_on_workers_started_by_srun_and_they_leave_with_it) {
  temp_dir dir;
  local_slurm slurm(dir / "slurm");
  if (!slurm.why_not().empty())
    GTEST_SKIP() << "Slurm cannot start here: " << slurm.why_not();

  const auto db = dir / "r.db";
  const auto endpoint = "tcp://127.0.0.1:" + std::to_string(rpl::testing::free_port());
  workers::child_options engine_options;
  engine_options.argv = rpl::testing::remote_sweep_args(db);
  engine_options.argv.insert(engine_options.argv.begin(), rpl::testing::rocm_perf.string());
  engine_options.argv.insert(engine_options.argv.end(), {"--insecure", "--listen", endpoint});
  auto engine = workers::child_process::spawn(engine_options);
  ASSERT_TRUE(engine.launched());

  workers::child_options srun_options;
  srun_options.argv = {
      rpl::testing::rocm_perf.string(), "workers", "slurm", "--nodes", "1", "--connect", endpoint,
      "--insecure", // a keyless tcp engine: the workers need --insecure too
      // the engine's heartbeat, so that it still knows the worker when it ends
      "--worker-option=--heartbeat-ms=100", "--", "--time=5", "--job-name=rpl-test"};
  if (!rpl::testing::sandbox_works())
    srun_options.argv.insert(srun_options.argv.begin() + 7, "--worker-option=--no-sandbox");
  srun_options.environment = {{"SLURM_CONF", slurm.conf()}};
  auto step = workers::child_process::spawn(srun_options);
  ASSERT_TRUE(step.launched());

  // The step must not end before the sweep does: if it does (srun refused, the worker could not
  // connect), say why instead of waiting for an engine that has no worker.
  ASSERT_TRUE(rpl::testing::wait_until([&] { return engine.try_reap() || step.try_reap(); }, 120s))
      << "neither the sweep nor the srun step ended within 120 s";
  if (step.try_reap() && !engine.try_reap())
    FAIL() << "the srun step ended before the sweep:\n" << step.finish().output;
  const auto outcome = engine.finish();
  ASSERT_EQ(outcome.exit_code, 0) << outcome.output;
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM candidates WHERE status='ok'"), 4);
  // The srun step's worker did every compile and left when the engine finished.
  const auto workers_seen =
      rpl::testing::query_texts(db, "SELECT DISTINCT worker_id FROM artifacts");
  ASSERT_EQ(workers_seen.size(), 1u);
  ASSERT_TRUE(rpl::testing::wait_until([&] { return step.try_reap(); }, 20s))
      << "the srun step outlived the sweep";
  const auto ended = step.finish();
  EXPECT_EQ(ended.exit_code, 0) << ended.output;
  EXPECT_NE(ended.output.find("(--once): leaving"), std::string::npos) << ended.output;
  EXPECT_NE(ended.output.find("DISCONNECT (engine finished)"), std::string::npos) << ended.output;
}

TEST(slurm_workers, bad_arguments_and_a_missing_srun_are_bad_input) {
  auto out = run_rocm_perf(
      {"workers", "slurm", "--nodes", "2", "--connect", "tcp://h:1", "--curve-keys", "/k"});
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("--server-key"), std::string::npos) << out.output;
  out = run_rocm_perf({"workers", "slurm", "--nodes", "0", "--connect", "tcp://h:1"});
  EXPECT_EQ(out.exit_code, 2) << out.output;
  out = run_rocm_perf({"workers", "slurm", "--nodes", "1", "--connect", "tcp://h:1", "--srun",
                       "/nonexistent/srun", "--insecure"});
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("fix:"), std::string::npos) << out.output;
  // Keyless TCP: refused without --insecure (the workers would refuse it themselves).
  out = run_rocm_perf({"workers", "slurm", "--nodes", "3", "--connect", "tcp://h:1", "--dry-run"});
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("--insecure"), std::string::npos) << out.output;
  out = run_rocm_perf({"workers", "slurm", "--nodes", "3", "--connect", "tcp://h:1", "--dry-run",
                       "--insecure", "--worker-option=--allow-compiler=hipcc", "--",
                       "--partition=gpu"});
  EXPECT_EQ(out.exit_code, 0) << out.output;
  EXPECT_NE(out.output.find("srun --nodes=3 --ntasks=3 --ntasks-per-node=1"), std::string::npos)
      << out.output;
  EXPECT_NE(out.output.find("--partition=gpu"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find(
                "worker compile --connect tcp://h:1 --once --insecure --allow-compiler=hipcc"),
            std::string::npos)
      << out.output;
}

} // namespace
} // namespace rpl
