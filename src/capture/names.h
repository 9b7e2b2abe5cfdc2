// Op names: the process-wide interned table and each thread's lock-free cache (capture stage).
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "records/events.h"

namespace flopsprof::detail {

/// Op names by id. Interning takes a lock; lookups through a thread's NameCache do not.
class NameTable : public NameLookup {
 public:
  static NameTable& instance();
  /// Id of `name` (copied on first sight). Thread-safe; locks.
  uint32_t intern(const char* name, size_t length);
  const std::string& name(uint32_t id) const override;

 private:
  mutable std::mutex mu_;
  std::deque<std::string> names_;
  std::unordered_map<std::string, uint32_t> ids_;
};

/// Bits a thread caches per name.
enum NameFlag : uint16_t {
  kNameHasFormula = 1,
  kNameIsEngine = 2,  ///< autograd engine wrapper ("autograd::engine::evaluate_function: ...")
  kNameConstant = 4,  ///< its formula ignores the arguments: nothing to capture
  /// An attention op with a mask argument, whose position is `flags >> kNameMaskArgShift`
  /// (read with ProfilerOptions::read_attention_masks).
  kNameAttentionMask = 8,
  /// Touches a KV cache (formulas' kv_cache_role): the storages of its keys and values
  /// (kNameKvRead), of its first argument or its list's first tensor (kNameKvWrite) are recorded.
  kNameKvRead = 16,
  kNameKvWrite = 32,
};
constexpr int kNameMaskArgShift = 8;

/// Per-thread, per-profile cache: name string -> (id, flags). Open addressing on a content hash;
/// no lock and no allocation once a name has been seen.
class NameCache {
 public:
  NameCache();
  /// Id and flags of `name`. The common case (the dispatcher's stable schema string seen before
  /// on this thread) is one inlined probe; the rest takes the slow path (may lock and allocate).
  void lookup(const char* name, uint32_t* id, uint16_t* flags) {
    const PtrSlot& fast = by_ptr_[(reinterpret_cast<uintptr_t>(name) >> 3) & (by_ptr_.size() - 1)];
    if (fast.ptr == name && std::strcmp(fast.text, name) == 0) {
      *id = fast.id;
      *flags = fast.flags;
      return;
    }
    lookup_slow(name, id, flags);
  }
  /// Empties the cache if formulas were registered or removed since it was filled.
  void validate();

 private:
  struct Slot {
    uint64_t hash = 0;
    const char* text = nullptr;  // interned, stable
    uint32_t id = 0;
    uint16_t flags = 0;
  };
  void lookup_slow(const char* name, uint32_t* id, uint16_t* flags);
  void grow();
  void insert(uint64_t hash, const Slot& slot);
  std::vector<Slot> slots_;
  size_t used_ = 0;
  // Fast path: names are usually the dispatcher's schema strings, whose pointers are stable.
  // Keyed by pointer, verified with strcmp (a pointer may be reused for another string).
  struct PtrSlot {
    const char* ptr = nullptr;
    const char* text = nullptr;
    uint32_t id = 0;
    uint16_t flags = 0;
  };
  std::vector<PtrSlot> by_ptr_;
  uint64_t version_ = 0;  // formula registry version the flags were computed with
};

}  // namespace flopsprof::detail
