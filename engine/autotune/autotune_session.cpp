#include "engine/autotune/autotune_session.hpp"

#include <ctime>
#include <map>
#include <random>
#include <sstream>

#include <spdlog/spdlog.h>

#include "engine/autotune/candidate_screen.hpp"
#include "stages/search/candidate_key.hpp"
#include "stages/search/prior_order.hpp"
#include "workers/compilers/compiler_rules.hpp"
#include "workers/process/child_process.hpp"

namespace rpl::engine {

namespace {

using clock_type = std::chrono::steady_clock;

std::string make_run_id() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  std::random_device device;
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "%06x", device() & 0xffffffu);
  return std::string("run-") + stamp + "-" + suffix;
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t pos = text.find(from); pos != std::string::npos;
       pos = text.find(from, pos + to.size())) {
    text.replace(pos, from.size(), to);
  }
  return text;
}

/// Points the run argv's `{BIN}` at the stored artifact.
void resolve_bin(messages::measure_request& request, const std::filesystem::path& artifact) {
  for (auto& word : request.argv) {
    word = replace_all(word, "{BIN}", artifact.string());
  }
}

/// The first line that reads like a compiler diagnostic, else the first line.
std::string compiler_summary(const std::string& output) {
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("error") != std::string::npos) {
      return workers::first_output_line(line);
    }
  }
  return workers::first_output_line(output);
}

std::optional<messages::verdict_kind> verdict_from_string(const std::string& name) {
  for (const auto kind : {messages::verdict_kind::faster, messages::verdict_kind::slower,
                          messages::verdict_kind::same, messages::verdict_kind::ambiguous,
                          messages::verdict_kind::invalid}) {
    if (name == messages::to_string(kind)) {
      return kind;
    }
  }
  return std::nullopt;
}

/// What an earlier session stored about a configuration, as the strategy's observation.
stages::observation stored_observation(std::size_t index,
                                       const stages::configuration& config,
                                       const stored_candidate& row) {
  stages::observation o;
  o.index = index;
  o.config = &config;
  o.resumed = true;
  o.verdict = verdict_from_string(row.verdict);
  if (row.status == "ok") {
    o.value_ns = row.stats.median;
  } else {
    o.failure = row.reason;
  }
  return o;
}

/// The lease of run `run_id` in `db` (store/run_lease.hpp): `<db>.<run_id>.lease`, beside it.
std::filesystem::path autotune_lease_file(const std::filesystem::path& db,
                                          const std::string& run_id) {
  auto file = db;
  file += "." + run_id + ".lease";
  return file;
}

} // namespace

autotune_session::autotune_session(const autotune_options& options,
                                   autotune_inputs& inputs,
                                   const progress_fn& on_progress,
                                   const std::atomic<bool>& stop)
    : options_(options), inputs_(inputs), on_progress_(on_progress), stop_(stop) {}

void autotune_session::open() {
  if (options_.resume && !std::filesystem::exists(options_.db)) {
    throw config_error("--resume: " + options_.db.string() +
                       " does not exist, so there is no run to continue; fix: drop --resume to "
                       "start a new run, or point --db at the database of the earlier run");
  }
  store_ = std::make_unique<results_store>(options_.db);
  auto dir = options_.db;
  dir += ".artifacts";
  try {
    artifacts_ = std::make_unique<artifact_store>(dir);
  } catch (const std::runtime_error& error) {
    throw config_error("--db " + options_.db.string() + ": " + error.what() +
                       "; fix: choose a writable --db");
  }
  if (options_.resume) {
    resume_run();
  } else {
    create_run();
  }
  apply_prior_order();
  started_ = clock_type::now();
  counts_.planned = inputs_.strategy->planned();
}

void autotune_session::take_lease(const std::string& run_id) {
  const auto file = autotune_lease_file(options_.db, run_id);
  lease_.emplace(take_campaign_lease(
      file, options_.resume ? "rocm-perf autotune --resume" : "rocm-perf autotune",
      "--resume: run " + run_id + " in " + options_.db.string(), "process",
      ", then run --resume again"));
}

void autotune_session::create_run() {
  run_record run;
  run.run_id = make_run_id();
  take_lease(run.run_id); // a new run's id is new: only a --resume of it can meet it
  run.fingerprint = inputs_.fingerprint;
  run.status = "running";
  run.space_file = options_.space_file.string();
  run.strategy = options_.strategy;
  run.seed = options_.seed;
  run.budget = options_.budget ? static_cast<std::int64_t>(*options_.budget) : -1;
  run.planned = inputs_.strategy->planned();
  run.settings = {{"build_template", options_.build_template},
                  {"cmd_template", inputs_.cmd_template},
                  {"runs", options_.runs},
                  {"warmup", options_.warmup},
                  {"timeout_s", options_.timeout_s},
                  {"lanes", options_.lanes},
                  {"compile_workers", inputs_.workers}};
  store_->create_run(run);
  run_id_ = run.run_id;
}

