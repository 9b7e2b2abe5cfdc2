// Calls of LibTorch's built-in modules, observed at their forward functions.
//
// `torch::nn::Module` has no forward hooks, but the forwards of most built-in modules
// (`ReLUImpl::forward`, `Conv2dImpl::forward`, `ReflectionPad2dImpl`'s, `FunctionalImpl`'s, ...)
// are exported functions of libtorch, which a program (and libtorch itself) calls through its
// dynamic symbol table. libflopsprof defines the same symbols; when it precedes libtorch in the
// program's search order, every call lands here first: while a profile runs, it opens a scope
// record of the module (the same record FLOPSPROF_MODULE() writes, without hooks or user scope)
// and calls libtorch's own definition, found with dlsym(RTLD_NEXT). That is evidence of each call
// of a built-in module, with its instance, at no cost per op. Without a profile a call costs two
// relaxed loads (the second for calibration.h's g_setup_unwarmed). Forwards defined inline in
// headers (BatchNorm, InstanceNorm, Sequential) or with other signatures are not observed;
// attribution falls back to its rules for them.
//
// Only the signatures `Tensor forward(const Tensor&)` and `Tensor forward(Tensor)` are wrapped, and
// the transposed convolutions' `forward(const Tensor&, const optional<IntArrayRef>& output_size)`;
// each entry's mangled name is checked at run time (dlsym(RTLD_DEFAULT) must find this
// definition), so a LibTorch whose symbol differs simply leaves that type unobserved.
#include "capture/builtin_calls.h"

#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <typeindex>
#include <unordered_set>

#include <torch/nn.h>
#include <torch/optim.h>
#include <torch/version.h>

#include "capture/calibration.h"
#include "capture/observer.h"
#include "flopsprof/error.h"
#include "flopsprof/scope.h"

// ZeroPad2d's forward is its own in LibTorch 1.x; 2.x adds ZeroPad1d and ZeroPad3d and declares
// the forward in a template base (ZeroPadImpl<D, Derived>), whose instantiations libtorch exports.
#if TORCH_VERSION_MAJOR >= 2
#define FLOPSPROF_ZERO_PADS(X)                                                       \
  X("_ZN5torch2nn11ZeroPadImplILm1ENS0_13ZeroPad1dImplEE7forwardERKN2at6TensorE", 0, \
    torch::nn::ZeroPad1dImpl, torch::nn::ZeroPadImpl<1, torch::nn::ZeroPad1dImpl>)   \
  X("_ZN5torch2nn11ZeroPadImplILm2ENS0_13ZeroPad2dImplEE7forwardERKN2at6TensorE", 0, \
    torch::nn::ZeroPad2dImpl, torch::nn::ZeroPadImpl<2, torch::nn::ZeroPad2dImpl>)   \
  X("_ZN5torch2nn11ZeroPadImplILm3ENS0_13ZeroPad3dImplEE7forwardERKN2at6TensorE", 0, \
    torch::nn::ZeroPad3dImpl, torch::nn::ZeroPadImpl<3, torch::nn::ZeroPad3dImpl>)
#else
#define FLOPSPROF_ZERO_PADS(X)                                                         \
  X("_ZN5torch2nn13ZeroPad2dImpl7forwardERKN2at6TensorE", 0, torch::nn::ZeroPad2dImpl, \
    torch::nn::ZeroPad2dImpl)
#endif

// The transposed convolutions' forward(input, output_size), X(mangled name, type, tag): the
// optional mangles as c10::optional's in LibTorch 1.x and early 2.x, as std::optional's once
// c10::optional became its alias (2.2 and later); both are listed for 2.x, and only the one
// libtorch defines is bound (bound_here).
#define FLOPSPROF_TRANSPOSED_CONVS_C10(X)                                           \
  X("_ZN5torch2nn19ConvTranspose1dImpl7forwardERKN2at6TensorERKN3c108optionalINS6_" \
    "8ArrayRefIlEEEE",                                                              \
    torch::nn::ConvTranspose1dImpl, c10_1)                                          \
  X("_ZN5torch2nn19ConvTranspose2dImpl7forwardERKN2at6TensorERKN3c108optionalINS6_" \
    "8ArrayRefIlEEEE",                                                              \
    torch::nn::ConvTranspose2dImpl, c10_2)                                          \
  X("_ZN5torch2nn19ConvTranspose3dImpl7forwardERKN2at6TensorERKN3c108optionalINS6_" \
    "8ArrayRefIlEEEE",                                                              \
    torch::nn::ConvTranspose3dImpl, c10_3)
