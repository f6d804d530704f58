#include "engine/cli.hpp"

int main(int argc, char** argv) {
  return rpl::engine::run_cli(argc, argv);
}
