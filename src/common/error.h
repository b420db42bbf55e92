// The one error type of the host-side tools (CLI, coordinator, image reader). Its message is the
// single line a user sees: what went wrong and, where possible, what to do about it.
#pragma once
#include <stdexcept>
#include <string>

namespace stasis {
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};
}  // namespace stasis
