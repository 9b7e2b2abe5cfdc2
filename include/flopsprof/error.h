// The one exception type flopsprof throws at its API boundaries.
#pragma once

#include <stdexcept>
#include <string>

namespace flopsprof {

/// Thrown by public API calls on misuse or bad input. The message names the problem and the fix.
/// Never thrown from inside a profiled op: problems seen there are counted and reported once in
/// the profile (see `ProfileResult::problems`).
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace flopsprof
