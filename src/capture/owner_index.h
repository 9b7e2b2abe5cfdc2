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
    const size_t mask = slots_.size() - 1;
    for (size_t i = slot_of(storage);; i = (i + 1) & mask) {
      if (slots_[i].key == storage) return slots_[i].owner;
      if (slots_[i].key == nullptr) return -1;
    }
  }

 private:
  // Fibonacci hashing: the product's top bits (its low bits would depend only on the address's
  // low bits, which allocations share).
  size_t slot_of(const void* key) const noexcept {
    return static_cast<size_t>(((reinterpret_cast<uintptr_t>(key) >> 4) * 0x9E3779B97F4A7C15ull) >>
                               shift_);
  }
  int shift_ = 60;
  struct Slot {
    const void* key = nullptr;
    int32_t owner = -1;
  };
  std::vector<Slot> slots_;
};

}  // namespace flopsprof::detail
