// `rocm-perf replay DIR [--iterations N] [--warmup W] [--timing cupti|events|batch]
// [--tolerance ABS[,REL]] [--relocate] [--timeout S] [--json]`: replays a dispatch that `rocm-perf
// isolate` captured, in a fresh process (rpl-replay-cuda), at its original addresses: verifies the
// memory it leaves against the captured after-state, then times it (by default from CUPTI's kernel
// records, as the tracer times the application) and says how. Exit 0 verified and timed; 1 the
// replay failed (an
// address was taken, a CUDA error, no replay program); 2 bad input (arguments, a damaged capture,
// another GPU architecture); 3 verification failed (no valid result).
#include <cmath>
#include <cstdio>
#include <sstream>

#include "engine/commands/command.hpp"
#include "stages/capture/capture_manifest.hpp"
#include "workers/capture/capture_directory.hpp"
#include "workers/replay/replay_run.hpp"
#include "workers/replay/replay_timing.hpp"

namespace rpl::engine::commands {

namespace {

namespace rp = rpl::workers::replay;

class replay_command final : public command {
public:
  void add_to(CLI::App& app) override {
    cmd_ = app.add_subcommand(
        "replay", "Replay a captured dispatch at its original addresses: verify, then time");
    cmd_->footer(
        "Exit: 0 verified and timed; 1 the replay failed (an address taken, a GPU error, no "
        "replay program); 2 bad input (a damaged capture, another architecture); 3 the "
        "output differs from the capture.");
    cmd_->add_option("dir", dir_, "The folder rocm-perf isolate --out wrote")->required();
    cmd_->add_option("--iterations", iterations_, "Timed launches (default 20)")
        ->check(CLI::Range(1, 1000000));
    cmd_->add_option("--warmup", warmup_, "Untimed launches first (default 3)")
        ->check(CLI::Range(0, 1000000));
    cmd_->add_option("--timing", timing_,
                     "How launches are timed: cupti (default: each launch's GPU start/end from "
                     "CUPTI's kernel records, as the tracer times the application; events where "
                     "CUPTI cannot be used), events (an event pair around each launch), batch "
                     "(events around 10 back-to-back launches; only for kernels that do not read "
                     "what they write)")
        ->check(CLI::IsMember({"cupti", "events", "batch"}));
    cmd_->add_option("--tolerance", tolerance_,
                     "Compare as float32 within ABS[,REL] instead of bit-exact (kernels with "
                     "atomics), e.g. 1e-6,1e-5");
    cmd_->add_flag("--relocate", relocate_,
                   "Diagnostic: replay at other addresses, translating only pointer parameters "
                   "(a kernel that follows pointers stored in memory must then fail verification)");
    cmd_->add_option("--timeout", timeout_s_, "Give up after this many seconds (default 600)")
        ->check(CLI::PositiveNumber);
    cmd_->add_flag("--json", json_, "Print the replay's JSON");
  }

  bool chosen() const override { return cmd_->parsed(); }

