#pragma once
/// The recorded lane: measurements answered from a landscape (landscape_file.hpp), nothing run.
/// The run template of `autotune --recorded` is `recorded {P1} {P2} ...` in the landscape's
/// parameter order, so argv[1..] joined by commas is the configuration's cache key. A measured
/// entry answers with its raw samples (`times`, in the landscape's unit: milliseconds for Kernel
/// Tuner's time) as nanoseconds, or its objective repeated `runs` times when the file kept no
/// samples; a failed entry answers `nonzero_exit` with the file's reason; a key the landscape does
/// not hold is `launch_failed`, named.

#include <memory>
#include <string>

#include "stages/search/landscape.hpp"
#include "workers/lanes/lane_backend.hpp"

namespace rpl::workers {

class recorded_lane final : public lane_backend {
public:
  /// `ns_per_unit`: nanoseconds per unit of the landscape's objective (1e6 for milliseconds).
  recorded_lane(std::shared_ptr<const stages::landscape> landscape,
                std::string name,
                double ns_per_unit = 1e6);
  messages::measure_result measure(const messages::measure_request& request) override;
  const std::string& name() const override { return name_; }

private:
  std::shared_ptr<const stages::landscape> landscape_;
  std::string name_;
  double ns_per_unit_;
};

} // namespace rpl::workers
