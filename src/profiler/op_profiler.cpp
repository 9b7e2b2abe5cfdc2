// The op profiler: an ATen op called through the dispatcher, timed, counted and measured.
#include "flopsprof/op_profiler.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <sstream>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/record_function.h>
#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include "aggregation/op_counts.h"
#include "capture/interceptor.h"
#include "capture/memory.h"
#include "capture/observer.h"
#include "flopsprof/error.h"

namespace flopsprof {
namespace {

// Net allocator growth and its peak while installed on this thread.
class PeakObserver final : public c10::MemoryReportingInfoBase {
 public:
  void reportMemoryUsage(void*, int64_t size, detail::ReportedTotal, detail::ReportedTotal,
                         c10::Device) override {
    current_ += size;
    peak_ = std::max(peak_, current_);
  }
  bool memoryProfilingEnabled() const override { return true; }
  int64_t peak() const { return peak_; }

 private:
  int64_t current_ = 0;
  int64_t peak_ = 0;
};

std::mutex g_cache_mu;
std::map<std::string, OpProfile> g_cache;

std::string key_of(const std::string& op, const std::vector<c10::IValue>& inputs,
                   const c10::Device& device, int repeat) {
  std::string key = fmt::format("{}|{}|{}", op, device.str(), repeat);
  for (const c10::IValue& v : inputs) {
    if (v.isTensor()) {
      const at::Tensor& t = v.toTensor();
      key += t.defined()
                 ? fmt::format("|T{}{}", c10::toString(t.scalar_type()), fmt::join(t.sizes(), "x"))
                 : "|T?";
    } else {
      std::ostringstream s;
      s << v;
      key += "|" + s.str();
    }
  }
  return key;
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

// The op named 'namespace::name[.overload]' (its name without the overload in `name`).
c10::OperatorHandle find_op(const std::string& op, std::string& name) {
  size_t dot = op.find('.', op.find("::") == std::string::npos ? 0 : op.find("::") + 2);
  name = op.substr(0, dot);
  std::string overload = dot == std::string::npos ? "" : op.substr(dot + 1);
  auto handle = c10::Dispatcher::singleton().findSchema(c10::OperatorName(name, overload));
  if (!handle) {
    throw Error(
        fmt::format("profile_op: unknown op '{}'; pass 'namespace::name' or "
                    "'namespace::name.overload' (e.g. 'aten::mm', 'aten::add.Tensor')",
                    op));
  }
  return *handle;
}

// One call with allocator reporting: peak growth and the outputs' size (nothing when another
// profiler holds the thread's reporting).
template <class Call>
void measure_memory(Call&& call, OpProfile& p) {
  auto observer = std::make_shared<PeakObserver>();
  if (c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE) != nullptr) return;
  c10::DebugInfoGuard guard(c10::DebugInfoKind::PROFILER_STATE, observer);
  std::vector<c10::IValue> out = call();
  p.peak_bytes = observer->peak();
  for (const c10::IValue& v : out) {
    if (v.isTensor() && v.toTensor().defined())
      p.output_bytes += static_cast<int64_t>(v.toTensor().nbytes());
  }
  p.workspace_bytes = std::max<int64_t>(0, p.peak_bytes - p.output_bytes);
}

// FLOPs from the op's formula, through the same argument capture as the observer.
std::optional<FlopCount> flops_of(const std::string& name, const std::vector<c10::IValue>& args) {
  detail::ThreadEvents scratch;
  detail::RawEvent event;
  detail::capture_args(&scratch, event, c10::ArrayRef<const c10::IValue>(args.data(), args.size()));
  std::vector<ArgView> views = detail::arg_views(scratch, event);
  return compute_flops(name, OpInputs(views.data(), views.size()));
}

}  // namespace

void clear_op_profile_cache() {
  std::lock_guard<std::mutex> lock(g_cache_mu);
  g_cache.clear();
}

OpProfile profile_op(const std::string& op, const std::vector<c10::IValue>& inputs,
                     c10::Device device, int repeat, int warm_up) {
  if (repeat < 1)
    throw Error(fmt::format("profile_op: repeat = {} is invalid; pass a count >= 1", repeat));
  if (detail::any_session_active()) {
    throw Error(
        "profile_op: a profile is running; stop it first (profile_op measures the op alone)");
  }
  std::string name;
  const c10::OperatorHandle handle = find_op(op, name);
  std::vector<c10::IValue> args;
  args.reserve(inputs.size());
  for (const c10::IValue& v : inputs) {
    args.push_back(v.isTensor() && v.toTensor().defined() ? c10::IValue(v.toTensor().to(device))
                                                          : v);
  }
  const std::string key = key_of(op, args, device, repeat);
  {
    std::lock_guard<std::mutex> lock(g_cache_mu);
    auto it = g_cache.find(key);
    if (it != g_cache.end()) {
      OpProfile p = it->second;
      p.cached = true;
      return p;
    }
  }

  detail::Unobserved no_observers;
  const bool cuda = device.is_cuda();
  auto call = [&] {
    std::vector<c10::IValue> stack = args;
    handle.callBoxed(&stack);
    if (cuda) torch::cuda::synchronize(device.index());
    return stack;
  };
  for (int i = 0; i < warm_up; ++i) call();

  OpProfile p;
  p.op = op;
  p.device = device.str();
  measure_memory(call, p);
  for (int i = 0; i < repeat; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    call();
    p.samples_s.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  p.median_s = quantile(p.samples_s, 0.5);
  p.p10_s = quantile(p.samples_s, 0.1);
  p.p90_s = quantile(p.samples_s, 0.9);

  p.flops = flops_of(name, args);

  std::lock_guard<std::mutex> lock(g_cache_mu);
  g_cache.emplace(key, p);
  return p;
}

}  // namespace flopsprof
