#include "engine/autotune/cached_compile_service.hpp"

#include <fstream>
#include <iterator>

#include <spdlog/spdlog.h>

#include "messages/codec.hpp"
#include "stages/search/candidate_key.hpp"

namespace rpl::engine {

namespace {

void append_field(std::string& out, std::string_view field) {
  out += std::to_string(field.size());
  out += ':';
  out += field;
}

std::string to_hex(std::string_view bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(bytes.size() * 2);
  for (const unsigned char byte : bytes) {
    hex += digits[byte >> 4];
    hex += digits[byte & 15];
  }
  return hex;
}

std::optional<std::string> from_hex(std::string_view hex) {
  if (hex.size() % 2 != 0)
    return std::nullopt;
  const auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'a' && c <= 'f')
      return c - 'a' + 10;
    return -1;
  };
  std::string bytes(hex.size() / 2, '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const int high = nibble(hex[2 * i]), low = nibble(hex[2 * i + 1]);
    if (high < 0 || low < 0)
      return std::nullopt;
    bytes[i] = static_cast<char>(high * 16 + low);
  }
  return bytes;
}

/// The cached reply with its artifact read back, or nullopt (logged) when the entry cannot be
/// trusted: the file is gone or changed, or the stored reply does not decode.
std::optional<messages::compile_reply> load_hit(const cached_compile& entry,
                                                const artifact_store& artifacts) {
  const auto path = artifacts.dir() / entry.artifact_hash;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    spdlog::warn("artifact cache: {} is gone; building it again", path.string());
    return std::nullopt;
  }
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (stages::content_hash(bytes) != entry.artifact_hash) {
    // Removed, or the store would keep the changed file under the rebuilt artifact's name.
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
    spdlog::warn("artifact cache: {} no longer matches its hash (changed on disk); removed it, "
                 "building it again",
                 path.string());
    return std::nullopt;
  }
  const auto packed = from_hex(entry.reply_hex);
  if (!packed) {
    spdlog::warn("artifact cache: the stored reply for {} is not hex; building it again",
                 entry.artifact_hash);
    return std::nullopt;
  }
  try {
    auto reply = messages::decode<messages::compile_reply>(*packed);
    reply.artifact.assign(bytes.begin(), bytes.end());
    reply.has_artifact = true;
    reply.worker_id = "cache:" + reply.worker_id;
    reply.compile_ns = 0; // nothing compiled now; the first build's time stays in its own run
    return reply;
  } catch (const messages::decode_error& error) {
    spdlog::warn("artifact cache: the stored reply for {} does not decode ({}); building it again",
                 entry.artifact_hash, error.what());
    return std::nullopt;
  }
}

} // namespace

std::string build_key(const messages::compile_request& request) {
  std::string serialized;
  append_field(serialized, "rpl-build-key-1");
  for (const auto& source : request.sources) {
    append_field(serialized, source.name);
    append_field(serialized, source.content);
  }
  append_field(serialized, "argv");
  for (const auto& arg : request.argv)
    append_field(serialized, arg);
  append_field(serialized, "toolchain");
  append_field(serialized, request.toolchain_id);
  return stages::content_hash(serialized);
}

cached_compile_service::cached_compile_service(compile_service& inner,
                                               results_store& store,
                                               const artifact_store& artifacts,
                                               bool enabled)
    : inner_(inner), store_(store), artifacts_(artifacts), enabled_(enabled),
      thread_([this] { answer_hits(); }) {}

cached_compile_service::~cached_compile_service() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void cached_compile_service::answer_hits() {
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !pending_.empty(); });
    if (pending_.empty())
      return; // stopping, and every hit answered
    auto answer = std::move(pending_.front());
    pending_.pop_front();
    lock.unlock();
    answer.on_reply(answer.reply, &answer.stored);
    lock.lock();
  }
}

void cached_compile_service::submit(messages::compile_request request, reply_fn on_reply) {
  submit_storing(std::move(request), [on_reply = std::move(on_reply)](
                                         const messages::compile_reply& reply,
                                         const artifact_store::stored*) { on_reply(reply); });
}

void cached_compile_service::submit_storing(messages::compile_request request,
                                            stored_reply_fn on_reply) {
  const auto key = build_key(request);
  if (enabled_) {
    std::optional<cached_compile> entry;
    try {
      entry = store_.find_compile(key);
    } catch (const std::exception& error) {
      spdlog::warn("artifact cache: cannot read its index ({}); compiling", error.what());
    }
    if (entry) {
      if (auto reply = load_hit(*entry, artifacts_)) {
        ++hits_;
        artifact_store::stored stored{
            entry->artifact_hash, artifacts_.dir() / entry->artifact_hash, {}};
        {
          const std::lock_guard lock(mutex_);
          pending_.push_back({std::move(*reply), std::move(stored), std::move(on_reply)});
        }
        wake_.notify_one();
        return;
      }
    }
  }
  ++misses_;
  inner_.submit(std::move(request), [this, key, on_reply = std::move(on_reply)](
                                        const messages::compile_reply& reply) {
    if (reply.status != messages::compile_status::ok || !reply.has_artifact) {
      on_reply(reply, nullptr);
      return;
    }
    // The artifact store writes the bytes under their hash (idempotent); the index remembers
    // which build made them, and the reply without its bytes.
    const auto stored = artifacts_.put(
        std::string_view(reply.artifact.data(), reply.artifact.size()), key.substr(0, 8));
    if (!stored.error.empty()) {
      on_reply(reply, nullptr); // the caller stores it, or reports why it cannot
      return;
    }
    auto light = reply;
    light.artifact.clear();
    light.has_artifact = false;
    try {
      store_.remember_compile(key, {stored.hash, to_hex(messages::encode(light))});
    } catch (const std::exception& error) {
      spdlog::warn("artifact cache: cannot remember build {}: {}", key.substr(0, 12), error.what());
    }
    on_reply(reply, &stored);
  });
}

} // namespace rpl::engine
