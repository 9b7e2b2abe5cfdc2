// A NameLookup for tests on synthetic events: ids handed out in order of first use.
#pragma once

#include <string>
#include <vector>

#include "records/events.h"

namespace flopsprof::detail::testing {

class Names : public NameLookup {
 public:
  uint32_t id(const std::string& n) {
    for (uint32_t i = 0; i < names_.size(); ++i) {
      if (names_[i] == n) return i;
    }
    names_.push_back(n);
    return static_cast<uint32_t>(names_.size() - 1);
  }
  const std::string& name(uint32_t i) const override { return names_.at(i); }

 private:
  std::vector<std::string> names_;
};

}  // namespace flopsprof::detail::testing
