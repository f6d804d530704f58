#include "engine/campaign/compile_processes.hpp"

#include <zmq.hpp>

#include "engine/campaign/campaign_inputs.hpp"

namespace rpl::engine {

broker_config campaign_broker_config(const private_dir& dir,
                                     std::optional<broker_curve> curve,
                                     const std::vector<std::string>& listen) {
  broker_config config;
  config.bind_endpoints.push_back("ipc://" + (dir.path() / "broker.ipc").string());
  if (curve) {
    // The local workers' private ipc:// endpoint stays plain; --listen takes CURVE clients only.
    config.curve = std::move(curve);
  } else {
    config.bind_endpoints.insert(config.bind_endpoints.end(), listen.begin(), listen.end());
  }
  return config;
}

void start_campaign_broker(broker& b) {
  try {
    b.start();
  } catch (const zmq::error_t& error) {
    throw campaign_input_error(std::string("--listen: cannot bind: ") + error.what() +
                               "; fix: use a free port and an address of this host, e.g. "
                               "tcp://0.0.0.0:5555");
  }
}

local_workers_config compile_workers_config(const std::filesystem::path& worker_executable,
                                            const broker_config& config,
                                            std::size_t count,
                                            std::vector<std::string> allowed,
                                            const std::vector<std::string>& template_compilers,
                                            std::vector<std::string> read_paths) {
  local_workers_config workers;
  workers.executable = worker_executable.empty() ? std::filesystem::read_symlink("/proc/self/exe")
                                                 : worker_executable;
  workers.endpoint = config.bind_endpoints.front();
  workers.count = count;
  workers.heartbeat = config.heartbeat;
  workers.liveness = config.liveness;
  std::vector<std::string> absolute;
  for (const auto& compiler : template_compilers) {
    if (std::filesystem::path(compiler).is_absolute()) {
      absolute.push_back(compiler);
    }
  }
  workers.allowed_compilers = with_compiler_paths(std::move(allowed), absolute);
  workers.allowed_paths = std::move(read_paths);
  return workers;
}

} // namespace rpl::engine