void autotune_session::resume_run() {
  auto run = store_->find_run(inputs_.fingerprint);
  if (!run) {
    throw config_error("--resume: " + options_.db.string() +
                       " holds no run with this space, templates, sources, strategy, seed, "
                       "budget, runs and warm-up; fix: run again with the same arguments, or "
                       "drop --resume to start a new run");
  }
  // Before anything of the run is read: a second resumer would measure the same candidates.
  take_lease(run->run_id);
  run_id_ = run->run_id;
  // The incumbent is the best key named by the last stored verdict.
  std::string best_key;
  for (auto& row : store_->candidates(run_id_)) {
    if (!row.best_key.empty()) {
      best_key = row.best_key;
    }
    completed_.emplace(row.key, std::move(row));
  }
  if (auto it = completed_.find(best_key); it != completed_.end()) {
    best_ = stages::incumbent{best_key, it->second.stats};
    best_row_ = it->second;
  }
  store_->set_run_status(run_id_, "running");
  spdlog::info("resuming {} in {}: {} candidates already complete", run_id_, options_.db.string(),
               completed_.size());
}

void autotune_session::apply_prior_order() {
  if (!options_.prior_order || options_.strategy != "exhaustive" || !options_.recorded.empty())
    return;
  // The latest finished run of this fingerprint stored before this one (runs() is in the order
  // they were created; a resumed run keeps the order it started with).
  std::optional<run_record> prior;
  for (auto& run : store_->runs()) {
    if (run.run_id == run_id_)
      break;
    if (run.fingerprint == inputs_.fingerprint && run.status == "finished")
      prior = std::move(run);
  }
  if (!prior)
    return;
  const std::size_t space_size = inputs_.space.configurations.size();
  std::map<std::size_t, double> medians;
  for (const auto& row : store_->candidates(prior->run_id))
    if (row.status == "ok" && row.stats.n > 0 && row.space_index < space_size)
      medians[row.space_index] = row.stats.median;
  if (medians.empty())
    return;
  prior_known_ = medians.size();
  inputs_.strategy = stages::make_exhaustive_in_order(
      stages::prior_first_order(space_size, medians), options_.budget);
  prior_run_ = prior->run_id;
  spdlog::info("measuring in run {}'s order: the {} configurations it measured first, fastest "
               "first, so racing has a tight bound from the start (--no-prior-order: space order)",
               prior_run_, prior_known_);
}

candidate_ptr autotune_session::next_candidate() {
  while (!stopping()) {
    const auto index = inputs_.strategy->next();
    if (!index) {
      return nullptr;
    }
    if (auto c = make_candidate(*index)) {
      return c;
    }
  }
  return nullptr;
}

