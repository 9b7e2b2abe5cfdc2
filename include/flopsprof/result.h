// The result model: what a profile measured, as plain data (ProfileResult and its parts).
// Rendered by flopsprof/report.h; compared by flopsprof/diff.h.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "flopsprof/formulas.h"
#include "flopsprof/roofline.h"

namespace flopsprof {

/// FLOPs per dtype, indexed by `static_cast<size_t>(DType)`.
using FlopsByDtype = std::array<uint64_t, static_cast<size_t>(DType::kCount)>;

/// A GPU kernel (or memcpy/memset) name and its totals, from the CUPTI backend.
struct KernelStats {
  std::string name;
  uint64_t calls = 0;
  double gpu_s = 0;  ///< sum of its durations, seconds
};

/// How attention under a causal mask counts in the headline numbers (docs/report.md, "Causal
/// attention"). Whatever the convention, the profile also carries the other count and what the
/// kernels ran.
enum class AttentionConvention : uint8_t {
  kDense,   ///< every query against every key: FlopCounterMode's, PaLM's 6N + 12LHQT (default)
  kCausal,  ///< only the (query, key) pairs the mask keeps: FlashAttention's, Megatron's (an
            ///< is_causal mask; an explicit mask only when read: read_attention_masks)
};
/// "dense", "causal"
const char* convention_name(AttentionConvention convention);

/// Latency per iteration where a profile saw several: each forward call of the root model (a
/// loop that profiled several iterations), each backward pass, each optimizer step, or each of
/// the command's repeated profiles (`flopsprof MODEL --runs N`). `samples` 0: one iteration
/// only, no spread known (flopsprof/diff.h then calls latency deltas single samples).
struct LatencySpread {
  uint64_t samples = 0;
  double min_s = 0, median_s = 0, max_s = 0;  ///< seconds per iteration
};

/// What a profile ran, kept so that two profiles can be compared (flopsprof/diff.h warns where
/// they differ: a 2x latency from batch 4 vs 2 is no regression). "" or 0: not known.
struct Workload {
  /// The forward's arguments, "fp32[8, 3, 224, 224]" (a non-tensor: its type), where known:
  /// `get_model_profile`'s and the command's, or ProfilerOptions::inputs; else (a start/stop
  /// profile) the tensor the model's first op read as its data (the first no module owns).
  std::vector<std::string> inputs;
  /// Where `inputs` come from: "given" (the options, get_model_profile, the command), "the
  /// model's first op" (read from the records), or "" (unknown).
  std::string inputs_source;
  int intra_op_threads = 0;       ///< at::get_num_threads() when the profile stopped
  std::string libtorch_version;   ///< "1.13.0"
  std::string build_type;         ///< flopsprof's CMake build type ("Release")
  std::string device;             ///< the CPU's model name, or the GPU's name
  std::string flopsprof_version;  ///< "0.1.0"
  int profile_step = 0;           ///< ProfilerOptions::profile_step (0: started by hand)
  uint64_t runs = 1;              ///< repeated profiles this one stands for (the command's --runs)
  /// How ops were captured: "dispatch" (the dispatcher interceptor) or "record_function"
  /// (ProfilerOptions::Capture); latencies include each path's own cost, which differs.
  std::string capture;
  std::string capture_note;  ///< why kAuto did not use the interceptor ("" when it did)
};

/// One op name, over the whole forward.
struct OpStats {
  std::string name;  ///< "aten::addmm"
  /// "forward" (the model's forward), "outside" (forward work outside the model: data
  /// preparation, loss, metrics, clipping), "backward", "recompute" or "step".
  std::string phase = "forward";
  bool has_formula = false;  ///< false: counted as n/a, listed with its time
  uint64_t calls = 0;  ///< calls that were counted or listed (not those nested in a counted op)
  uint64_t flops = 0;
  uint64_t macs = 0;
  double latency_s = 0;  ///< host time of those calls, inclusive
  /// `latency_s` as measured, before flopsprof's own cost was removed (ProfileResult::
  /// correction; equal when nothing was removed).
  double latency_raw_s = 0;
  double uncovered_s = 0;  ///< no-formula ops: self time not inside any counted op
  /// `latency_s` over the summed `latency_s` of the rows of its phase (a fraction; 0 when they
  /// took no time): the HTML page's "share of phase time".
  double phase_share = 0;
  /// Bytes of its calls that count bytes (docs/report.md, "Bytes moved"; ops without a formula
  /// too). Calls whose writes no rule derives count their reads only (`written_unknown`), or
  /// with memory tracking the bytes allocated while they ran (`written_from_allocations`).
  uint64_t bytes = 0, bytes_read = 0, bytes_written = 0;
  uint64_t written_unknown = 0, written_from_allocations = 0;  ///< calls
  DType dtype = DType::kUnknown;  ///< the dtype most of its FLOPs (else bytes) were in
  RooflinePoint roofline;         ///< FLOPs (n/a without a formula), bytes, over latency_s
};

/// One module's work in one region (ModuleStats::regions, indexed as ProfileResult::regions):
/// its forward calls that began in the region's windows and the forward ops placed in it there
/// (inclusive of its submodules, as ModuleStats), and its backward work there.
struct ModuleRegionStats {
  uint64_t calls = 0;
  double latency_s = 0;  ///< sum of those calls' spans, seconds
  uint64_t flops = 0, macs = 0;
  uint64_t bytes = 0;  ///< bytes its forward ops there moved (read + written)
  uint64_t kv_read_bytes = 0, kv_write_bytes = 0;  ///< of those, a KV cache's
  FlopsByDtype flops_by_dtype{};
  double flops_share = 0;  ///< of its region's forward FLOPs (RegionStats::flops), a fraction
  uint64_t bwd_flops = 0;  ///< backward ops there linked to its forward ops
  /// (flops + bwd_flops) per token of the region (RegionStats::tokens); 0 when its tokens are
  /// unknown.
  double flops_per_token = 0;
  /// Its forward there against the machine's ceilings (0: unknown, or no time): FLOP/s over the
  /// peak of each op's dtype (mfu), bytes/s over the peak bandwidth (mbu).
  double mfu = 0, mbu = 0;
  /// The ratio above (mfu; mbu) is above 1 by more than kCeilingTolerance: more than the
  /// peak it is measured against. mbu counts bytes against the DRAM bandwidth, so work whose bytes
  /// sit in a cache exceeds it (its roofline point is against its level's ceiling); mfu above 1
  /// means a peak measured too low. Shown with "!" in the text, never plain.
  bool mfu_above_peak = false, mbu_above_peak = false;
};

/// One module of the profiled model, inclusive of its submodules.
struct ModuleStats {
  std::string name;           ///< dotted name ("encoder.layer.3"); "" for the root model
  std::string type;           ///< type as DeepSpeed shows it ("Linear", "BertLayer")
  int depth = 0;              ///< 0 for the root
  int parent = -1;            ///< index into `ProfileResult::modules`; -1 for the root
  std::vector<int> children;  ///< indices into `ProfileResult::modules`
  uint64_t calls = 0;         ///< forward calls seen (docs/attribution.md)
  /// The call count rests on op order, not on observed calls: its first submodule ran again
  /// with nothing between that shows it returned (called again, or applying that submodule
  /// twice); a call ran only some of its layers (a method other than forward, children called
  /// directly); it shows no call while a submodule ran; or it may have run ops placed elsewhere.
  /// The problems list names it and why. Never set when `scoped`.
  bool calls_inferred = false;
  bool scoped = false;  ///< calls came from observed boundaries (FLOPSPROF_MODULE(), the call
                        ///< window, or a built-in module's observed forward): exact
  uint64_t params = 0;  ///< parameters in this subtree, shared ones once
  uint64_t trainable_params = 0;
  uint64_t param_bytes = 0;
  uint64_t flops = 0;  ///< forward FLOPs of ops attributed to this subtree
  uint64_t macs = 0;
  double latency_s = 0;      ///< forward latency: sum of the spans of its calls, seconds
  double latency_raw_s = 0;  ///< the same as measured, with flopsprof's own cost in it
  /// Of the root's params, MACs and forward latency, as fractions (DeepSpeed's "= 12.5%
  /// Params"); 0 where the root's is 0 (latency: or the profile has no time).
  double params_share = 0, macs_share = 0, latency_share = 0;
  uint64_t na_ops = 0;  ///< forward op calls in this subtree with no formula
  /// Forward ops in this subtree (top-level calls) and their FLOPs whose module was inferred from
  /// op order, not established by evidence (docs/attribution.md, "Rules"); the
  /// problems list names each module concerned and what would make it exact.
  uint64_t inferred_ops = 0;
  uint64_t inferred_flops = 0;
  uint64_t inferred_bytes = 0;  ///< of `bytes`: what those inferred ops moved
  /// Of `bwd_flops` and `bwd_bytes`: the backward of those inferred ops (their autograd nodes),
  /// measured.
  uint64_t inferred_bwd_flops = 0, inferred_bwd_bytes = 0;
  /// The other side of those guesses: forward ops (top-level calls), their FLOPs and their bytes
  /// that a rule placed in another module, or outside the model, although this module's forward
  /// may have run them. Its numbers may be too small by up to these; the problems list names it.
  uint64_t maybe_missing_ops = 0;
  uint64_t maybe_missing_flops = 0;
  uint64_t maybe_missing_bytes = 0;
  FlopsByDtype flops_by_dtype{};
  /// The dtype most of its forward FLOPs were in (kUnknown: none): its peak is its roofline's.
  DType dtype = DType::kUnknown;
  /// Of its forward under a causal mask: FLOPs on the pairs the mask discards (in `flops` under
  /// the dense convention, not under the causal one) and FLOPs its kernels skipped (docs/
  /// report.md, "Causal attention"). Dense, causal and kernel counts follow from these.
  uint64_t masked_flops = 0, skipped_flops = 0;
  uint64_t bwd_flops = 0;  ///< measured: backward ops linked to this subtree's forward ops
  uint64_t bwd_macs = 0;
  double bwd_latency_s = 0;      ///< sum of the durations of its autograd nodes, seconds
  uint64_t recompute_flops = 0;  ///< forward ops re-run inside backward (activation checkpointing)
  uint64_t recompute_macs = 0;
  int64_t fwd_alloc_bytes = 0;  ///< memory tracking: bytes allocated by its forward ops
  int64_t fwd_held_bytes = 0;   ///< allocated minus freed by its forward ops: what it leaves
                                ///< allocated (activations kept for backward, outputs)
  double gpu_busy_s = 0;        ///< GPU: sum of the durations of the kernels its ops launched
  double gpu_span_s = 0;        ///< GPU: first kernel start to last kernel end
  /// Device time of its forward / backward work, seconds: with CUPTI, the kernels its forward
  /// ops (backward nodes) launched; with device events, the device intervals of its top-level
  /// forward ops (backward nodes). 0 without device timing.
  double device_fwd_s = 0;
  double device_bwd_s = 0;
  std::vector<KernelStats> top_kernels;  ///< GPU: its kernels by total time (at most 5)
  /// Bytes its forward ops moved (docs/report.md, "Bytes moved"): read + written, as FLOPs are
  /// attributed (inclusive of its submodules).
  uint64_t bytes = 0, bytes_read = 0, bytes_written = 0;
  /// Of those, a KV cache's (docs/report.md, "KV cache"): keys and values its attention ops read,
  /// and the cache's writes (an append by cat, an in-place update).
  uint64_t kv_read_bytes = 0, kv_write_bytes = 0;
  /// Its forward and backward against the machine's ceilings over their time (the device's when
  /// measured, else its latencies; docs/report.md, "MFU, HFU and MBU"): model FLOPs (fwd + bwd,
  /// the convention's) over each op's dtype peak (mfu), what the hardware ran (recompute and
  /// masked pairs computed in, skipped blocks out: hfu), bytes (fwd + bwd + recompute) over the
  /// bandwidth (mbu). 0: unknown (no peaks, or no time).
  double mfu = 0, hfu = 0, mbu = 0;
  /// The ratio above (mfu; hfu; mbu) is above 1 by more than kCeilingTolerance: more than the
  /// peak it is measured against. mbu counts bytes against the DRAM bandwidth, so work whose bytes
  /// sit in a cache exceeds it (its roofline point is against its level's ceiling); mfu above 1
  /// means a peak measured too low. Shown with "!" in the text, never plain.
  bool mfu_above_peak = false, hfu_above_peak = false, mbu_above_peak = false;
  /// Bytes of its backward ops (linked to its forward ops), and of forward ops re-run in
  /// backward (activation checkpointing).
  uint64_t bwd_bytes = 0, bwd_bytes_read = 0, bwd_bytes_written = 0;
  uint64_t recompute_bytes = 0;
  /// Its forward and its backward (recompute included) on the roofline: FLOPs and bytes over
  /// the device time when measured, else the host latency.
  RooflinePoint roofline, bwd_roofline;
  /// Its own forward ops (not its submodules'), one row per op name, by latency: name, calls,
  /// FLOPs, MACs, latency and bytes (phase "forward"). What `flopsprof diff --ops` compares.
  std::vector<OpStats> ops;
  /// Its forward latency per forward call of the root (its calls in that iteration summed), and
  /// its backward per backward pass; samples 0 with one iteration only.
  LatencySpread fwd_spread, bwd_spread;
  /// Its work per region (empty without regions), indexed as ProfileResult::regions.
  std::vector<ModuleRegionStats> regions;
};

/// The modules of one type at one depth of the tree, summed: DeepSpeed's aggregated profile (the
/// text report's "Aggregated Profile" lists the top ones per depth).
struct ModuleTypeStats {
  int depth = 0;                  ///< 0: the root
  std::string type;               ///< ModuleStats::type
  uint64_t modules = 0;           ///< modules of that type at that depth
  uint64_t params = 0, macs = 0;  ///< their parameters and forward MACs, summed
  double latency_s = 0;           ///< their forward latencies, summed (seconds)
};

/// A phase of the run the caller named (FlopsProfiler::region(): "prefill", "decode"): its
/// windows' wall time and every op that began inside one of them, on any thread. Regions never
/// overlap; work outside every region is in none (the totals still count it).
struct RegionStats {
  std::string name;
  uint64_t windows = 0;   ///< times the region was opened
  double duration_s = 0;  ///< wall time of its windows, summed, seconds
  double first_s = 0;     ///< its first window's wall time (a prefill's: time to first token)
  LatencySpread spread;   ///< per window; samples 0 with one window
  uint64_t flops = 0;     ///< the model's forward FLOPs there (as ProfileResult::flops)
  uint64_t macs = 0;
  FlopsByDtype flops_by_dtype{};
  uint64_t bwd_flops = 0;        ///< measured backward FLOPs there (recompute excluded)
  uint64_t recompute_flops = 0;  ///< forward ops re-run in backward there
  uint64_t outside_flops = 0;    ///< forward FLOPs outside the model there (sampling, a loss)
  uint64_t bytes = 0;  ///< bytes the model's forward, backward and recompute ops there moved
  /// Of the forward's, a KV cache's (docs/report.md, "KV cache"): keys and values the attention
  /// ops read, and the cache's writes.
  uint64_t kv_read_bytes = 0, kv_write_bytes = 0;
  double kv_bytes_share = 0;  ///< (kv_read_bytes + kv_write_bytes) / bytes; 0: no bytes
  /// kv_read_bytes and kv_write_bytes per token (0: its tokens are unknown, or no KV bytes).
  double kv_read_per_token = 0, kv_write_per_token = 0;
  /// Tokens the region processed (0: unknown): given (FlopsProfiler::region's `tokens`,
  /// RegionScope::add_tokens) or, per window without any given, the largest element count among
  /// the indices of its aten::embedding ops on the model's weights (the token ids: batch x
  /// sequence). A window that runs the model on several inputs needs its tokens given.
  /// `tokens_source`: "given", "embedding indices", "given and embedding indices", or "" when
  /// unknown.
  uint64_t tokens = 0;
  std::string tokens_source;
  double tokens_per_s = 0;         ///< tokens / duration_s (0: unknown)
  double flops_per_token = 0;      ///< (flops + bwd_flops) / tokens
  double latency_per_token_s = 0;  ///< duration_s / tokens
  /// Model FLOPs utilisation: (forward + backward FLOPs, in the profile's convention) per second
  /// of its windows over the peak of each op's dtype (sum over dtypes of FLOPs / peak, over
  /// duration_s); hfu counts what the hardware ran instead: the recompute and the masked pairs
  /// the kernels computed in, the blocks they skipped out. mbu: bytes per second over the peak
  /// bandwidth. 0: the peaks are unknown (ProfileResult::machine says where they came from).
  double mfu = 0, hfu = 0, mbu = 0;
  /// The ratio above (mfu; hfu; mbu) is above 1 by more than kCeilingTolerance: more than the
  /// peak it is measured against. mbu counts bytes against the DRAM bandwidth, so work whose bytes
  /// sit in a cache exceeds it (its roofline point is against its level's ceiling); mfu above 1
  /// means a peak measured too low. Shown with "!" in the text, never plain.
  bool mfu_above_peak = false, hfu_above_peak = false, mbu_above_peak = false;
};

/// Device activity of a model on a GPU (absent on CPU-only runs). Timing, in fallback order:
/// "cupti" (every kernel, memcpy and memset), "<device> events" (e.g. "cuda events": device
/// intervals of top-level ops from events on the current stream), "host clock" (`reason` says why).
struct GpuStats {
  bool measured = false;  ///< device timing was collected (CUPTI records or device events)
  std::string backend;    ///< "cupti", "cuda events", "host clock"
  std::string reason;     ///< why CUPTI (and events) were not used, when they were not
  std::string device;     ///< e.g. "NVIDIA H100 80GB HBM3"
  double busy_s = 0;      ///< CUPTI: sum of all kernel durations (memcpy and memset apart)
  double span_s = 0;      ///< CUPTI: first kernel start to last kernel end
  uint64_t kernels = 0;
  uint64_t memcpys = 0, memsets = 0;
  double memcpy_s = 0, memset_s = 0;  ///< CUPTI: sums of their durations
  uint64_t dropped_records = 0;       ///< CUPTI records lost (buffers exhausted or capped)
  uint64_t untimed = 0;               ///< device events that could not be recorded or read
  /// Device time per phase, seconds (CUPTI: kernels launched by that phase's ops; events: the
  /// device intervals of its top-level records). Outside: work outside the model's forward.
  double forward_s = 0, backward_s = 0, step_s = 0, outside_s = 0;
  double unattributed_s = 0;             ///< kernels whose launching op is unknown
  std::vector<KernelStats> top_kernels;  ///< whole profile, by total time (at most 10)
};

/// One point of the memory footprint: after an allocation or free.
struct MemorySample {
  double time_s = 0;     ///< since the first sample
  int64_t bytes = 0;     ///< in use (net bytes allocated since the profile started)
  int64_t reserved = 0;  ///< caching allocator's reserved bytes (CUDA); 0 on CPU
  std::string op;        ///< the op that allocated or freed ("" between ops)
  std::string module;    ///< its module (dotted name)
  std::string phase;     ///< "forward", "backward", "recompute", "step"
};

/// Memory footprint measured through c10's memory-reporting interface.
struct MemoryStats {
  bool tracked = false;
  int64_t peak_bytes = 0;  ///< highest net bytes in use, whole profile
  std::string peak_op;     ///< where it was reached
  std::string peak_module;
  std::string peak_phase;
  /// Of `peak_bytes`: kernel workspace in use at the peak, blocks an op allocates and frees
  /// before it returns (scratch buffers, reordered copies, per-thread buffers, a composite op's
  /// temporaries). Depends on the kernels the machine runs and on their thread count.
  int64_t peak_workspace_bytes = 0;
  /// Highest net bytes held by tensors that outlive the op that allocated them (workspace left
  /// out): what a meta-device estimate can know of a real run (docs/memory.md).
  int64_t tensor_peak_bytes = 0;
  int64_t fwd_peak_bytes = 0;       ///< highest during forward ops
  int64_t final_bytes = 0;          ///< in use when the profile stopped
  int64_t peak_reserved_bytes = 0;  ///< highest reserved (CUDA caching allocator); 0 on CPU
  uint64_t allocations = 0;
  uint64_t frees = 0;
  std::vector<MemorySample> trace;  ///< the footprint, one sample per allocation or free
};

/// Work the profile observed that ran outside the model's forward (docs/training.md, "Outside the
/// model"): data preparation, `to(device)`, the loss, metrics, `clip_grad_norm_`, other models.
/// Never part of the model's forward, FLOPs or calls.
struct OutsideStats {
  uint64_t ops = 0;  ///< op calls (top level)
  uint64_t flops = 0;
  uint64_t macs = 0;
  double latency_s = 0;    ///< sum of those ops' durations, seconds
  uint64_t bytes = 0;      ///< bytes those ops moved
  uint64_t bwd_bytes = 0;  ///< bytes of their backward ops
  uint64_t bwd_flops = 0;  ///< backward of that work (the loss's nodes), measured
  uint64_t bwd_macs = 0;
  double bwd_latency_s = 0;      ///< its autograd nodes' time, seconds
  std::vector<OpStats> top_ops;  ///< by latency, at most 5
  /// Of `ops` and `flops`: ops after the model's forward that compute only from its results (an
  /// entropy of its output after the caller's data was read): the model's code or the caller's,
  /// op order cannot tell (docs/attribution.md, rule 9). Placed here by inference, marked.
  uint64_t inferred_ops = 0;
  uint64_t inferred_flops = 0;
  uint64_t inferred_bytes = 0;  ///< of `bytes`: what those inferred ops moved
  /// Of `bwd_flops` and `bwd_bytes`: the backward of those inferred ops (their autograd nodes).
  uint64_t inferred_bwd_flops = 0, inferred_bwd_bytes = 0;
  /// The other side: ops (their FLOPs and bytes) a rule gave to the model (at the ends of its
  /// forward) that may be the caller's work; `ops`, `flops` and `bytes` may be too small by up
  /// to these.
  uint64_t maybe_missing_ops = 0;
  uint64_t maybe_missing_flops = 0;
  uint64_t maybe_missing_bytes = 0;
  /// Of `ops` and `flops`: the work that ran in calls of another profiled model's built-in
  /// modules (a GAN's other model, with a profiler of its own): neither data, loss nor updates.
  uint64_t other_model_ops = 0, other_model_flops = 0;
};

/// One rank of a multi-rank job (see flopsprof/distributed.h): its own totals.
struct RankStats {
  int rank = 0;
  std::string host;
  int64_t pid = 0;
  uint64_t forward_calls = 0;  ///< forward calls of the root (the profiled steps)
  double fwd_latency_s = 0, bwd_latency_s = 0, step_latency_s = 0;
  double iteration_latency_s = 0;  ///< fwd + bwd + step
  uint64_t flops = 0, macs = 0, bwd_flops = 0;
};

/// One module across ranks: forward (and backward) latency min / mean / max and the slowest rank.
struct RankModuleStats {
  std::string name, type;
  int depth = 0;
  double fwd_min_s = 0, fwd_mean_s = 0, fwd_max_s = 0;
  double bwd_min_s = 0, bwd_mean_s = 0, bwd_max_s = 0;
  int slowest_rank = 0;    ///< by fwd + bwd latency
  uint64_t flops = 0;      ///< forward FLOPs on rank 0
  bool same_flops = true;  ///< every rank counted the same FLOPs for it
};

/// A rank slower than the median (the lower median for an even count) by more than the threshold.
struct Straggler {
  int rank = 0;
  std::string what;     ///< "iteration", or "module <name>"
  double value_s = 0;   ///< its latency
  double median_s = 0;  ///< the median across ranks
  /// The modules that account for it: (name, seconds over that module's median), largest first.
  std::vector<std::pair<std::string, double>> modules;
  double over_median = 0;  ///< value_s / median_s - 1, a fraction (0 when the median is 0)
};

/// The combined profile of a multi-rank job, gathered over c10d.
struct DistributedStats {
  int world_size = 0;
  int data_parallel_size = 0;
  std::string backend;                   ///< e.g. "gloo", as given by the job
  double threshold = 0.10;               ///< straggler threshold: fraction over the median
  std::vector<RankStats> ranks;          ///< by rank
  std::vector<RankModuleStats> modules;  ///< tree order of rank 0
  std::vector<Straggler> stragglers;
};

/// One c10d collective (a process group's work, e.g. `gloo:all_reduce`) issued from one module
/// in one phase, summed over its calls. A collective issued in a module's backward (a gradient
/// hook's all-reduce, as DistributedDataParallel does) is that backward waiting on it when the
/// hook waits for the work.
struct CollectiveStats {
  std::string name;    ///< the process group's record name, "<backend>:<collective>"
  std::string module;  ///< dotted name of the module whose work issued it ("" root),
                       ///< "(outside the model)" or "(autograd)"
  std::string phase;   ///< "forward", "backward", "step" or "outside"
  uint64_t calls = 0;
  uint64_t numel = 0;       ///< elements of their input tensors
  uint64_t bytes = 0;       ///< bytes of their input tensors
  double time_s = 0;        ///< issue to completion, summed, seconds
  uint64_t incomplete = 0;  ///< calls not completed when the profile stopped (counted to then)
};

/// flopsprof's own cost, removed from every host latency of the profile (docs/report.md,
/// "Latency correction"): the calibrated cost per record of the capture path, removed from each
/// span once per record it encloses. The `*_raw_s` fields keep what was measured.
struct LatencyCorrection {
  bool applied = false;
  std::string reason;  ///< why not, when not applied
  /// Per record, nanoseconds: inside the record's own span, and around it (inside the spans
  /// enclosing it). Ops (with an unboxed kernel, on the dispatch path), ops through the boxed
  /// fallback (the dispatch path), and module calls (an observed built-in module's record).
  double op_inner_ns = 0, op_outer_ns = 0;
  double boxed_op_inner_ns = 0, boxed_op_outer_ns = 0;
  double call_inner_ns = 0, call_outer_ns = 0;
  /// RecordFunction path: inside an op's span, per record LibTorch made of an op nested in it.
  double nested_record_ns = 0;
  /// Per record, nanoseconds, included in the figures above: what flopsprof's own code cost this
  /// profile above its calibration, timed in place on about one record half in 16 (the
  /// calibration runs that code in a tight loop, where it stays in the caches; between a
  /// program's ops it does not). Ops (dispatch path), ops through the boxed fallback, module
  /// calls; `in_place_samples`: the record halves timed (0: no extra known, as with a clock other
  /// than the TSC).
  double op_in_place_ns = 0, boxed_op_in_place_ns = 0, call_in_place_ns = 0;
  uint64_t in_place_samples = 0;
  /// flopsprof's own cost that stays in the host latencies, not measured apart ("" when none is
  /// known): CUPTI's recording of every CUDA runtime and driver API call, which linking kernels
  /// to ops needs (gpu.backend "cupti"); the cold caches of a profile started right after
  /// flopsprof's one-off work in the process (its dispatch kernels installed, its cost measured)
  /// with no call of a built-in module between them; a correction of 1% or more of the measured
  /// host time, whose records cost more between a program's small ops than calibrated
  /// (instruction cache: small ops still read high). "; " between them.
  std::string not_removed;
};

/// Everything a profile measured, per module, per op, per region and in total: counts (FLOPs,
/// MACs, bytes, parameters), latencies (flopsprof's own cost removed; the measured ones in the
/// `*_raw_s` fields), derived rates and utilisation (computed once, in aggregation: the reports
/// only format them), memory, device activity, the problems seen, and what ran (`workload`).
/// Produced by `FlopsProfiler::stop_profile()` (or read while running: `result()`),
/// `profile_exported()` and `flopsprof diff`'s reader; plain data, safe to copy. Units: FLOPs and
/// MACs as counts, bytes, seconds (`*_s`), per second (`*_per_s`); shares as fractions (0.5 =
/// 50%). `timed` false: no latency is known (every latency and rate is 0, shown as n/a).
struct ProfileResult {
  std::vector<ModuleStats> modules;  ///< tree order (pre-order); `modules[0]` is the root
  std::vector<OpStats> ops;          ///< sorted by descending latency
  uint64_t params = 0;               ///< whole model, shared parameters once
  uint64_t trainable_params = 0;
  uint64_t param_bytes = 0;
  std::array<uint64_t, static_cast<size_t>(DType::kCount)> param_bytes_by_dtype{};
  uint64_t flops = 0;  ///< forward FLOPs, each op counted once
  uint64_t macs = 0;
  FlopsByDtype flops_by_dtype{};
  /// The dtype most of the forward's FLOPs were in (kUnknown: none): the roofline's peak.
  DType dtype = DType::kUnknown;
  /// DeepSpeed's "fwd FLOPS per device": `flops` over `duration_s` (0: no time).
  double fwd_flops_per_s = 0;
  /// The other rates of the summary, FLOP/s (0 when their latency is 0): the backward's
  /// (`bwd_flops + recompute_flops` over `bwd_latency_s`), forward and backward together (their
  /// FLOPs over `duration_s + bwd_latency_s`), and the iteration's (the same FLOPs over
  /// iteration_latency_s()).
  double bwd_flops_per_s = 0, fwd_bwd_flops_per_s = 0, iter_flops_per_s = 0;
  /// `batch_size` over iteration_latency_s() (0: the batch or the latency unknown).
  double samples_per_s = 0;
  /// The convention of every FLOP and MAC count of the profile (ProfilerOptions::attention).
  AttentionConvention attention = AttentionConvention::kDense;
  /// Causal masks: of the forward's (backward's) dense count, the FLOPs on masked pairs and the
  /// FLOPs the kernels skipped; calls with a causal mask whose kernel's skipping is not known (a
  /// composite SDPA op, a CUDA kernel: what ran is taken as dense for them).
  uint64_t masked_flops = 0, skipped_flops = 0;
  uint64_t bwd_masked_flops = 0, bwd_skipped_flops = 0;
  uint64_t kernel_unknown_calls = 0;
  /// Attention calls (forward and backward) with an explicit mask tensor whose values were read
  /// (ProfilerOptions::read_attention_masks: the pairs it discards are in `masked_flops`), and
  /// those counted dense (not read: the option off, or values it cannot read).
  uint64_t attention_masks_read = 0, attention_masks_unread = 0;
  /// false: the profile has no time, as nothing ran (an exported program profiled from its
  /// graph, flopsprof/exported.h): every latency, achieved rate, share and memory figure is
  /// absent (0 here; the reports say n/a, the JSON null or omits them).
  bool timed = true;
  double duration_s = 0;  ///< forward latency of the root module, seconds
  /// `duration_s`, `bwd_latency_s` and `step_latency_s` as measured (LatencyCorrection).
  double duration_raw_s = 0, bwd_latency_raw_s = 0, step_latency_raw_s = 0;
  LatencyCorrection correction;  ///< what was removed from the host latencies
  double no_formula_s = 0;       ///< forward time spent in ops without a formula, seconds
  /// Ops without a formula: forward op names and their calls; names in the other phases (or
  /// outside the model). From `ops`.
  uint64_t no_formula_ops = 0, no_formula_calls = 0, no_formula_ops_elsewhere = 0;
  /// Coverage as fractions: the forward time in ops without a formula (of duration_s; 0 without
  /// time); the forward FLOPs and bytes placed by inference (the root's, of flops and fwd_bytes)
  /// and their backward's FLOPs (of bwd_flops).
  double no_formula_share = 0, inferred_flops_share = 0, inferred_bytes_share = 0,
         inferred_bwd_flops_share = 0;
  uint64_t threads = 0;               ///< threads on which ops were observed
  uint64_t op_events = 0;             ///< op calls observed (all, nested ones included)
  std::string timer;                  ///< name of the timing backend
  std::vector<std::string> problems;  ///< issues seen while profiling, each reported once

