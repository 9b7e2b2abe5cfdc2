// Reading an attention mask's values (capture stage; ProfilerOptions::read_attention_masks).
#pragma once

#include <cstdint>
#include <optional>

namespace at {
class Tensor;
}

namespace flopsprof::detail {

/// Of `mask`'s elements (over its shape: a broadcast view's repeated elements count at every
/// position), those that keep a (query, key) pair: true (non-zero) in a boolean or uint8 mask,
/// above -9,000 in an additive floating-point one (masked entries are written as -inf, the dtype's
/// lowest value or -1e4 to -1e9 (bf16 rounds -1e4 to -9,984); exp of any of these underflows to 0
/// after the softmax's max-subtraction, so such a pair contributes nothing). nullopt when the
/// values cannot be read: a meta, sparse, nested or quantized tensor, another dtype. Cost: one pass
/// over the stored elements on the CPU; a tensor on another device is copied to the host first
/// (synchronising with its stream), with RecordFunction disabled so the copy is not observed. Never
/// throws.
std::optional<uint64_t> kept_mask_entries(const at::Tensor& mask) noexcept;

}  // namespace flopsprof::detail
