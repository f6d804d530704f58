// `rocm-perf isolate --kernel REGEX [--dispatch N] --out DIR [--backend cuda|hsa] [--timeout S]
// [--force] [--json]
// -- APP [ARGS...]`: runs APP once under the capture library and keeps one dispatch of a kernel
// whose name (mangled or demangled) matches REGEX, the N-th from 0, with its parameters, geometry,
// code object and every live device allocation at its original address, before and after
// (workers/capture/). `rocm-perf replay DIR` replays it. Exit 0 captured; 1 the run failed (no
// capture library, the program died before the dispatch); 2 bad input; 3 no valid result (the
// kernel never ran that often, or the capture refused: the reason says why).
#include <cstdio>
#include <regex>

#include <nlohmann/json.hpp>

#include "engine/commands/command.hpp"
#include "workers/capture/capture_run.hpp"

namespace rpl::engine::commands {

namespace {

namespace cap = rpl::workers::capture;

class isolate_command final : public command {
public:
  void add_to(CLI::App& app) override {
    cmd_ = app.add_subcommand(
        "isolate",
        "Capture one kernel dispatch of a CUDA (or HSA) program, memory at its original addresses");
    cmd_->footer("Exit: 0 captured; 1 the run failed (no capture library, the program died before "
                 "the dispatch); 2 bad input; 3 no such dispatch, or the capture was refused (the "
                 "reason is printed).");
    cmd_->add_option("--kernel", kernel_, "Regular expression (ECMAScript) for the kernel's name")
        ->required();
    cmd_->add_option("--dispatch", dispatch_,
                     "Which launch of a matching kernel to capture, from 0 (default 0)");
    cmd_->add_option("--out", out_, "Capture folder to write (must not exist, unless --force)")
        ->required();
    cmd_->add_option("--timeout", timeout_s_, "Stop the program after this many seconds")
        ->check(CLI::PositiveNumber);
    cmd_->add_option("--backend", backend_,
                     "cuda (CUPTI capture library) or hsa (HSA tools library; never run on an AMD "
                     "GPU)")
        ->check(CLI::IsMember({"cuda", "hsa"}));
    cmd_->add_flag("--force", force_, "Replace an existing --out folder");
    cmd_->add_flag("--json", json_, "Print the capture status as JSON");
    cmd_->add_option("command", command_, "After --: the program and its arguments")->required();
    cmd_->positionals_at_end();
  }

  bool chosen() const override { return cmd_->parsed(); }

  int run() override {
    try {
      std::regex check(kernel_, std::regex::ECMAScript);
    } catch (const std::regex_error& error) {
      std::fprintf(stderr,
                   "rocm-perf isolate: error: --kernel '%s' is not a regular expression (%s); "
                   "fix: e.g. --kernel 'gather_scale'\n",
                   kernel_.c_str(), error.what());
      return bad_input;
    }
    std::error_code ec;
    if (std::filesystem::exists(out_, ec)) {
      if (!force_) {
        std::fprintf(stderr,
                     "rocm-perf isolate: error: --out %s already exists; fix: name a new folder, "
                     "or pass --force to replace it\n",
                     out_.string().c_str());
        return bad_input;
      }
      std::filesystem::remove_all(out_, ec);
      if (ec) {
        std::fprintf(stderr, "rocm-perf isolate: error: cannot remove %s (%s)\n",
                     out_.string().c_str(), ec.message().c_str());
        return run_failed;
      }
    }
    const auto library =
        backend_ == "hsa" ? cap::find_hsa_capture_library() : cap::find_cuda_capture_library();
    if (!library) {
      std::fprintf(
          stderr, "%s",
          backend_ == "hsa"
              ? "rocm-perf isolate: error: the HSA capture library (librpl_hsa_capture.so) "
                "is not in hip/ or lib/ beside this rocm-perf's bin/ and RPL_HSA_CAPTURE "
                "is unset; fix: build where the HSA headers are (libhsa-runtime-dev, or "
                "ROCm in /opt/rocm)\n"
              : "rocm-perf isolate: error: the CUDA capture library "
                "(librpl_cuda_capture.so) is not in lib/ beside this rocm-perf's bin/ and "
                "RPL_CUDA_CAPTURE is unset; fix: build with the CUDA backend (nvcc and "
                "CUPTI present, RPL_BUILD_CUDA=ON)\n");
      return run_failed;
    }
    std::filesystem::create_directories(out_, ec);
    cap::capture_run_options options;
    options.command = command_;
    options.kernel_regex = kernel_;
    options.dispatch = dispatch_;
    options.out = out_;
    options.library = *library;
    options.backend = backend_;
    options.timeout = std::chrono::milliseconds(static_cast<long long>(timeout_s_ * 1000));
    const auto result = cap::run_capture(options);
    if (!result.program_output.empty()) {
      std::fprintf(stderr, "--- %s ---\n%s", command_.front().c_str(),
                   result.program_output.c_str());
      if (result.program_output.back() != '\n') {
        std::fputc('\n', stderr);
      }
    }
    if (json_) {
      nlohmann::json doc =
          result.status_document.is_object() ? result.status_document : nlohmann::json::object();
      doc["status"] = result.status;
      doc["reason"] = result.reason;
      doc["program"] = result.program_end;
      doc["out"] = out_.string();
      std::printf("%s\n", doc.dump(2).c_str());
    }
    if (result.status == "captured") {
      const auto& d = result.status_document;
      if (!json_) {
        std::printf("captured %s (dispatch %llu) into %s: %llu allocations, %llu bytes, %llu "
                    "changed by the dispatch\n",
                    d.value("kernel", std::string()).c_str(),
                    static_cast<unsigned long long>(dispatch_), out_.string().c_str(),
                    d.value("regions", 0ull), d.value("bytes", 0ull),
                    d.value("changed_regions", 0ull));
      }
      if (!result.program_ok) {
        std::fprintf(stderr,
                     "rocm-perf isolate: warning: the program %s after the capture; the capture "
                     "is whole\n",
                     result.program_end.c_str());
      }
      return done;
    }
    std::fprintf(stderr, "rocm-perf isolate: %s: %s (the program %s)\n",
                 result.status == "refused"     ? "the capture was refused"
                 : result.status == "not_found" ? "no such dispatch"
                                                : "no capture",
                 result.reason.c_str(), result.program_end.c_str());
    if (stop_requested().load()) {
      return interrupted;
    }
    return result.status == "no_status" && !result.program_ok ? run_failed : no_result;
  }

private:
  CLI::App* cmd_ = nullptr;
  std::string kernel_;
  std::string backend_ = "cuda";
  std::uint64_t dispatch_ = 0;
  std::filesystem::path out_;
  double timeout_s_ = 0;
  bool force_ = false;
  bool json_ = false;
  std::vector<std::string> command_;
};

} // namespace

command_ptr make_isolate_command() {
  return std::make_unique<isolate_command>();
}

} // namespace rpl::engine::commands
