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
/// The defined tensors in a forward's output, in order: the tensor itself, or those in a tuple,
/// pair or vector of them (nested).
inline void output_tensors(const torch::Tensor& t, std::vector<torch::Tensor>& out) {
  if (t.defined()) out.push_back(t);
}
template <class T>
void output_tensors(const T& /*x*/, std::vector<torch::Tensor>& /*out*/) {}  // not a tensor
template <class T>
void output_tensors(const std::vector<T>& xs, std::vector<torch::Tensor>& out);
template <class A, class B>
void output_tensors(const std::pair<A, B>& p, std::vector<torch::Tensor>& out);
template <class... T>
void output_tensors(const std::tuple<T...>& t, std::vector<torch::Tensor>& out);
template <class T>
void output_tensors(const std::vector<T>& xs, std::vector<torch::Tensor>& out) {
  for (const auto& x : xs) output_tensors(x, out);
}
template <class A, class B>
void output_tensors(const std::pair<A, B>& p, std::vector<torch::Tensor>& out) {
  output_tensors(p.first, out);
  output_tensors(p.second, out);
}
template <class... T>
void output_tensors(const std::tuple<T...>& t, std::vector<torch::Tensor>& out) {
  std::apply([&](const auto&... x) { (output_tensors(x, out), ...); }, t);
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
    std::vector<torch::Tensor> tensors;
    output_tensors(out, tensors);
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
inline void move_to_meta(torch::Tensor& x) {
  if (x.defined() && !x.is_meta()) x = x.to(torch::kMeta);
}
template <class T>
void move_to_meta(T& /*x*/) {}  // anything else stays as it is
template <class T>
void move_to_meta(std::vector<T>& xs) {
  for (auto& x : xs) move_to_meta(x);
}
template <class A, class B>
void move_to_meta(std::pair<A, B>& p) {
  move_to_meta(p.first);
  move_to_meta(p.second);
}
template <class... T>
void move_to_meta(std::tuple<T...>& t) {
  std::apply([](auto&... x) { (move_to_meta(x), ...); }, t);
}
torch::Tensor make_input(const std::vector<int64_t>& shape, const ModelProfileOptions& options);
}  // namespace detail

}  // namespace flopsprof