candidate_ptr autotune_session::make_candidate(std::size_t index) {
  auto c = std::make_shared<candidate_state>();
  c->space_index = index;
  c->config = inputs_.space.configurations[index];
  c->params = c->config.to_json();
  auto values = c->config.as_strings();
  values["OUT"] = "{OUT}";
  values["BIN"] = "{BIN}";
  try {
    c->build_argv = inputs_.build->expand(values);
    // A GPU build that names no target gets the local GPU's (nvcc would use its oldest default).
    for (auto& word : workers::compiler_rules_for(c->build_argv)
                          .default_target_argv(c->build_argv, inputs_.nvidia_arch)) {
      c->build_argv.push_back(std::move(word));
    }
    c->run_argv = inputs_.cmd->expand(values);
  } catch (const std::exception& error) {
    spdlog::error("candidate {}: {}", index, error.what());
    // The strategy hears of every index it proposed (the model strategy counts those awaiting).
    stages::observation o;
    o.index = index;
    o.config = &inputs_.space.configurations[index];
    o.failure = error.what();
    inputs_.strategy->observe(o);
    return nullptr;
  }
  if (inputs_.launch) {
    auto resolved = stages::resolve_launch(*inputs_.launch, c->config);
    if (resolved.ok()) {
      c->launch = std::move(resolved.launch);
    } else {
      c->launch_error = resolved.error;
    }
  }
  stages::key_inputs key;
  key.sources = inputs_.source_pairs;
  key.build_argv = c->build_argv;
  key.toolchain_id = inputs_.toolchains.at(c->build_argv[0]);
  key.run_argv = c->run_argv;
  for (const auto& [name, value] : c->config.params) {
    key.params.emplace_back(name, stages::to_string(value));
  }
  c->key = stages::candidate_key(key);
  if (auto it = completed_.find(c->key); it != completed_.end()) {
    // Measured in an earlier session: the strategy learns the stored result, nothing re-runs; a
    // valid one stays eligible for the final round with its stored samples.
    ++resumed_;
    if (it->second.status == "ok" && !it->second.artifact_hash.empty()) {
      c->artifact_hash = it->second.artifact_hash;
      c->artifact_path = artifacts_->dir() / it->second.artifact_hash;
      auto request = make_measure_request(*c);
      resolve_bin(request, c->artifact_path);
      measured_candidate done{c->key, c->params, store_->samples(run_id_, c->key),
                              std::move(request), it->second.noisy};
      const std::lock_guard lock(measured_mutex_);
      measured_.push_back(std::move(done));
    }
    inputs_.strategy->observe(
        stored_observation(index, inputs_.space.configurations[index], it->second));
    return nullptr;
  }
  if (!seen_keys_.insert(c->key).second) {
    ++duplicates_;
    stages::observation o;
    o.index = index;
    o.config = &inputs_.space.configurations[index];
    o.failure = "duplicate: the same candidate key as a configuration already proposed";
    inputs_.strategy->observe(o);
    return nullptr;
  }
  c->compile_request = make_compile_request(*c);
  c->measure_request = make_measure_request(*c);
  c->submitted_at = clock_type::now();
  c->sequence = ++proposed_;
  return c;
}

messages::compile_request autotune_session::make_compile_request(const candidate_state& c) const {
  messages::compile_request request;
  request.sources = inputs_.sources;
  request.argv = c.build_argv;
  request.toolchain_id = inputs_.toolchains.at(c.build_argv[0]);
  request.match_toolchain = inputs_.checked_toolchains.count(c.build_argv[0]) > 0;
  request.max_artifact_bytes = options_.max_artifact_bytes;
  request.chunk_bytes = options_.artifact_chunk_bytes;
  request.deadline_ms = static_cast<std::uint32_t>(options_.compile_timeout_s * 1000.0);
  request.space_index = static_cast<std::int64_t>(c.space_index);
  return request;
}

messages::measure_request autotune_session::make_measure_request(const candidate_state& c) const {
  messages::measure_request request;
  request.candidate_key = c.key;
  request.argv = c.run_argv; // {BIN} stays until the artifact is stored
  request.runs = options_.runs;
  request.warmup = options_.warmup;
  request.timeout_ms = static_cast<std::uint32_t>(options_.timeout_s * 1000.0);
  request.launch = c.launch;
  return request;
}

double autotune_session::compile_rank(const messages::compile_request& request) const {
  if (request.space_index < 0)
    return 0.0;
  const std::lock_guard lock(compile_cost_mutex_);
  return compile_cost_ ? compile_cost_->expected(static_cast<std::size_t>(request.space_index))
                       : 0.0;
}

void autotune_session::on_compiled(candidate_state& c, const messages::compile_reply& reply) {
  if (reply.compile_ns > 0) {
    const std::lock_guard lock(compile_cost_mutex_);
    if (!compile_cost_)
      compile_cost_.emplace(inputs_.space.configurations);
    compile_cost_->observe(c.space_index, static_cast<double>(reply.compile_ns) * 1e-9);
  }
  c.compile = reply;
  c.compile.artifact.clear();
  c.compile.artifact.shrink_to_fit();
  if (reply.status != messages::compile_status::ok || !reply.has_artifact) {
    // No artifact (a recorded landscape's build): `{BIN}` names none.
    resolve_bin(c.measure_request, c.artifact_path);
    return;
  }
  if (!c.launch_error.empty()) {
    // The build worked but the launch file cannot launch this configuration: nothing to measure.
    c.compile.status = messages::compile_status::failed;
    c.compile.error = c.launch_error;
    return;
  }
  // Stored once: the artifact cache in front of the broker has stored it already.
  const auto stored =
      c.stored_by_service
          ? *c.stored_by_service
          : artifacts_->put(std::string_view(reply.artifact.data(), reply.artifact.size()),
                            c.key.substr(0, 8));
  c.artifact_hash = stored.hash;
  c.artifact_path = stored.path;
  if (!stored.error.empty()) {
    c.compile.status = messages::compile_status::internal_error;
    c.compile.error = stored.error;
    return;
  }
  resolve_bin(c.measure_request, c.artifact_path);
}

