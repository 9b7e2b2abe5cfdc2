// The ownership index (see owner_index.h).
#include "capture/owner_index.h"

namespace flopsprof::detail {

void OwnerIndex::build(const std::vector<std::pair<const void*, int32_t>>& entries) {
  size_t size = 16;
  shift_ = 60;
  while (size < entries.size() * 2 + 1) {
    size *= 2;
    --shift_;
  }
  slots_.assign(size, Slot{});
  size_t mask = size - 1;
  for (const auto& [key, owner] : entries) {
    size_t i = slot_of(key);
    while (slots_[i].key != nullptr && slots_[i].key != key) i = (i + 1) & mask;
    slots_[i] = Slot{key, owner};
  }
}

}  // namespace flopsprof::detail