  int run() override {
    rp::replay_run_options options;
    if (!tolerance_.empty() && !parse_tolerance(options)) {
      std::fprintf(stderr,
                   "rocm-perf replay: error: --tolerance '%s' is not ABS or ABS,REL with "
                   "non-negative numbers; fix: --tolerance 1e-6,1e-5\n",
                   tolerance_.c_str());
      return bad_input;
    }
    workers::capture::capture_directory capture;
    try {
      capture = workers::capture::load_capture(dir_);
    } catch (const stages::capture::capture_error& error) {
      std::fprintf(stderr, "rocm-perf replay: error: %s\n", error.what());
      return bad_input;
    }
    const bool hsa = capture.dispatch.backend == "hsa";
    if (hsa && relocate_) {
      std::fprintf(stderr, "rocm-perf replay: error: --relocate is for CUDA captures only; fix: "
                           "drop it\n");
      return bad_input;
    }
    if (hsa && !timing_.empty()) {
      std::fprintf(stderr, "rocm-perf replay: error: --timing is for CUDA captures only (the HSA "
                           "replay times each dispatch from its packet's profiling timestamps); "
                           "fix: drop it\n");
      return bad_input;
    }
    const auto program = hsa ? rp::find_hsa_replay_program() : rp::find_cuda_replay_program();
    if (!program) {
      std::fprintf(stderr, "%s",
                   hsa ? "rocm-perf replay: error: this is an HSA capture and rpl-replay-hsa was "
                         "not built (it needs HSA headers with the virtual-memory API, ROCm 6.0 or "
                         "later, and their runtime; RPL_REPLAY_HSA names one built elsewhere)\n"
                       : "rocm-perf replay: error: rpl-replay-cuda is not beside this rocm-perf "
                         "and RPL_REPLAY_CUDA is unset; fix: build with the CUDA backend "
                         "(RPL_BUILD_CUDA=ON)\n");
      return run_failed;
    }
    options.program = *program;
    options.capture = dir_;
    options.iterations = iterations_;
    options.warmup = warmup_;
    options.relocate = relocate_;
    options.timing = timing_;
    options.timeout = std::chrono::milliseconds(static_cast<long long>(timeout_s_ * 1000));
    const auto result = rp::run_replay(options);
    if (result.document.is_object()) {
      if (json_) {
        std::printf("%s\n", result.document.dump(2).c_str());
      } else {
        print_text(result.document);
      }
    }
    if (result.exit_code != done && result.exit_code != no_result) {
      std::fprintf(stderr, "rocm-perf replay: %s\n", result.message.c_str());
    }
    return result.exit_code == done || result.exit_code == bad_input ||
                   result.exit_code == no_result
               ? result.exit_code
               : run_failed;
  }

private:
  bool parse_tolerance(rp::replay_run_options& options) const {
    std::istringstream in(tolerance_);
    double abs = -1;
    double rel = 0;
    char comma = 0;
    in >> abs;
    if (!in || abs < 0) {
      return false;
    }
    if (in >> comma) {
      if (comma != ',' || !(in >> rel) || rel < 0 || !(in >> std::ws).eof()) {
        return false;
      }
    }
    options.tolerance_abs = abs;
    options.tolerance_rel = rel;
    return true;
  }

  static void print_text(const nlohmann::json& doc) {
    const auto& v = doc["verification"];
    std::printf("replayed %s on %s (%s) at its %s addresses: %zu regions in %zu reserved ranges\n",
                doc.value("kernel", std::string()).c_str(),
                doc["device"].value("name", std::string()).c_str(),
                doc["device"].value("arch", std::string()).c_str(),
                doc.value("addresses", std::string()).c_str(), doc.value("regions", std::size_t{0}),
                doc.value("reserved_ranges", std::size_t{0}));
    if (v.value("passed", false)) {
      std::printf("verification (%s): passed; the %zu regions it writes match the capture, the "
                  "others are unchanged\n",
                  v.value("mode", std::string()).c_str(),
                  v.value("regions_written", std::size_t{0}));
    } else {
      std::printf("verification (%s): FAILED in %zu of %zu regions:\n",
                  v.value("mode", std::string()).c_str(), v["mismatched_regions"].size(),
                  v.value("regions_compared", std::size_t{0}));
      for (const auto& m : v["mismatched_regions"]) {
        std::printf("  region %s: %llu mismatched (first at byte %llu)\n",
                    m.value("base", std::string()).c_str(), m.value("mismatched", 0ull),
                    m.value("first_offset", 0ull));
      }
    }
    if (doc["timing"].is_object()) {
      const auto& t = doc["timing"];
      std::printf("median %.3f us over %d samples (cv %.2f %%, min %.3f, max %.3f us; %d warm-up)\n"
                  "timed by %s\n",
                  t.value("median_ns", 0.0) / 1e3, t.value("iterations", 0),
                  100.0 * t.value("cv", 0.0), t.value("min_ns", 0.0) / 1e3,
                  t.value("max_ns", 0.0) / 1e3, t.value("warmup", 0),
                  rp::describe_replay_timing(t).c_str());
    }
  }

  CLI::App* cmd_ = nullptr;
  std::filesystem::path dir_;
  int iterations_ = 20;
  int warmup_ = 3;
  std::string tolerance_;
  std::string timing_; ///< empty: rpl-replay-cuda's default (cupti)
  bool relocate_ = false;
  double timeout_s_ = 600;
  bool json_ = false;
};

} // namespace

command_ptr make_replay_command() {
  return std::make_unique<replay_command>();
}

} // namespace rpl::engine::commands
