// Op names (see names.h): interning, and the per-thread cache the op callbacks read.
#include "capture/names.h"

#include <cstring>

#include "formulas/registry.h"

namespace flopsprof::detail {

NameTable& NameTable::instance() {
  static NameTable* table = new NameTable;  // leaked: used by thread-exit paths
  return *table;
}

uint32_t NameTable::intern(const char* name, size_t length) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string key(name, length);
  auto it = ids_.find(key);
  if (it != ids_.end()) return it->second;
  uint32_t id = static_cast<uint32_t>(names_.size());
  names_.push_back(key);
  ids_.emplace(std::move(key), id);
  return id;
}

const std::string& NameTable::name(uint32_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return names_.at(id);  // deque: references stay valid as it grows
}

NameCache::NameCache() : slots_(256), by_ptr_(512), version_(formula_registry_version()) {}

void NameCache::validate() {
  uint64_t v = formula_registry_version();
  if (v == version_) return;
  slots_.assign(slots_.size(), Slot{});
  by_ptr_.assign(by_ptr_.size(), PtrSlot{});
  used_ = 0;
  version_ = v;
}

void NameCache::grow() {
  std::vector<Slot> old(slots_.size() * 2);
  old.swap(slots_);
  size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.hash == 0) continue;
    size_t i = s.hash & mask;
    while (slots_[i].hash != 0) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

void NameCache::insert(uint64_t hash, const Slot& slot) {
  if ((used_ + 1) * 2 > slots_.size()) grow();
  size_t mask = slots_.size() - 1;
  size_t i = hash & mask;
  while (slots_[i].hash != 0) i = (i + 1) & mask;
  slots_[i] = slot;
  ++used_;
}

namespace {

// A name's hash from its length and three of its 8-byte words (first, middle, last), not every
// byte: the slow path runs for every autograd node (their names are strings built per call, so the
// pointer cache never hits), and the names of a program's ops differ within those words. A
// collision costs one strcmp more, never a wrong id (the slots compare the text).
uint64_t name_hash(const char* name, size_t n) {
  auto mix = [](uint64_t h, uint64_t w) {
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    return h ^ (h >> 33);
  };
  uint64_t h = mix(0x9E3779B97F4A7C15ull, n);
  if (n >= 8) {
    uint64_t w;
    std::memcpy(&w, name, 8);
    h = mix(h, w);
    std::memcpy(&w, name + (n - 8) / 2, 8);
    h = mix(h, w);
    std::memcpy(&w, name + n - 8, 8);
    h = mix(h, w);
  } else {
    uint64_t w = 0;
    std::memcpy(&w, name, n);
    h = mix(h, w);
  }
  return h == 0 ? 1 : h;
}

}  // namespace

void NameCache::lookup_slow(const char* name, uint32_t* id, uint16_t* flags) {
  PtrSlot& fast = by_ptr_[(reinterpret_cast<uintptr_t>(name) >> 3) & (by_ptr_.size() - 1)];
  const size_t length = std::strlen(name);
  const uint64_t h = name_hash(name, length);
  size_t mask = slots_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.hash == h && std::strcmp(s.text, name) == 0) {
      *id = s.id;
      *flags = s.flags;
      fast = PtrSlot{name, s.text, s.id, s.flags};
      return;
    }
    if (s.hash == 0) break;
  }
  // First sight of this name on this thread in this profile: intern it (locks, allocates).
  NameTable& table = NameTable::instance();
  uint32_t nid = table.intern(name, length);
  const std::string& text = table.name(nid);
  uint16_t f = 0;
  if (find_formula(text)) f |= kNameHasFormula;
  if (formula_is_constant(text)) f |= kNameConstant;
  if (text.rfind("autograd::engine::evaluate_function", 0) == 0) f |= kNameIsEngine;
  const int mask_arg = attention_mask_arg(text);
  if (mask_arg >= 0 && mask_arg < 16) {
    f |= kNameAttentionMask | static_cast<uint16_t>(mask_arg << kNameMaskArgShift);
  }
  const KvRole kv = kv_cache_role(text);
  if (kv == KvRole::kAttention) f |= kNameKvRead;
  if (kv == KvRole::kWritesSelf || kv == KvRole::kAppends) f |= kNameKvWrite;
  *id = nid;
  *flags = f;
  insert(h, Slot{h, text.c_str(), nid, f});
  fast = PtrSlot{name, text.c_str(), nid, f};
}

}  // namespace flopsprof::detail
