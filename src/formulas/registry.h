// Internal access to the formula registry.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "flopsprof/formulas.h"

namespace flopsprof::detail {

/// A copy of the formula registered for `op_name`; empty when none. Thread-safe.
FormulaFn find_formula(std::string_view op_name);

/// Whether `op_name`'s formula is a built-in whose count ignores the arguments. Thread-safe.
bool formula_is_constant(std::string_view op_name);

/// Position of the attention mask argument (attn_mask / attn_bias) of a built-in
/// scaled_dot_product_* op; -1 for other ops. The capture reads the mask there when
/// ProfilerOptions::read_attention_masks is set (formulas/attention.cpp).
int attention_mask_arg(std::string_view op_name);

/// What an op does to a KV cache, if it is one of those that touch it (docs/report.md, "KV
/// cache"): the capture records the storage identities of the arguments named below; the
/// aggregation tells the cache's reads and writes from them (aggregation/kv_cache.cpp).
enum class KvRole : uint8_t {
  kNone,
  kAttention,   ///< an SDPA forward op or kernel: reads keys (argument 1) and values (2)
  kWritesSelf,  ///< writes into its first argument in place (copy_, index_copy_, index_put_)
  kAppends,     ///< cat: a new tensor from its list (argument 0), the old cache first
};
KvRole kv_cache_role(std::string_view op_name);

/// Incremented by every registration or removal: caches of "has a formula" check it.
uint64_t formula_registry_version();

}  // namespace flopsprof::detail