  // Training (present when backward or a step scope was observed).
  bool has_backward = false;
  bool has_step = false;
  uint64_t bwd_flops = 0;  ///< measured backward FLOPs (recompute excluded)
  uint64_t bwd_macs = 0;
  double bwd_latency_s = 0;  ///< spans of the backward passes, seconds
  /// The backward passes that ran a node of this model, and of those the ones that also ran
  /// another profiled model's nodes (a GAN's generator loss through the discriminator): such a
  /// pass counts in `bwd_latency_s` with this model's nodes' time only, not its span.
  uint64_t bwd_passes = 0, bwd_shared_passes = 0;
  uint64_t recompute_flops = 0;  ///< forward ops re-run inside backward
  uint64_t recompute_macs = 0;
  uint64_t autograd_flops = 0;    ///< backward ops linked to no forward op ("(autograd)")
  double autograd_latency_s = 0;  ///< time of autograd nodes linked to no forward op
  uint64_t step_flops = 0;        ///< ops inside step scopes (the optimizer step)
  /// Forward calls of the root beyond the backward passes (an evaluation inside a training
  /// window): DeepSpeed's 2 x forward estimate counts their FLOPs too, and the report says so.
  uint64_t forwards_without_backward = 0;
  double step_latency_s = 0;  ///< sum of step scopes, seconds

