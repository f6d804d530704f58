#include "workers/proposers/rule/rule_proposer.hpp"

#include <algorithm>

#include "stages/optimize/rule_transforms.hpp"
#include "workers/source/clang_source.hpp"

namespace rpl::workers {

messages::propose_reply rule_proposer::propose(const messages::propose_request& request,
                                               const std::atomic<bool>& cancel) {
  messages::propose_reply reply;
  reply.proposer = name();
  if (std::string why; !libclang_available(why)) {
    reply.status = messages::propose_status::unavailable;
    reply.error = why;
    return reply;
  }
  if (request.repair_round > 0) {
    reply.status = messages::propose_status::ok; // rules are not repaired: nothing new to offer
    reply.notes.push_back("rules: a rule's change is not repaired; nothing new in repair round " +
                          std::to_string(request.repair_round));
    return reply;
  }
  std::string error;
  const auto model = parse_source(request.source, request.source_name, request.language,
                                  request.compile_flags, error);
  if (!error.empty()) {
    reply.status = messages::propose_status::failed;
    reply.error = error;
    return reply;
  }
  if (cancel) {
    reply.status = messages::propose_status::failed;
    reply.error = "cancelled";
    return reply;
  }
  std::vector<std::string> tried;
  for (const auto& attempt : request.history) {
    tried.push_back(attempt.proposal_id);
  }
  stages::optimize::rule_transforms_result result = stages::optimize::run_rule_transforms(
      model, request.source, request.source_name, request.kernel, request.block_threads, tried);
  reply.proposals = std::move(result.proposals);
  for (const auto& entry : result.not_applied) {
    reply.notes.push_back(stages::optimize::to_line(entry));
  }
  if (reply.proposals.size() > request.max_proposals) {
    std::string ids;
    for (std::size_t i = request.max_proposals; i < reply.proposals.size(); ++i) {
      ids += (ids.empty() ? "" : ", ") + reply.proposals[i].id;
    }
    reply.notes.push_back(
        "rules: " + std::to_string(reply.proposals.size() - request.max_proposals) +
        " proposals over max_proposals (" + std::to_string(request.max_proposals) +
        ") left out: " + ids);
    reply.proposals.resize(request.max_proposals);
  }
  reply.status = messages::propose_status::ok;
  return reply;
}

} // namespace rpl::workers
