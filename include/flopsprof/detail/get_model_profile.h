// get_model_profile's helpers (the templates in flopsprof/profiler.h use them): not an API.
// profiler.h includes it after declaring what it uses (CallWindow, ModelProfileOptions,
// ModelProfile); include profiler.h instead.
#pragma once

#ifndef FLOPSPROF_PROFILER_H_DECLARED
#error "include <flopsprof/profiler.h>, which includes this header after what it uses"
#endif

#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <ATen/record_function.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/nn/module.h>
#include <torch/types.h>

#include "flopsprof/error.h"

namespace flopsprof {

namespace detail {
/// get_model_profile without the call window: `run` marks the model's call itself.
ModelProfile profile_model(std::shared_ptr<torch::nn::Module> model,
                           const std::function<void()>& run, const ModelProfileOptions& options);
/// Whether any parameter or buffer of `model` is on the meta device.
bool on_meta(const torch::nn::Module& model);
template <class T>
struct is_std_vector : std::false_type {};
template <class T, class A>
struct is_std_vector<std::vector<T, A>> : std::true_type {};
template <class T>
struct is_std_pair : std::false_type {};
template <class A, class B>
struct is_std_pair<std::pair<A, B>> : std::true_type {};
template <class T>
struct is_std_tuple : std::false_type {};
template <class... T>
struct is_std_tuple<std::tuple<T...>> : std::true_type {};
/// Calls `f` on each tensor of `x`, in order: `x` itself, or those in a vector, pair or tuple of
/// them (nested: an LSTM's (output, (h, c))); anything else holds none. `f` gets the tensor as
/// `x` holds it (const when `x` is).
template <class X, class F>
void for_each_tensor(X& x, F& f) {
  using T = std::remove_cv_t<X>;
  if constexpr (std::is_same_v<T, torch::Tensor>) {
    f(x);
  } else if constexpr (is_std_vector<T>::value) {
    for (auto&& e : x) for_each_tensor(e, f);
  } else if constexpr (is_std_pair<T>::value) {
    for_each_tensor(x.first, f);
    for_each_tensor(x.second, f);
  } else if constexpr (is_std_tuple<T>::value) {
    std::apply([&](auto&... e) { (for_each_tensor(e, f), ...); }, x);
  }
}
/// Runs `forward` as one call of `model`; with `backward`, then backward from the sum of each
/// tensor of its output that requires grad (a tensor, or a tuple, pair or vector of them: a
/// model returning (logits, embedding) was silently left without backward). Throws Error when
/// backward is asked and no output tensor requires grad.
template <class F>
void run_forward(const torch::nn::Module* model, F&& forward, bool backward) {
  if constexpr (std::is_void_v<decltype(forward())>) {
    CallWindow window(model);
    forward();
    if (backward) {
      throw Error(
          "get_model_profile: backward = true, but the model's forward returns nothing to run "
          "backward from; pass a callable that runs the forward and backward instead");
    }
  } else {
    auto out = [&] {
      CallWindow window(model);
      return forward();
    }();
    if (!backward) return;
    std::vector<torch::Tensor> tensors;  // the output's defined tensors
    auto keep = [&](const torch::Tensor& t) {
      if (t.defined()) tensors.push_back(t);
    };
    for_each_tensor(std::as_const(out), keep);
    std::vector<torch::Tensor> losses;
    {
      at::DisableRecordFunctionGuard not_the_model;  // the estimate's loss is no model op
      for (const torch::Tensor& t : tensors) {
        if (t.requires_grad()) losses.push_back(t.sum());
      }
    }
    if (losses.empty()) {
      throw Error(
          "get_model_profile: backward = true, but no tensor of the forward's output requires "
          "grad (" +
          std::to_string(tensors.size()) +
          " tensor(s) found; gradients are off, e.g. under a NoGradGuard or InferenceMode, or "
          "the model has no trainable parameter); run it with gradients on, or pass a callable "
          "that runs the forward and backward");
    }
    torch::autograd::backward(losses);
  }
}
template <class M>
std::shared_ptr<torch::nn::Module> as_module_ptr(const M& model) {
  if constexpr (std::is_convertible_v<M, std::shared_ptr<torch::nn::Module>>) {
    return model;
  } else if constexpr (std::is_base_of_v<torch::nn::Module, M>) {
    static_assert(always_false<M>,
                  "flopsprof needs the model as a std::shared_ptr or a module holder: create it "
                  "with `auto model = std::make_shared<Net>();` (or TORCH_MODULE(Net)), not as a "
                  "plain object");
    return nullptr;
  } else {
    return std::static_pointer_cast<torch::nn::Module>(model.ptr());
  }
}
/// Moves tensors to meta, also inside tuples, pairs and vectors (an LSTM's (h, c) state).
template <class T>
void move_to_meta(T& x) {
  auto move = [](torch::Tensor& t) {
    if (t.defined() && !t.is_meta()) t = t.to(torch::kMeta);
  };
  for_each_tensor(x, move);
}
torch::Tensor make_input(const std::vector<int64_t>& shape, const ModelProfileOptions& options);
}  // namespace detail

}  // namespace flopsprof
