// Meta device support: missing Meta kernels (registered only where LibTorch has none) and an
// allocator for meta tensors that reports their sizes to c10's memory reporting.
#include "flopsprof/meta.h"

#include <atomic>
#include <mutex>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/core/Allocator.h>
#include <torch/library.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <climits>

#include "capture/interceptor.h"
#include "flopsprof/error.h"

namespace flopsprof {
namespace {

using Stack = torch::jit::Stack;

// ---- The meta allocator: no memory, but sizes and lifetimes reported like real allocations.

std::atomic<int64_t> g_meta_allocated{0};

// Sizes past 2^63 - 1 bytes (an estimate of an absurd shape) saturate: the total stays a lower
// bound and the aggregation reports the saturation as a problem, never undefined behaviour.
void report(void* block, int64_t bytes) {
  int64_t before = g_meta_allocated.load(std::memory_order_relaxed), total;
  do {
    if (__builtin_add_overflow(before, bytes, &total)) total = bytes > 0 ? INT64_MAX : INT64_MIN;
  } while (!g_meta_allocated.compare_exchange_weak(before, total, std::memory_order_relaxed));
  c10::reportMemoryUsageToProfiler(block, bytes, total, 0, c10::Device(c10::DeviceType::Meta));
}

int64_t clamp_bytes(size_t n) {
  return n > static_cast<size_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(n);
}

// A meta tensor's context (never null, so the deleter runs on free): its size, and an address
// reported as the block's, so that the aggregation can match the free with its allocation (kernel
// workspace is told apart that way) although meta tensors have no data.
struct MetaBlock {
  int64_t bytes;
};

void meta_free(void* ctx) {
  auto* block = static_cast<MetaBlock*>(ctx);
  if (c10::memoryProfilingEnabled()) report(block, -block->bytes);
  delete block;
}

// LibTorch 2.3 made Allocator::allocate non-const and added the pure virtual copy_data.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
#define FLOPSPROF_PRIVATE_ALLOCATE_CONST
#else
#define FLOPSPROF_PRIVATE_ALLOCATE_CONST const
#endif

struct ReportingMetaAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t n) FLOPSPROF_PRIVATE_ALLOCATE_CONST override {
    auto* block = new MetaBlock{clamp_bytes(n)};
    if (c10::memoryProfilingEnabled()) report(block, block->bytes);
    return {nullptr, block, &meta_free, c10::Device(c10::DeviceType::Meta)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
  void copy_data(void*, const void*, std::size_t) const override {}
#endif
};

// ---- Boxed kernels (boxed, so one definition fits int[] and SymInt[] schemas alike).

std::vector<int64_t> ints(const c10::IValue& v) {
  std::vector<int64_t> out;
  if (v.isInt()) return {v.toInt()};
  for (const c10::IValue& x : v.toListRef()) {
#if TORCH_VERSION_MAJOR >= 2
    out.push_back(x.isInt() ? x.toInt() : x.toSymInt().guard_int(__FILE__, __LINE__));
#else
    out.push_back(x.toInt());
#endif
  }
  return out;
}

int64_t one_int(const c10::IValue& v) {
#if TORCH_VERSION_MAJOR >= 2
  if (v.isSymInt()) return v.toSymInt().guard_int(__FILE__, __LINE__);
#endif
  return v.toInt();
}

at::Tensor empty_meta(at::IntArrayRef sizes, const at::Tensor& like) {
  return at::empty(sizes, like.options().device(c10::kMeta));
}
at::Tensor maybe(bool wanted, const at::Tensor& like) {
  return wanted ? at::empty_like(like) : at::Tensor();
}
int64_t at_or(const std::vector<int64_t>& v, size_t i, int64_t fallback) {
  return v.empty() ? fallback : v.size() == 1 ? v[0] : (i < v.size() ? v[i] : fallback);
}

// relu(self)
void relu(const c10::OperatorHandle&, Stack* s) {
  at::Tensor self = torch::jit::pop(*s).toTensor();
  torch::jit::push(*s, at::empty_like(self));
}

// index_select(self, dim, index)
void index_select(const c10::OperatorHandle&, Stack* s) {
  auto args = torch::jit::pop(*s, 3);
  at::Tensor self = args[0].toTensor();
  int64_t dim = at::maybe_wrap_dim(args[1].toInt(), self.dim());
  std::vector<int64_t> sizes = self.sizes().vec();
  if (!sizes.empty()) sizes[dim] = args[2].toTensor().numel();
  torch::jit::push(*s, empty_meta(sizes, self));
}

// convolution_overrideable(input, weight, bias, stride, padding, dilation, transposed,
//                          output_padding, groups)
void convolution(const c10::OperatorHandle&, Stack* s) {
  auto a = torch::jit::pop(*s, 9);
  at::Tensor x = a[0].toTensor(), w = a[1].toTensor();
  auto stride = ints(a[3]), padding = ints(a[4]), dilation = ints(a[5]), out_pad = ints(a[7]);
  bool transposed = a[6].toBool();
  int64_t groups = one_int(a[8]);
  const size_t spatial = static_cast<size_t>(w.dim() - 2);
  const bool batched = x.dim() == w.dim();
  std::vector<int64_t> out;
  if (batched) out.push_back(x.size(0));
  out.push_back(transposed ? w.size(1) * groups : w.size(0));
  for (size_t d = 0; d < spatial; ++d) {
    int64_t in = x.size(x.dim() - static_cast<int64_t>(spatial) + static_cast<int64_t>(d));
    int64_t k = w.size(2 + static_cast<int64_t>(d));
    int64_t st = at_or(stride, d, 1), p = at_or(padding, d, 0), dl = at_or(dilation, d, 1);
    out.push_back(transposed ? (in - 1) * st - 2 * p + dl * (k - 1) + at_or(out_pad, d, 0) + 1
                             : (in + 2 * p - dl * (k - 1) - 1) / st + 1);
  }
  at::Tensor output = empty_meta(out, x);
  // The CPU backend's transient workspace: an im2col column buffer of N x (Cin/groups * prod(k))
  // x prod(out spatial) elements (1x1 stride-1 unpadded convolutions need none). Allocated and
  // freed here so that memory estimates on meta include it.
  bool pointwise = !transposed;
  int64_t cols = (batched ? x.size(0) : 1) * w.size(1);
  for (size_t d = 0; d < spatial; ++d) {
    int64_t k = w.size(2 + static_cast<int64_t>(d));
    cols *= k * out[out.size() - spatial + d];
    pointwise = pointwise && k == 1 && at_or(stride, d, 1) == 1 && at_or(padding, d, 0) == 0;
  }
  if (!pointwise && !transposed) empty_meta({cols}, x);  // freed at once
  torch::jit::push(*s, output);
}

// convolution_backward_overrideable(grad_output, input, weight, stride, padding, dilation,
//                                   transposed, output_padding, groups, output_mask)
void convolution_backward(const c10::OperatorHandle&, Stack* s) {
  auto a = torch::jit::pop(*s, 10);
  at::Tensor grad = a[0].toTensor(), x = a[1].toTensor(), w = a[2].toTensor();
  auto mask = a[9].toBoolList();
  torch::jit::push(*s, maybe(mask.get(0), x), maybe(mask.get(1), w),
                   mask.get(2) ? empty_meta({grad.size(1)}, grad) : at::Tensor());
}

// native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)
void native_batch_norm(const c10::OperatorHandle&, Stack* s) {
  auto a = torch::jit::pop(*s, 8);
  at::Tensor x = a[0].toTensor();
  const int64_t c = x.dim() > 1 ? x.size(1) : 1;
  torch::jit::push(*s, at::empty_like(x), empty_meta({c}, x), empty_meta({c}, x));
}

// native_batch_norm_backward(grad_out, input, weight, running_mean, running_var, save_mean,
//                            save_invstd, train, eps, output_mask)
void native_batch_norm_backward(const c10::OperatorHandle&, Stack* s) {
  auto a = torch::jit::pop(*s, 10);
  at::Tensor x = a[1].toTensor();
  auto mask = a[9].toBoolList();
  const int64_t c = x.dim() > 1 ? x.size(1) : 1;
  torch::jit::push(*s, maybe(mask.get(0), x), mask.get(1) ? empty_meta({c}, x) : at::Tensor(),
                   mask.get(2) ? empty_meta({c}, x) : at::Tensor());
}

// native_layer_norm(input, normalized_shape, weight, bias, eps) -> (out, mean, rstd)
void native_layer_norm(const c10::OperatorHandle&, Stack* s) {
  auto a = torch::jit::pop(*s, 5);
  at::Tensor x = a[0].toTensor();
  const size_t axis = static_cast<size_t>(x.dim()) - ints(a[1]).size();
  std::vector<int64_t> stat = x.sizes().vec();
  for (size_t d = axis; d < stat.size(); ++d) stat[d] = 1;
  torch::jit::push(*s, at::empty_like(x), empty_meta(stat, x), empty_meta(stat, x));
}

// native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias, mask)
void native_layer_norm_backward(const c10::OperatorHandle&, Stack* s) {
  auto a = torch::jit::pop(*s, 8);
  at::Tensor x = a[1].toTensor();
  auto mask = a[7].toBoolList();
  at::Tensor w = a[5].isTensor() ? a[5].toTensor() : at::Tensor();
  at::Tensor b = a[6].isTensor() ? a[6].toTensor() : at::Tensor();
  torch::jit::push(*s, maybe(mask.get(0), x),
                   mask.get(1) && w.defined() ? at::empty_like(w) : at::Tensor(),
                   mask.get(2) && b.defined() ? at::empty_like(b) : at::Tensor());
}

// embedding_dense_backward(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq)
void embedding_dense_backward(const c10::OperatorHandle&, Stack* s) {
  auto a = torch::jit::pop(*s, 5);
  at::Tensor grad = a[0].toTensor();
  torch::jit::push(*s, empty_meta({one_int(a[2]), grad.size(-1)}, grad));
}

// equal(self, other): values do not exist on meta; compares shapes and dtypes.
void equal(const c10::OperatorHandle&, Stack* s) {
  auto a = torch::jit::pop(*s, 2);
  at::Tensor x = a[0].toTensor(), y = a[1].toTensor();
  torch::jit::push(*s, x.sizes() == y.sizes() && x.scalar_type() == y.scalar_type());
}

// _adaptive_avg_pool2d(self, output_size)
void adaptive_avg_pool2d(const c10::OperatorHandle&, Stack* s) {
  auto a = torch::jit::pop(*s, 2);
  at::Tensor x = a[0].toTensor();
  std::vector<int64_t> out = x.sizes().vec();
  auto size = ints(a[1]);
  TORCH_CHECK(out.size() >= 2 && !size.empty(),
              "adaptive_avg_pool2d (flopsprof meta kernel): expected an input of rank >= 2 and an "
              "output size, got rank ",
              out.size());
  out[out.size() - 2] = size[0];
  out[out.size() - 1] = size.size() > 1 ? size[1] : size[0];
  torch::jit::push(*s, empty_meta(out, x));
}

// _adaptive_avg_pool2d_backward(grad_output, self)
void adaptive_avg_pool2d_backward(const c10::OperatorHandle&, Stack* s) {
  auto a = torch::jit::pop(*s, 2);
  torch::jit::push(*s, at::empty_like(a[1].toTensor()));
}

// Registers `fn` as the Meta kernel of aten::`name` unless the dispatcher already has one.
template <void (*fn)(const c10::OperatorHandle&, Stack*)>
void add(torch::Library& lib, const char* name) {
  auto op = c10::Dispatcher::singleton().findSchema({std::string("aten::") + name, ""});
  if (!op || op->hasKernelForDispatchKey(c10::DispatchKey::Meta)) return;  // never override
  lib.impl(name, torch::CppFunction::makeFromBoxedFunction<fn>());
}

}  // namespace

void enable_meta_support() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Kept for the life of the process: the registrations live as long as the Library object.
    // LeakSanitizer reports it once per process (about 2 kB): intended, not a leak that grows.
    auto& lib = *new torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::Meta, __FILE__,
                                    __LINE__);
    add<relu>(lib, "relu");
    add<index_select>(lib, "index_select");
    add<convolution>(lib, "convolution_overrideable");
    add<convolution_backward>(lib, "convolution_backward_overrideable");
    add<native_batch_norm>(lib, "native_batch_norm");
    add<native_batch_norm_backward>(lib, "native_batch_norm_backward");
    add<native_layer_norm>(lib, "native_layer_norm");
    add<native_layer_norm_backward>(lib, "native_layer_norm_backward");
    add<embedding_dense_backward>(lib, "embedding_dense_backward");
    add<equal>(lib, "equal");
    add<adaptive_avg_pool2d>(lib, "_adaptive_avg_pool2d");
    add<adaptive_avg_pool2d_backward>(lib, "_adaptive_avg_pool2d_backward");
    static ReportingMetaAllocator allocator;
    c10::SetAllocator(c10::DeviceType::Meta, &allocator);
  });
}

void to_meta(torch::nn::Module& module) {
  enable_meta_support();
  detail::Unobserved no_record;
  torch::NoGradGuard no_grad;
  auto swap = [](const at::Tensor& t) {
    if (!t.defined() || t.is_meta()) return;
    if (t.is_sparse())
      throw Error("to_meta: sparse parameters or buffers are not supported on meta");
    t.unsafeGetTensorImpl()->shallow_copy_from(t.detach().to(c10::kMeta).getIntrusivePtr());
  };
  for (const auto& p : module.parameters()) swap(p);
  for (const auto& b : module.buffers()) swap(b);
}

}  // namespace flopsprof