std::string autotune_session::build_failure(const candidate_state& c) const {
  std::string reason = messages::to_string(c.compile.status);
  const auto detail = c.compile.status == messages::compile_status::failed
                          ? compiler_summary(c.compile.output)
                          : std::string();
  if (!c.compile.error.empty()) {
    reason += ": " + c.compile.error;
  }
  if (!detail.empty()) {
    reason += ": " + detail;
  }
  return reason;
}

std::optional<std::string> autotune_session::screen(candidate_state& c) {
  // Only the kernel lane knows the launch geometry (candidate_screen.hpp says what that leaves).
  if (!options_.static_screen || !c.launch) {
    return std::nullopt;
  }
  try {
    auto outcome = screen_candidate(c.compile, c.artifact_path, c.launch, inputs_.nvidia_arch);
    c.screen = std::move(outcome.record);
    c.static_features = outcome.features;
    if (!outcome.skipped.empty()) {
      const std::lock_guard lock(screen_mutex_);
      if (screen_notes_.insert(outcome.skipped).second) {
        spdlog::warn("static screen: not screened: {} (said once; such candidates go to the lane "
                     "unscreened)",
                     outcome.skipped);
      }
    }
    if (outcome.refusal.empty()) {
      return std::nullopt;
    }
    return outcome.refusal;
  } catch (const std::exception& error) {
    spdlog::warn("static screen: candidate {}: {}", c.key, error.what());
    return std::nullopt;
  }
}

void autotune_session::judge(candidate_state& c) {
  static const stages::acceptance_config acceptance;
  c.verdict = stages::judge(c.key, c.measure, c.stats, best_, acceptance);
  if (c.verdict.decision == messages::verdict_kind::faster) {
    best_ = stages::incumbent{c.key, c.stats};
  }
  if (best_) {
    c.verdict.best_key = best_->key;
  }
}

void autotune_session::record(candidate_state& c) {
  if (c.compile.status == messages::compile_status::ok) {
    ++counts_.compiled;
    sum_compile_ns_ += c.compile.compile_ns;
  }
  for (auto ns : c.measure.samples_ns) {
    sum_run_ns_ += ns;
  }
  if (c.verdict.decision == messages::verdict_kind::invalid) {
    ++counts_.failed;
  } else {
    ++counts_.measured;
  }
  if (!fatal_) {
    try {
      store_->record(run_id_, c);
      ++counts_.completed;
    } catch (const std::exception& error) {
      const auto why = std::string("cannot store candidate ") + c.key + ": " + error.what();
      spdlog::error("{}", why);
      fatal_ = true;
      fail(why);
    }
  }
  if (c.verdict.decision != messages::verdict_kind::invalid) {
    measured_candidate done{c.key, c.params, c.measure.samples_ns, c.measure_request,
                            c.measure.noisy};
    const std::lock_guard lock(measured_mutex_);
    measured_.push_back(std::move(done));
  }
  if (c.verdict.decision == messages::verdict_kind::faster) {
    stored_candidate row;
    row.key = c.key;
    row.space_index = c.space_index;
    row.params = c.params;
    row.status = "ok";
    row.stats = c.stats;
    best_row_ = row;
  }
  try {
    report(c);
  } catch (const std::exception& error) {
    spdlog::warn("progress observer: {}", error.what());
  }
}

void autotune_session::observe(const candidate_state& c) {
  stages::observation o;
  o.index = c.space_index;
  o.config = &inputs_.space.configurations[c.space_index];
  o.verdict = c.verdict.decision;
  o.static_features = c.static_features;
  if (c.verdict.decision == messages::verdict_kind::invalid) {
    o.failure = c.measure.reason.empty() ? c.verdict.reason : c.measure.reason;
  } else {
    o.value_ns = c.stats.median;
  }
  inputs_.strategy->observe(o);
}

void autotune_session::fail(const std::string& why) {
  {
    std::lock_guard lock(failure_mutex_);
    if (failure_.empty()) {
      failure_ = why;
    }
  }
  failed_ = true;
}

std::string autotune_session::failure() const {
  std::lock_guard lock(failure_mutex_);
  return failure_;
}

autotune_counts autotune_session::counts() const {
  auto counts = counts_;
  counts.resumed = resumed_;
  counts.duplicates = duplicates_;
  return counts;
}

void autotune_session::report(const candidate_state& c) {
  if (!on_progress_) {
    return;
  }
  autotune_progress progress;
  progress.candidate = &c;
  progress.counts = counts();
  progress.best = best_row_;
  progress.elapsed = clock_type::now() - started_;
  on_progress_(progress);
}

} // namespace rpl::engine