#if TORCH_VERSION_MAJOR >= 2
#define FLOPSPROF_TRANSPOSED_CONVS(X)                                                            \
  FLOPSPROF_TRANSPOSED_CONVS_C10(X)                                                              \
  X("_ZN5torch2nn19ConvTranspose1dImpl7forwardERKN2at6TensorERKSt8optionalIN3c108ArrayRefIlEEE", \
    torch::nn::ConvTranspose1dImpl, std_1)                                                       \
  X("_ZN5torch2nn19ConvTranspose2dImpl7forwardERKN2at6TensorERKSt8optionalIN3c108ArrayRefIlEEE", \
    torch::nn::ConvTranspose2dImpl, std_2)                                                       \
  X("_ZN5torch2nn19ConvTranspose3dImpl7forwardERKN2at6TensorERKSt8optionalIN3c108ArrayRefIlEEE", \
    torch::nn::ConvTranspose3dImpl, std_3)
#else
#define FLOPSPROF_TRANSPOSED_CONVS(X) FLOPSPROF_TRANSPOSED_CONVS_C10(X)
#endif

// X(mangled name, by value?, the module type, the type declaring forward...)
#define FLOPSPROF_BUILTIN_FORWARDS(X)                                                              \
  X("_ZN5torch2nn10Conv1dImpl7forwardERKN2at6TensorE", 0, torch::nn::Conv1dImpl,                   \
    torch::nn::Conv1dImpl)                                                                         \
  X("_ZN5torch2nn10Conv2dImpl7forwardERKN2at6TensorE", 0, torch::nn::Conv2dImpl,                   \
    torch::nn::Conv2dImpl)                                                                         \
  X("_ZN5torch2nn10Conv3dImpl7forwardERKN2at6TensorE", 0, torch::nn::Conv3dImpl,                   \
    torch::nn::Conv3dImpl)                                                                         \
  X("_ZN5torch2nn10LinearImpl7forwardERKN2at6TensorE", 0, torch::nn::LinearImpl,                   \
    torch::nn::LinearImpl)                                                                         \
  X("_ZN5torch2nn10UnfoldImpl7forwardERKN2at6TensorE", 0, torch::nn::UnfoldImpl,                   \
    torch::nn::UnfoldImpl)                                                                         \
  X("_ZN5torch2nn11DropoutImpl7forwardEN2at6TensorE", 1, torch::nn::DropoutImpl,                   \
    torch::nn::DropoutImpl)                                                                        \
  X("_ZN5torch2nn11FlattenImpl7forwardERKN2at6TensorE", 0, torch::nn::FlattenImpl,                 \
    torch::nn::FlattenImpl)                                                                        \
  X("_ZN5torch2nn11SigmoidImpl7forwardERKN2at6TensorE", 0, torch::nn::SigmoidImpl,                 \
    torch::nn::SigmoidImpl)                                                                        \
  X("_ZN5torch2nn11SoftmaxImpl7forwardERKN2at6TensorE", 0, torch::nn::SoftmaxImpl,                 \
    torch::nn::SoftmaxImpl)                                                                        \
  X("_ZN5torch2nn11SoftminImpl7forwardERKN2at6TensorE", 0, torch::nn::SoftminImpl,                 \
    torch::nn::SoftminImpl)                                                                        \
  X("_ZN5torch2nn12HardtanhImpl7forwardEN2at6TensorE", 1, torch::nn::HardtanhImpl,                 \
    torch::nn::HardtanhImpl)                                                                       \
  X("_ZN5torch2nn12IdentityImpl7forwardERKN2at6TensorE", 0, torch::nn::IdentityImpl,               \
    torch::nn::IdentityImpl)                                                                       \
  X("_ZN5torch2nn12LPPool1dImpl7forwardERKN2at6TensorE", 0, torch::nn::LPPool1dImpl,               \
    torch::nn::LPPool1dImpl)                                                                       \
  X("_ZN5torch2nn12LPPool2dImpl7forwardERKN2at6TensorE", 0, torch::nn::LPPool2dImpl,               \
    torch::nn::LPPool2dImpl)                                                                       \
  X("_ZN5torch2nn12SoftplusImpl7forwardERKN2at6TensorE", 0, torch::nn::SoftplusImpl,               \
    torch::nn::SoftplusImpl)                                                                       \
  X("_ZN5torch2nn12SoftsignImpl7forwardERKN2at6TensorE", 0, torch::nn::SoftsignImpl,               \
    torch::nn::SoftsignImpl)                                                                       \
  X("_ZN5torch2nn12UpsampleImpl7forwardERKN2at6TensorE", 0, torch::nn::UpsampleImpl,               \
    torch::nn::UpsampleImpl)                                                                       \
  X("_ZN5torch2nn13AvgPool1dImpl7forwardERKN2at6TensorE", 0, torch::nn::AvgPool1dImpl,             \
    torch::nn::AvgPool1dImpl)                                                                      \
  X("_ZN5torch2nn13AvgPool2dImpl7forwardERKN2at6TensorE", 0, torch::nn::AvgPool2dImpl,             \
    torch::nn::AvgPool2dImpl)                                                                      \
  X("_ZN5torch2nn13AvgPool3dImpl7forwardERKN2at6TensorE", 0, torch::nn::AvgPool3dImpl,             \
    torch::nn::AvgPool3dImpl)                                                                      \
  X("_ZN5torch2nn13Dropout2dImpl7forwardEN2at6TensorE", 1, torch::nn::Dropout2dImpl,               \
    torch::nn::Dropout2dImpl)                                                                      \
  X("_ZN5torch2nn13Dropout3dImpl7forwardEN2at6TensorE", 1, torch::nn::Dropout3dImpl,               \
    torch::nn::Dropout3dImpl)                                                                      \
  X("_ZN5torch2nn13EmbeddingImpl7forwardERKN2at6TensorE", 0, torch::nn::EmbeddingImpl,             \
    torch::nn::EmbeddingImpl)                                                                      \
  X("_ZN5torch2nn13GroupNormImpl7forwardERKN2at6TensorE", 0, torch::nn::GroupNormImpl,             \
    torch::nn::GroupNormImpl)                                                                      \
  X("_ZN5torch2nn13LayerNormImpl7forwardERKN2at6TensorE", 0, torch::nn::LayerNormImpl,             \
    torch::nn::LayerNormImpl)                                                                      \
  X("_ZN5torch2nn13LeakyReLUImpl7forwardEN2at6TensorE", 1, torch::nn::LeakyReLUImpl,               \
    torch::nn::LeakyReLUImpl)                                                                      \
  X("_ZN5torch2nn13MaxPool1dImpl7forwardERKN2at6TensorE", 0, torch::nn::MaxPool1dImpl,             \
    torch::nn::MaxPool1dImpl)                                                                      \
  X("_ZN5torch2nn13MaxPool2dImpl7forwardERKN2at6TensorE", 0, torch::nn::MaxPool2dImpl,             \
    torch::nn::MaxPool2dImpl)                                                                      \
  X("_ZN5torch2nn13MaxPool3dImpl7forwardERKN2at6TensorE", 0, torch::nn::MaxPool3dImpl,             \
    torch::nn::MaxPool3dImpl)                                                                      \
  X("_ZN5torch2nn13Softmax2dImpl7forwardERKN2at6TensorE", 0, torch::nn::Softmax2dImpl,             \
    torch::nn::Softmax2dImpl)                                                                      \
  X("_ZN5torch2nn13ThresholdImpl7forwardEN2at6TensorE", 1, torch::nn::ThresholdImpl,               \
    torch::nn::ThresholdImpl)                                                                      \
  X("_ZN5torch2nn13UnflattenImpl7forwardERKN2at6TensorE", 0, torch::nn::UnflattenImpl,             \
    torch::nn::UnflattenImpl)                                                                      \
  FLOPSPROF_ZERO_PADS(X)                                                                           \
  X("_ZN5torch2nn14FunctionalImpl7forwardEN2at6TensorE", 1, torch::nn::FunctionalImpl,             \
    torch::nn::FunctionalImpl)                                                                     \
  X("_ZN5torch2nn14HardshrinkImpl7forwardERKN2at6TensorE", 0, torch::nn::HardshrinkImpl,           \
    torch::nn::HardshrinkImpl)                                                                     \
  X("_ZN5torch2nn14LogSigmoidImpl7forwardERKN2at6TensorE", 0, torch::nn::LogSigmoidImpl,           \
    torch::nn::LogSigmoidImpl)                                                                     \
  X("_ZN5torch2nn14LogSoftmaxImpl7forwardERKN2at6TensorE", 0, torch::nn::LogSoftmaxImpl,           \
    torch::nn::LogSoftmaxImpl)                                                                     \
  X("_ZN5torch2nn14SoftshrinkImpl7forwardERKN2at6TensorE", 0, torch::nn::SoftshrinkImpl,           \
    torch::nn::SoftshrinkImpl)                                                                     \
  X("_ZN5torch2nn14TanhshrinkImpl7forwardERKN2at6TensorE", 0, torch::nn::TanhshrinkImpl,           \
    torch::nn::TanhshrinkImpl)                                                                     \
  X("_ZN5torch2nn15ConstantPadImplILm1ENS0_17ConstantPad1dImplEE7forwardERKN2at6TensorE", 0,       \
    torch::nn::ConstantPad1dImpl, torch::nn::ConstantPadImpl<1, torch::nn::ConstantPad1dImpl>)     \
  X("_ZN5torch2nn15ConstantPadImplILm2ENS0_17ConstantPad2dImplEE7forwardERKN2at6TensorE", 0,       \
    torch::nn::ConstantPad2dImpl, torch::nn::ConstantPadImpl<2, torch::nn::ConstantPad2dImpl>)     \
  X("_ZN5torch2nn15ConstantPadImplILm3ENS0_17ConstantPad3dImplEE7forwardERKN2at6TensorE", 0,       \
    torch::nn::ConstantPad3dImpl, torch::nn::ConstantPadImpl<3, torch::nn::ConstantPad3dImpl>)     \
  X("_ZN5torch2nn16AlphaDropoutImpl7forwardERKN2at6TensorE", 0, torch::nn::AlphaDropoutImpl,       \
    torch::nn::AlphaDropoutImpl)                                                                   \
  X("_ZN5torch2nn16PixelShuffleImpl7forwardERKN2at6TensorE", 0, torch::nn::PixelShuffleImpl,       \
    torch::nn::PixelShuffleImpl)                                                                   \
  X("_ZN5torch2nn17CrossMapLRN2dImpl7forwardERKN2at6TensorE", 0, torch::nn::CrossMapLRN2dImpl,     \
    torch::nn::CrossMapLRN2dImpl)                                                                  \
  X("_ZN5torch2nn17ReflectionPadImplILm1ENS0_19ReflectionPad1dImplEE7forwardERKN2at6TensorE", 0,   \
    torch::nn::ReflectionPad1dImpl,                                                                \
    torch::nn::ReflectionPadImpl<1, torch::nn::ReflectionPad1dImpl>)                               \
  X("_ZN5torch2nn17ReflectionPadImplILm2ENS0_19ReflectionPad2dImplEE7forwardERKN2at6TensorE", 0,   \
    torch::nn::ReflectionPad2dImpl,                                                                \
    torch::nn::ReflectionPadImpl<2, torch::nn::ReflectionPad2dImpl>)                               \
  X("_ZN5torch2nn17ReflectionPadImplILm3ENS0_19ReflectionPad3dImplEE7forwardERKN2at6TensorE", 0,   \
    torch::nn::ReflectionPad3dImpl,                                                                \
    torch::nn::ReflectionPadImpl<3, torch::nn::ReflectionPad3dImpl>)                               \
  X("_ZN5torch2nn18PixelUnshuffleImpl7forwardERKN2at6TensorE", 0, torch::nn::PixelUnshuffleImpl,   \
    torch::nn::PixelUnshuffleImpl)                                                                 \
  X("_ZN5torch2nn18ReplicationPadImplILm1ENS0_20ReplicationPad1dImplEE7forwardERKN2at6TensorE", 0, \
    torch::nn::ReplicationPad1dImpl,                                                               \
    torch::nn::ReplicationPadImpl<1, torch::nn::ReplicationPad1dImpl>)                             \
  X("_ZN5torch2nn18ReplicationPadImplILm2ENS0_20ReplicationPad2dImplEE7forwardERKN2at6TensorE", 0, \
    torch::nn::ReplicationPad2dImpl,                                                               \
    torch::nn::ReplicationPadImpl<2, torch::nn::ReplicationPad2dImpl>)                             \
  X("_ZN5torch2nn18ReplicationPadImplILm3ENS0_20ReplicationPad3dImplEE7forwardERKN2at6TensorE", 0, \
    torch::nn::ReplicationPad3dImpl,                                                               \
    torch::nn::ReplicationPadImpl<3, torch::nn::ReplicationPad3dImpl>)                             \
  X("_ZN5torch2nn21AdaptiveAvgPool1dImpl7forwardERKN2at6TensorE", 0,                               \
    torch::nn::AdaptiveAvgPool1dImpl, torch::nn::AdaptiveAvgPool1dImpl)                            \
  X("_ZN5torch2nn21AdaptiveAvgPool2dImpl7forwardERKN2at6TensorE", 0,                               \
    torch::nn::AdaptiveAvgPool2dImpl, torch::nn::AdaptiveAvgPool2dImpl)                            \
  X("_ZN5torch2nn21AdaptiveAvgPool3dImpl7forwardERKN2at6TensorE", 0,                               \
    torch::nn::AdaptiveAvgPool3dImpl, torch::nn::AdaptiveAvgPool3dImpl)                            \
  X("_ZN5torch2nn21AdaptiveMaxPool1dImpl7forwardERKN2at6TensorE", 0,                               \
    torch::nn::AdaptiveMaxPool1dImpl, torch::nn::AdaptiveMaxPool1dImpl)                            \
  X("_ZN5torch2nn21AdaptiveMaxPool2dImpl7forwardERKN2at6TensorE", 0,                               \
    torch::nn::AdaptiveMaxPool2dImpl, torch::nn::AdaptiveMaxPool2dImpl)                            \
  X("_ZN5torch2nn21AdaptiveMaxPool3dImpl7forwardERKN2at6TensorE", 0,                               \
    torch::nn::AdaptiveMaxPool3dImpl, torch::nn::AdaptiveMaxPool3dImpl)                            \
  X("_ZN5torch2nn21LocalResponseNormImpl7forwardERKN2at6TensorE", 0,                               \
    torch::nn::LocalResponseNormImpl, torch::nn::LocalResponseNormImpl)                            \
  X("_ZN5torch2nn23FeatureAlphaDropoutImpl7forwardERKN2at6TensorE", 0,                             \
    torch::nn::FeatureAlphaDropoutImpl, torch::nn::FeatureAlphaDropoutImpl)                        \
  X("_ZN5torch2nn23FractionalMaxPool2dImpl7forwardERKN2at6TensorE", 0,                             \
    torch::nn::FractionalMaxPool2dImpl, torch::nn::FractionalMaxPool2dImpl)                        \
  X("_ZN5torch2nn23FractionalMaxPool3dImpl7forwardERKN2at6TensorE", 0,                             \
    torch::nn::FractionalMaxPool3dImpl, torch::nn::FractionalMaxPool3dImpl)                        \
  X("_ZN5torch2nn7ELUImpl7forwardEN2at6TensorE", 1, torch::nn::ELUImpl, torch::nn::ELUImpl)        \
  X("_ZN5torch2nn7GLUImpl7forwardERKN2at6TensorE", 0, torch::nn::GLUImpl, torch::nn::GLUImpl)      \
  X("_ZN5torch2nn8CELUImpl7forwardEN2at6TensorE", 1, torch::nn::CELUImpl, torch::nn::CELUImpl)     \
  X("_ZN5torch2nn8FoldImpl7forwardERKN2at6TensorE", 0, torch::nn::FoldImpl, torch::nn::FoldImpl)   \
  X("_ZN5torch2nn8GELUImpl7forwardERKN2at6TensorE", 0, torch::nn::GELUImpl, torch::nn::GELUImpl)   \
  X("_ZN5torch2nn8MishImpl7forwardERKN2at6TensorE", 0, torch::nn::MishImpl, torch::nn::MishImpl)   \
  X("_ZN5torch2nn8ReLUImpl7forwardEN2at6TensorE", 1, torch::nn::ReLUImpl, torch::nn::ReLUImpl)     \
  X("_ZN5torch2nn8SELUImpl7forwardEN2at6TensorE", 1, torch::nn::SELUImpl, torch::nn::SELUImpl)     \
  X("_ZN5torch2nn8SiLUImpl7forwardERKN2at6TensorE", 0, torch::nn::SiLUImpl, torch::nn::SiLUImpl)   \
  X("_ZN5torch2nn8TanhImpl7forwardERKN2at6TensorE", 0, torch::nn::TanhImpl, torch::nn::TanhImpl)   \
  X("_ZN5torch2nn9PReLUImpl7forwardERKN2at6TensorE", 0, torch::nn::PReLUImpl,                      \
    torch::nn::PReLUImpl)                                                                          \
  X("_ZN5torch2nn9RReLUImpl7forwardEN2at6TensorE", 1, torch::nn::RReLUImpl, torch::nn::RReLUImpl)  \
  X("_ZN5torch2nn9ReLU6Impl7forwardEN2at6TensorE", 1, torch::nn::ReLU6Impl, torch::nn::ReLU6Impl)

