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
  reply.proposals = stages::optimize::rule_proposals(model, request.source, request.source_name,
                                                     request.kernel, request.block_threads, tried);
  if (reply.proposals.size() > request.max_proposals) {
    reply.proposals.resize(request.max_proposals);
  }
  reply.status = messages::propose_status::ok;
  return reply;
}

} // namespace rpl::workers
