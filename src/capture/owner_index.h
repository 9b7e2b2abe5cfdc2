// Which module owns a tensor's storage: parameters and buffers, immutable during a profile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace flopsprof::detail {

/// Storage -> owner set, immutable during a profile. Open addressing on the pointer.
class OwnerIndex {
 public:
  void build(const std::vector<std::pair<const void*, int32_t>>& entries);
  int32_t find(const void* storage) const noexcept {
    if (slots_.empty()) return -1;
    size_t mask = slots_.size() - 1;
    size_t h = (reinterpret_cast<uintptr_t>(storage) >> 4) * 0x9E3779B97F4A7C15ull;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      if (slots_[i].key == storage) return slots_[i].owner;
      if (slots_[i].key == nullptr) return -1;
    }
  }

 private:
  struct Slot {
    const void* key = nullptr;
    int32_t owner = -1;
  };
  std::vector<Slot> slots_;
};

}  // namespace flopsprof::detail