namespace flopsprof::detail {
namespace {

// One call of a built-in forward while a profile may be running: a scope record in every running
// profile that knows the module.
// A call of a built-in's forward is that module's call only when the instance is of that type: a
// user's subclass (a partial convolution deriving from Conv2dImpl) that calls the base's forward
// inside its own is a user module, whose call spans more than the base's forward
// (builtin_calls_observed is false for it, so attribution places its ops by its rules and marks
// them, or its FLOPSPROF_MODULE() record does).
inline bool exactly(const torch::nn::Module* module, const std::type_info& type) noexcept {
  return typeid(*module) == type;
}

class BuiltinCall {
 public:
  BuiltinCall(const torch::nn::Module* module, const std::type_info& type) noexcept {
    if (g_setup_unwarmed.load(std::memory_order_relaxed))
      g_setup_unwarmed.store(false, std::memory_order_relaxed);
    if (g_scope_demand.load(std::memory_order_relaxed) != 0 && exactly(module, type)) {
      active_ = true;
      open_scope_records(module, handles_, ScopeKind::kBuiltin);
    }
  }
  ~BuiltinCall() {
    if (active_) close_scope_records(handles_);
  }
  BuiltinCall(const BuiltinCall&) = delete;
  BuiltinCall& operator=(const BuiltinCall&) = delete;