  // Bytes moved (docs/report.md, "Bytes moved"), per phase as FLOPs: each op's once.
  uint64_t fwd_bytes = 0, fwd_bytes_read = 0, fwd_bytes_written = 0;  ///< the model's forward
  /// Of the forward's, a KV cache's (docs/report.md, "KV cache"): keys and values the attention
  /// ops read (the cache, when decoding with one), and the cache's writes.
  uint64_t kv_read_bytes = 0, kv_write_bytes = 0;
  /// The model's forward and backward against the machine's ceilings, as ModuleStats::mfu, hfu
  /// and mbu, over the forward and backward time (`duration_s + bwd_latency_s`, or the device's).
  double mfu = 0, hfu = 0, mbu = 0;
  /// The ratio above (mfu; hfu; mbu) is above 1 by more than kCeilingTolerance: more than the
  /// peak it is measured against. mbu counts bytes against the DRAM bandwidth, so work whose bytes
  /// sit in a cache exceeds it (its roofline point is against its level's ceiling); mfu above 1
  /// means a peak measured too low. Shown with "!" in the text, never plain.
  bool mfu_above_peak = false, hfu_above_peak = false, mbu_above_peak = false;
  uint64_t bwd_bytes = 0, bwd_bytes_read = 0, bwd_bytes_written = 0;  ///< recompute excluded
  uint64_t recompute_bytes = 0;
  uint64_t autograd_bytes = 0;  ///< backward ops linked to no forward op
  uint64_t step_bytes = 0, step_bytes_read = 0, step_bytes_written = 0;
  /// Op calls whose written bytes no rule derives (counted as reads only, or from allocations
  /// with memory tracking); the op table says which.
  uint64_t bytes_written_unknown_calls = 0;
  /// The machine's ceilings (flopsprof/roofline.h): measured, cached, given or from the device;
  /// their sources empty when unknown (ProfilerOptions::roofline.enabled false, a meta profile).
  MachinePeaks machine;
  /// The model's forward, backward (recompute included) and optimizer step on the roofline
  /// (the step over its latency).
  RooflinePoint roofline, bwd_roofline, step_roofline;
  /// The forward's and the backward's achieved FLOP/s and bytes/s (roofline, bwd_roofline) over
  /// the peak FLOP/s of `dtype` (fp32 when unknown) and the DRAM bandwidth, as fractions; 0 where
  /// that peak is unknown.
  double fwd_flops_of_peak = 0, fwd_bytes_of_peak = 0, bwd_flops_of_peak = 0, bwd_bytes_of_peak = 0;

