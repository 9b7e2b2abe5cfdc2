// get_model_profile's helpers (the templates in flopsprof/profiler.h use them): not an API.
// profiler.h includes it after declaring what it uses (CallWindow, ModelProfileOptions,
// ModelProfile); include profiler.h instead.
#pragma once

#ifndef FLOPSPROF_PROFILER_H_DECLARED
#error "include <flopsprof/profiler.h>, which includes this header after what it uses"
#endif

#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <ATen/record_function.h>
#include <torch/nn/module.h>
#include <torch/types.h>

namespace flopsprof {

namespace detail {
/// get_model_profile without the call window: `run` marks the model's call itself.
ModelProfile profile_model(std::shared_ptr<torch::nn::Module> model,
                           const std::function<void()>& run, const ModelProfileOptions& options);
/// Whether any parameter or buffer of `model` is on the meta device.
bool on_meta(const torch::nn::Module& model);
/// Runs `forward` as one call of `model`, then backward from the sum of its output when
/// `backward` and it is a tensor.
template <class F>
void run_forward(const torch::nn::Module* model, F&& forward, bool backward) {
  if constexpr (std::is_same_v<std::decay_t<decltype(forward())>, torch::Tensor>) {
    torch::Tensor out;
    {
      CallWindow window(model);
      out = forward();
    }
    if (backward) {
      torch::Tensor loss;
      {
        at::DisableRecordFunctionGuard not_the_model;  // the estimate's loss is no model op
        loss = out.sum();
      }
      loss.backward();
    }
  } else {
    CallWindow window(model);
    forward();
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
