#pragma once
/// The rule proposer: source transforms on the kernel's AST (libclang, loaded at run time by
/// workers/source/clang_source.hpp), chosen by stages/optimize/rule_transforms.hpp: unroll
/// pragmas, __launch_bounds__, a private copy of a device function the kernel shares. Each reply
/// carries every transform that applies and was not tried before (request.history), so a repair
/// round asks for nothing new: a rule's patch does not get repaired, it is simply dropped. The
/// reply's notes say, one line per rule that proposed nothing, why ("vector loads: ..."; the rules'
/// names are stages/optimize/rule_transforms.hpp's), and which proposals max_proposals left out.

#include "workers/proposers/proposer.hpp"

namespace rpl::workers {

class rule_proposer final : public proposer {
public:
  std::string name() const override { return "rule"; }
  messages::propose_reply propose(const messages::propose_request& request,
                                  const std::atomic<bool>& cancel) override;
};

} // namespace rpl::workers
