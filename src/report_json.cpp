// The JSON rendering of a profile (schema_version 1, documented in README.md).
#include <nlohmann/json.hpp>

#include "flopsprof/config.h"
#include "flopsprof/report.h"

namespace flopsprof {
namespace {

template <class Array>
nlohmann::json by_dtype(const Array& values) {
  nlohmann::json j = nlohmann::json::object();
  for (size_t d = 0; d < values.size(); ++d) {
    if (values[d] != 0) j[dtype_name(static_cast<DType>(d))] = values[d];
  }
  return j;
}

}  // namespace

std::string to_json(const ProfileResult& r, int indent) {
  using nlohmann::json;
  json j;
  j["schema_version"] = 1;
  j["generator"] = std::string("flopsprof ") + FLOPSPROF_VERSION;
  j["summary"] = {
      {"params", r.params},
      {"trainable_params", r.trainable_params},
      {"param_bytes", r.param_bytes},
      {"param_bytes_by_dtype", by_dtype(r.param_bytes_by_dtype)},
      {"fwd_flops", r.flops},
      {"fwd_macs", r.macs},
      {"fwd_latency_s", r.duration_s},
      {"fwd_flops_per_s", r.duration_s > 0 ? static_cast<double>(r.flops) / r.duration_s : 0.0},
      {"flops_by_dtype", by_dtype(r.flops_by_dtype)},
      {"no_formula_latency_s", r.no_formula_s},
      {"threads", r.threads},
      {"op_events", r.op_events},
      {"timer", r.timer},
      {"world_size", r.world_size},
      {"data_parallel_size", r.data_parallel_size},
      {"model_parallel_size", r.model_parallel_size},
      {"batch_size", r.batch_size},
      {"bwd_flops", r.bwd_flops},
      {"bwd_macs", r.bwd_macs},
      {"bwd_latency_s", r.bwd_latency_s},
      {"bwd_flops_estimate", r.estimated_bwd_flops()},
      {"recompute_flops", r.recompute_flops},
      {"recompute_macs", r.recompute_macs},
      {"autograd_flops", r.autograd_flops},
      {"autograd_latency_s", r.autograd_latency_s},
      {"step_flops", r.step_flops},
      {"step_latency_s", r.step_latency_s},
      {"iter_latency_s", r.iteration_latency_s()},
  };
  json modules = json::array();
  for (const ModuleStats& m : r.modules) {
    modules.push_back({
        {"name", m.name},
        {"type", m.type},
        {"depth", m.depth},
        {"parent", m.parent >= 0 ? json(r.modules[m.parent].name) : json(nullptr)},
        {"calls", m.calls},
        {"scoped", m.scoped},
        {"params", m.params},
        {"trainable_params", m.trainable_params},
        {"param_bytes", m.param_bytes},
        {"macs", m.macs},
        {"flops", m.flops},
        {"latency_s", m.latency_s},
        {"na_ops", m.na_ops},
        {"flops_by_dtype", by_dtype(m.flops_by_dtype)},
        {"bwd_flops", m.bwd_flops},
        {"bwd_macs", m.bwd_macs},
        {"bwd_latency_s", m.bwd_latency_s},
        {"recompute_flops", m.recompute_flops},
        {"recompute_macs", m.recompute_macs},
        {"fwd_alloc_bytes", m.fwd_alloc_bytes},
        {"fwd_held_bytes", m.fwd_held_bytes},
    });
  }
  j["modules"] = std::move(modules);
  json ops = json::array();
  for (const OpStats& op : r.ops) {
    ops.push_back({
        {"name", op.name},
        {"phase", op.phase},
        {"has_formula", op.has_formula},
        {"calls", op.calls},
        {"flops", op.flops},
        {"macs", op.macs},
        {"latency_s", op.latency_s},
        {"uncounted_self_latency_s", op.uncovered_s},
    });
  }
  j["ops"] = std::move(ops);
  if (r.memory.tracked) {
    const MemoryStats& m = r.memory;
    json trace = json::array();
    for (const MemorySample& x : m.trace) {
      trace.push_back({{"t_s", x.time_s}, {"bytes", x.bytes}, {"reserved", x.reserved},
                       {"op", x.op}, {"module", x.module}, {"phase", x.phase}});
    }
    j["memory"] = {{"peak_bytes", m.peak_bytes},       {"peak_op", m.peak_op},
                   {"peak_module", m.peak_module},     {"peak_phase", m.peak_phase},
                   {"fwd_peak_bytes", m.fwd_peak_bytes}, {"final_bytes", m.final_bytes},
                   {"peak_reserved_bytes", m.peak_reserved_bytes},
                   {"allocations", m.allocations},     {"frees", m.frees},
                   {"trace", std::move(trace)}};
  }
  j["problems"] = r.problems;
  return j.dump(indent);
}

}  // namespace flopsprof
