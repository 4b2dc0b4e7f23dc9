// ScopedEnvVar: sets (or, with a null value, unsets) one environment variable for a scope and
// restores what was there before, for tests that steer the library through its settings.
// Not thread-safe, like setenv itself: use it before ranks start or in single-threaded tests.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace accl::test {

class ScopedEnvVar {
 public:
  ScopedEnvVar(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnvVar() {
    if (old_)
      setenv(name_.c_str(), old_->c_str(), 1);
    else
      unsetenv(name_.c_str());
  }
  ScopedEnvVar(const ScopedEnvVar&) = delete;
  ScopedEnvVar& operator=(const ScopedEnvVar&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace accl::test
