#pragma once
/// An environment variable set (or, with nullptr, removed) for a scope and put back after it; a
/// child process started inside the scope inherits it. Not thread-safe: setenv is not.

#include <cstdlib>
#include <optional>
#include <string>

#include <stdlib.h>

namespace rpl::testing {

class scoped_env {
public:
  scoped_env(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) {
      old_ = old;
    }
    if (value == nullptr) {
      ::unsetenv(name);
    } else {
      ::setenv(name, value, 1);
    }
  }
  ~scoped_env() {
    if (old_) {
      ::setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;

private:
  std::string name_;
  std::optional<std::string> old_;
};

} // namespace rpl::testing
