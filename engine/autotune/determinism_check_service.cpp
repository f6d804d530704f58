#include "engine/autotune/determinism_check_service.hpp"

#include <cmath>
#include <string_view>

#include <spdlog/spdlog.h>

#include "engine/autotune/cached_compile_service.hpp"
#include "stages/search/candidate_key.hpp"

namespace rpl::engine {

namespace {
std::string artifact_hash(const messages::compile_reply& reply) {
  return stages::content_hash(std::string_view(reply.artifact.data(), reply.artifact.size()));
}
} // namespace

determinism_check_service::determinism_check_service(
    broker& b, std::string run_id, double fraction, results_store& store, std::size_t local_workers)
    : broker_(b), run_id_(std::move(run_id)), fraction_(fraction), store_(store),
      local_workers_(local_workers) {}

bool determinism_check_service::chosen(const std::string& build_key, double fraction) {
  if (fraction <= 0.0)
    return false;
  if (fraction >= 1.0)
    return true;
  std::uint64_t bits = 0;
  try {
    bits = std::stoull(build_key.substr(0, 16), nullptr, 16);
  } catch (const std::exception&) {
    return false;
  }
  return static_cast<double>(bits) < std::ldexp(fraction, 64);
}

void determinism_check_service::submit(messages::compile_request request, reply_fn on_reply) {
  // Off (the default): no build key to hash, the request goes straight to the broker.
  const auto key = fraction_ > 0.0 ? build_key(request) : std::string();
  if (!chosen(key, fraction_)) {
    broker_.submit(run_id_, std::move(request), std::move(on_reply));
    return;
  }
  auto again = request;
  broker_.submit(run_id_, std::move(request),
                 [this, key, again = std::move(again),
                  on_reply = std::move(on_reply)](const messages::compile_reply& first) mutable {
                   if (first.status != messages::compile_status::ok || !first.has_artifact) {
                     on_reply(first); // nothing to compare
                     return;
                   }
                   if (broker_.live_workers() < 2 && local_workers_ < 2) {
                     ++skipped_;
                     spdlog::info(
                         "determinism check of build {} skipped: {} is the only compile worker "
                         "connected",
                         key, first.worker_id);
                     on_reply(first);
                     return;
                   }
                   const auto first_worker = first.worker_id;
                   broker_.submit(
                       run_id_, std::move(again),
                       [this, key, first,
                        on_reply = std::move(on_reply)](const messages::compile_reply& second) {
                         compare(key, first, second);
                         on_reply(first);
                       },
                       first_worker);
                 });
}

void determinism_check_service::compare(const std::string& key,
                                        const messages::compile_reply& first,
                                        const messages::compile_reply& second) {
  if (second.status != messages::compile_status::ok || !second.has_artifact) {
    ++skipped_;
    spdlog::warn("determinism check of build {}: the second build ({}) did not succeed ({}: {}); "
                 "not compared",
                 key, second.worker_id.empty() ? "no worker" : second.worker_id,
                 messages::to_string(second.status), second.error);
    return;
  }
  determinism_check check{key, first.worker_id, second.worker_id, artifact_hash(first),
                          artifact_hash(second)};
  ++checked_;
  if (check.hash_a != check.hash_b) {
    ++mismatched_;
    spdlog::warn("determinism check: build {} differs between workers {} (artifact {}) and {} "
                 "(artifact {}); the compile is not reproducible (an embedded path, a timestamp, "
                 "-g's compilation folder?); the candidate keeps the first artifact",
                 key, check.worker_a, check.hash_a, check.worker_b, check.hash_b);
  }
  try {
    store_.record_determinism_check(run_id_, check);
  } catch (const std::exception& error) {
    spdlog::error("cannot store the determinism check of build {}: {}", key, error.what());
  }
}

} // namespace rpl::engine