  /// The root's forward latency per call (iteration), backward per pass, step per step; samples
  /// 0 with one only.
  LatencySpread fwd_spread, bwd_spread, step_spread;
  /// What ran: inputs, threads, versions, device (compared by flopsprof/diff.h).
  Workload workload;
  /// The regions the caller named (FlopsProfiler::region()), in the order first opened; each
  /// module's share in ModuleStats::regions.
  std::vector<RegionStats> regions;
  /// Modules summed by depth and type: by depth, then in the order each type first appears in
  /// the tree at that depth.
  std::vector<ModuleTypeStats> module_types;

  OutsideStats outside;  ///< work observed outside the model's forward
  /// c10d collectives issued while profiling, per module and phase (empty without any).
  std::vector<CollectiveStats> collectives;

  MemoryStats memory;  ///< filled when ProfilerOptions::track_memory
  GpuStats gpu;        ///< filled by the CUPTI backend
  /// Every rank's profile combined, after flopsprof::gather_profile() (rank 0, or all ranks).
  std::optional<DistributedStats> distributed;

  // Given by the user (ProfilerOptions); shown in the summary as DeepSpeed does.
  int64_t batch_size = 0;  ///< per device; 0: unknown
  int world_size = 1;
  int data_parallel_size = 1;
  int model_parallel_size = 1;

  /// A forward count (`flops` of the profile or a module, with its `masked` and `skipped`) in the
  /// dense convention, the causal one, and as the kernels ran it.
  uint64_t dense_flops(uint64_t counted, uint64_t masked) const {
    return attention == AttentionConvention::kCausal ? counted + masked : counted;
  }
  uint64_t causal_flops(uint64_t counted, uint64_t masked) const {
    return dense_flops(counted, masked) - masked;
  }
  uint64_t kernel_flops(uint64_t counted, uint64_t masked, uint64_t skipped) const {
    return dense_flops(counted, masked) - skipped;
  }
  /// fwd + bwd + step latency, seconds.
  double iteration_latency_s() const { return duration_s + bwd_latency_s + step_latency_s; }
  /// DeepSpeed's backward estimate: 2 x forward FLOPs, plus recomputation (saturates at
  /// UINT64_MAX instead of wrapping).
  uint64_t estimated_bwd_flops() const {
    if (flops > UINT64_MAX / 2) return UINT64_MAX;
    const uint64_t twice = 2 * flops;
    return recompute_flops > UINT64_MAX - twice ? UINT64_MAX : twice + recompute_flops;
  }
};

}  // namespace flopsprof