 private:
  bool active_ = false;
  ScopeHandles handles_;
};

// One call of an optimizer's step() while a profile may be running: a step record in every running
// profile whose thread is not already inside a step (step_scope() around it).
class OptimizerStep {
 public:
  OptimizerStep() noexcept {
    if (g_scope_demand.load(std::memory_order_relaxed) != 0) open_step_records(handles_);
  }
  ~OptimizerStep() { close_step_records(handles_); }
  OptimizerStep(const OptimizerStep&) = delete;
  OptimizerStep& operator=(const OptimizerStep&) = delete;

 private:
  ScopeHandles handles_;
};

// The start of a call of `module`, a `type` (its forward is inline): a start-only record.
void mark_call_start(const torch::nn::Module* module, const std::type_info& type) noexcept {
  if (g_setup_unwarmed.load(std::memory_order_relaxed))
    g_setup_unwarmed.store(false, std::memory_order_relaxed);
  if (g_scope_demand.load(std::memory_order_relaxed) == 0 || !exactly(module, type)) return;
  ScopeHandles handles;
  open_scope_records(module, handles, ScopeKind::kStart);
  close_scope_records(handles);
}

template <typename Fn>
Fn next_definition(const char* mangled) {
  void* p = dlsym(RTLD_NEXT, mangled);
  if (p == nullptr) {
    // Only reachable when this definition was bound but libtorch's is not after it in the
    // search order (a program that dlopens libtorch with RTLD_DEEPBIND): nothing to call.
    throw Error(std::string("flopsprof: libtorch's ") + mangled +
                " was not found after libflopsprof in the symbol search order; link libtorch "
                "normally (as a dependency of flopsprof::flopsprof)");
  }
  return reinterpret_cast<Fn>(p);
}

}  // namespace
}  // namespace flopsprof::detail

