// Decoding an op's captured arguments, and each counted op's FLOPs and MACs and each op's bytes,
// evaluated once per profile: every consumer (module statistics, op table, trace) reads the same
// counts.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "flopsprof/formulas.h"
#include "flopsprof/report.h"
#include "records/events.h"
#include "records/gpu.h"

namespace flopsprof::detail {

/// One event's count.
struct OpCount {
  enum State : uint8_t {
    kNone,      ///< not a counted op, or no formula for its name
    kCounted,   ///< `fc` holds its count
    kDeclined,  ///< the formula did not understand these inputs ("n/a", never 0)
    kFailed,    ///< the formula threw (OpCounts::errors says why)
  };
  /// Whether and how the op's bytes count (docs/report.md, "Bytes moved"): an op counts bytes
  /// when it counts FLOPs (kCounted), or when it has no formula and no op inside it counts
  /// FLOPs while its enclosing op (if any) has one that does: every FLOP and every byte of a
  /// profile sit on the same ops, each once.
  enum Bytes : uint8_t {
    kNoBytes,                 ///< not a byte-counting op
    kBytesKnown,              ///< read and written from its arguments
    kWrittenUnknown,          ///< reads known; what it writes follows from no rule (written = 0)
    kWrittenFromAllocations,  ///< written: the bytes allocated while it ran (memory tracking)
  };
  FlopCount fc;
  uint64_t bytes_read = 0, bytes_written = 0;
  DType dtype = DType::kUnknown;  ///< the dtype it computes in (ops with a formula or bytes)
  State state = kNone;
  Bytes bytes = kNoBytes;
  const FlopCount* counted() const { return state == kCounted ? &fc : nullptr; }
  bool has_bytes() const { return bytes != kNoBytes; }
  uint64_t bytes_total() const {
    const uint64_t t = bytes_read + bytes_written;
    return t < bytes_read ? UINT64_MAX : t;
  }
};

/// The counts of a profile's events, by thread and event index (as the threads' `events`).
struct OpCounts {
  std::vector<std::vector<OpCount>> threads;
  std::map<std::string, uint64_t> errors;  ///< "<op>: <what the formula threw>" -> count
  /// The floating dtypes counted ops did FLOPs in, in the order first met: those the roofline
  /// needs a peak for.
  std::vector<DType> flop_dtypes() const;
};

/// Evaluates the formulas of every counted op of `threads`, and the bytes rules of every op that
/// counts bytes (one call per op; each formula and rule looked up once per name). Ops whose
/// writes no rule derives take them from the memory records, when memory was tracked. Pure but
/// for the formula registry.
/// Under the causal `convention`, an attention op's masked pairs leave its FLOPs and MACs (its
/// `masked_*` stay, so the dense count can be told). Under `tf32`, the fp32 ops that LibTorch runs
/// on TF32 tensor cores (tf32_family) are counted in DType::kTFloat32.
OpCounts count_ops(const std::vector<const ThreadEvents*>& threads, const NameLookup& names,
                   AttentionConvention convention = AttentionConvention::kDense, Tf32Use tf32 = {});

/// Which library runs an op's fp32 work on TF32 tensor cores when LibTorch allows it: cuDNN's
/// convolutions (forward and backward, transposed too) and RNNs, or cuBLAS's matrix products
/// (mm, addmm, bmm, baddbmm, addbmm, matmul, linear, _addmm_activation). Vector products (mv,
/// dot) and attention kernels are neither: they stay fp32. Pure.
enum class Tf32Family : uint8_t { kNone, kCudnn, kCublas };
Tf32Family tf32_family(const std::string& op_name);

/// The formula inputs of one event, as views into its thread's storage.
std::vector<ArgView> arg_views(const ThreadEvents& thread, const RawEvent& event);

/// "T<768x768xfp32>, 1, [1, 1]": an op's captured arguments as shown in the trace.
std::string format_args(const std::vector<ArgView>& args);

}  // namespace flopsprof::detail