// The definitions libtorch's callers bind to (asm labels: the mangled member names).
#define FLOPSPROF_PARAM_0 const at::Tensor&
#define FLOPSPROF_PARAM_1 at::Tensor
#define FLOPSPROF_ARG_0(x) x
#define FLOPSPROF_ARG_1(x) std::move(x)
#define FLOPSPROF_CAT2(a, b) a##b
#define FLOPSPROF_CAT(a, b) FLOPSPROF_CAT2(a, b)
#define FLOPSPROF_DEFINE(mangled, by_value, final_type, ...)                                 \
  at::Tensor FLOPSPROF_CAT(flopsprof_forward_, __LINE__)(                                    \
      __VA_ARGS__ * self, FLOPSPROF_PARAM_##by_value input) __asm__(mangled);                \
  at::Tensor FLOPSPROF_CAT(flopsprof_forward_, __LINE__)(__VA_ARGS__ * self,                 \
                                                         FLOPSPROF_PARAM_##by_value input) { \
    using Real = at::Tensor (*)(__VA_ARGS__*, FLOPSPROF_PARAM_##by_value);                   \
    static const Real real = flopsprof::detail::next_definition<Real>(mangled);              \
    flopsprof::detail::BuiltinCall call(static_cast<const torch::nn::Module*>(self),         \
                                        typeid(final_type));                                 \
    return real(self, FLOPSPROF_ARG_##by_value(input));                                      \
  }
FLOPSPROF_BUILTIN_FORWARDS(FLOPSPROF_DEFINE)
#undef FLOPSPROF_DEFINE

#define FLOPSPROF_DEFINE_TRANSPOSED(mangled, type, tag)                                           \
  at::Tensor flopsprof_transposed_##tag(                                                          \
      type* self, const at::Tensor& input,                                                        \
      const c10::optional<at::IntArrayRef>& output_size) __asm__(mangled);                        \
  at::Tensor flopsprof_transposed_##tag(type* self, const at::Tensor& input,                      \
                                        const c10::optional<at::IntArrayRef>& output_size) {      \
    using Real = at::Tensor (*)(type*, const at::Tensor&, const c10::optional<at::IntArrayRef>&); \
    static const Real real = flopsprof::detail::next_definition<Real>(mangled);                   \
    flopsprof::detail::BuiltinCall call(static_cast<const torch::nn::Module*>(self),              \
                                        typeid(type));                                            \
    return real(self, input, output_size);                                                        \
  }
FLOPSPROF_TRANSPOSED_CONVS(FLOPSPROF_DEFINE_TRANSPOSED)
#undef FLOPSPROF_DEFINE_TRANSPOSED

// BatchNorm's and InstanceNorm's forwards are inline in LibTorch's headers; each begins with a
// virtual `_check_input_dim(input)` defined in libtorch, reached through libtorch's vtable: the
// start of a call, with its instance.
#define FLOPSPROF_INPUT_CHECKS(X)                                                                 \
  X("_ZN5torch2nn15BatchNorm1dImpl16_check_input_dimERKN2at6TensorE", torch::nn::BatchNorm1dImpl) \
  X("_ZN5torch2nn15BatchNorm2dImpl16_check_input_dimERKN2at6TensorE", torch::nn::BatchNorm2dImpl) \
  X("_ZN5torch2nn15BatchNorm3dImpl16_check_input_dimERKN2at6TensorE", torch::nn::BatchNorm3dImpl) \
  X("_ZN5torch2nn18InstanceNorm1dImpl16_check_input_dimERKN2at6TensorE",                          \
    torch::nn::InstanceNorm1dImpl)                                                                \
  X("_ZN5torch2nn18InstanceNorm2dImpl16_check_input_dimERKN2at6TensorE",                          \
    torch::nn::InstanceNorm2dImpl)                                                                \
  X("_ZN5torch2nn18InstanceNorm3dImpl16_check_input_dimERKN2at6TensorE",                          \
    torch::nn::InstanceNorm3dImpl)
#define FLOPSPROF_DEFINE_CHECK(mangled, type)                                                      \
  void FLOPSPROF_CAT(flopsprof_check_, __LINE__)(type * self,                                      \
                                                 const at::Tensor& input) __asm__(mangled);        \
  void FLOPSPROF_CAT(flopsprof_check_, __LINE__)(type * self, const at::Tensor& input) {           \
    using Real = void (*)(type*, const at::Tensor&);                                               \
    static const Real real = flopsprof::detail::next_definition<Real>(mangled);                    \
    real(self, input); /* a wrong input throws: no call starts */                                  \
    flopsprof::detail::mark_call_start(static_cast<const torch::nn::Module*>(self), typeid(type)); \
  }
FLOPSPROF_INPUT_CHECKS(FLOPSPROF_DEFINE_CHECK)
#undef FLOPSPROF_DEFINE_CHECK

// The optimizers' step(closure): the step phase without step_scope().
#define FLOPSPROF_OPTIMIZERS(X)                                                         \
  X("_ZN5torch5optim3SGD4stepESt8functionIFN2at6TensorEvEE", torch::optim::SGD)         \
  X("_ZN5torch5optim4Adam4stepESt8functionIFN2at6TensorEvEE", torch::optim::Adam)       \
  X("_ZN5torch5optim5AdamW4stepESt8functionIFN2at6TensorEvEE", torch::optim::AdamW)     \
  X("_ZN5torch5optim7Adagrad4stepESt8functionIFN2at6TensorEvEE", torch::optim::Adagrad) \
  X("_ZN5torch5optim7RMSprop4stepESt8functionIFN2at6TensorEvEE", torch::optim::RMSprop) \
  X("_ZN5torch5optim5LBFGS4stepESt8functionIFN2at6TensorEvEE", torch::optim::LBFGS)
#define FLOPSPROF_DEFINE_STEP(mangled, type)                                                    \
  at::Tensor FLOPSPROF_CAT(flopsprof_step_, __LINE__)(                                          \
      type * self, torch::optim::Optimizer::LossClosure f) __asm__(mangled);                    \
  at::Tensor FLOPSPROF_CAT(flopsprof_step_, __LINE__)(type * self,                              \
                                                      torch::optim::Optimizer::LossClosure f) { \
    using Real = at::Tensor (*)(type*, torch::optim::Optimizer::LossClosure);                   \
    static const Real real = flopsprof::detail::next_definition<Real>(mangled);                 \
    flopsprof::detail::OptimizerStep step;                                                      \
    return real(self, std::move(f));                                                            \
  }
FLOPSPROF_OPTIMIZERS(FLOPSPROF_DEFINE_STEP)
#undef FLOPSPROF_DEFINE_STEP

namespace flopsprof::detail {
namespace {

struct Table {
  std::unordered_set<std::type_index> observed;
  std::unordered_set<std::type_index> starts;  // only the start of each call
  bool any = false;
};

// Whether the program binds `mangled` to this library's definition: the symbol's first
// definition in the global search order is inside libflopsprof (`self`), and libtorch defines it
// after (a name this LibTorch does not export is no call of it: its type stays unobserved).
bool bound_here(const char* mangled, const Dl_info& self) {
  void* bound = dlsym(RTLD_DEFAULT, mangled);
  Dl_info where{};
  return bound != nullptr && dladdr(bound, &where) != 0 && where.dli_fbase == self.dli_fbase &&
         dlsym(RTLD_NEXT, mangled) != nullptr;
}

const Table& table() {
  static const Table t = [] {
    Table t;
    Dl_info self{};
    dladdr(reinterpret_cast<void*>(&builtin_calls_interposed), &self);
#define FLOPSPROF_CHECK(mangled, by_value, final_type, ...) \
  if (bound_here(mangled, self)) t.observed.insert(std::type_index(typeid(final_type)));
    FLOPSPROF_BUILTIN_FORWARDS(FLOPSPROF_CHECK)
#undef FLOPSPROF_CHECK
#define FLOPSPROF_CHECK_TRANSPOSED(mangled, type, tag) \
  if (bound_here(mangled, self)) t.observed.insert(std::type_index(typeid(type)));
    FLOPSPROF_TRANSPOSED_CONVS(FLOPSPROF_CHECK_TRANSPOSED)
#undef FLOPSPROF_CHECK_TRANSPOSED
#define FLOPSPROF_CHECK_START(mangled, type) \
  if (bound_here(mangled, self)) t.starts.insert(std::type_index(typeid(type)));
    FLOPSPROF_INPUT_CHECKS(FLOPSPROF_CHECK_START)
#undef FLOPSPROF_CHECK_START
    t.any = !t.observed.empty();
    return t;
  }();
  return t;
}

}  // namespace

bool builtin_calls_observed(const torch::nn::Module& module) {
  return table().observed.count(std::type_index(typeid(module))) != 0;
}

bool builtin_calls_interposed() { return table().any; }

bool builtin_call_starts_observed(const torch::nn::Module& module) {
  return table().starts.count(std::type_index(typeid(module))) != 0;
}

}  // namespace flopsprof::detail
