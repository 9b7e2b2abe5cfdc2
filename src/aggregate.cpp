// Post-collection processing: counting rule, attribution rules, calls, latency, per-op tables.
#include "aggregate.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "formulas/registry.h"

namespace flopsprof::detail {

std::vector<ArgView> arg_views(const ThreadEvents& thread, const RawEvent& event) {
  std::vector<ArgView> views(event.args_count);
  for (uint32_t k = 0; k < event.args_count; ++k) {
    const ArgRecord& a = thread.args[event.args_begin + k];
    ArgView& v = views[k];
    v.kind = a.kind;
    v.dtype = a.dtype;
    v.b = a.b;
    switch (a.kind) {
      case ArgKind::kTensor:
      case ArgKind::kIntList:
        v.shape = IntSpan(thread.dims.data() + a.offset, a.count);
        break;
      case ArgKind::kDoubleList:
        v.shape = IntSpan(thread.dims.data() + a.offset, a.count);
        v.dlist = reinterpret_cast<const double*>(thread.dims.data() + a.offset);
        break;
      case ArgKind::kDouble: v.d = a.d; break;
      case ArgKind::kInt:
      case ArgKind::kString:
      case ArgKind::kTensorList: v.i = a.i; break;
      default: break;
    }
  }
  return views;
}

namespace {

DType op_dtype(const std::vector<ArgView>& args) {
  DType first = DType::kUnknown;
  for (const ArgView& a : args) {
    if (a.kind != ArgKind::kTensor) continue;
    switch (a.dtype) {
      case DType::kFloat64: case DType::kFloat32: case DType::kFloat16: case DType::kBFloat16:
      case DType::kFloat8: case DType::kComplex64: case DType::kComplex128:
        return a.dtype;
      default:
        if (first == DType::kUnknown) first = a.dtype;
    }
  }
  return first;
}

struct OpAcc {
  uint64_t calls = 0, flops = 0, macs = 0, declined = 0;
  int64_t ns = 0, uncovered_ns = 0;
  bool has_formula = false;
};

struct ModuleAcc {
  uint64_t flops = 0, macs = 0, calls = 0, na_ops = 0;
  int64_t ns = 0;
  FlopsByDtype by_dtype{};
};

// Adds with saturation; records that a total overflowed.
void add_saturating(uint64_t& total, uint64_t v, bool& overflow) {
  if (__builtin_add_overflow(total, v, &total)) {
    total = UINT64_MAX;
    overflow = true;
  }
}

}  // namespace

ProfileResult aggregate(const AggregateInput& in) {
  const ModuleTree& tree = *in.tree;
  const int num_modules = static_cast<int>(tree.nodes.size());
  ProfileResult r;
  r.timer = in.timer;
  r.problems = in.problems;
  std::vector<ModuleAcc> acc(num_modules);
  std::unordered_map<uint32_t, OpAcc> ops;
  std::unordered_map<uint32_t, FormulaFn> formulas;
  std::map<std::string, uint64_t> formula_errors;  // message -> count
  const double s_per_tick = in.ns_per_tick * 1e-9;
  bool overflow = false;

  std::vector<bool> scoped(num_modules, false);
  for (const ThreadEvents* th : in.threads) {
    for (const ScopeRecord& s : th->scopes) {
      if (s.module >= 0 && tree.nodes[s.module].effective == s.module) scoped[s.module] = true;
    }
  }

  auto formula_for = [&](uint32_t id) -> const FormulaFn& {
    auto it = formulas.find(id);
    if (it == formulas.end()) it = formulas.emplace(id, find_formula(in.names->name(id))).first;
    return it->second;
  };

  for (const ThreadEvents* th : in.threads) {
    const std::vector<RawEvent>& ev = th->events;
    const size_t n = ev.size();
    if (n == 0 && th->scopes.empty()) continue;
    ++r.threads;
    r.op_events += n;
    auto end_of = [&](const RawEvent& e) { return e.end_ns != 0 ? e.end_ns : in.stop_ns; };
    std::vector<int64_t> child_ns(n, 0);
    for (size_t i = 0; i < n; ++i) {
      if (ev[i].parent >= 0) child_ns[ev[i].parent] += end_of(ev[i]) - ev[i].start_ns;
    }

    // Rules 1-3: explicit scope, parameter ownership (inside the scope), enclosing op.
    std::vector<int> mod(n, -1);
    std::vector<size_t> relevant;  // forward ops that are counted or listed, in start order
    relevant.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      const RawEvent& e = ev[i];
      if (e.kind != EventKind::kOp || (e.flags & kBackward)) continue;
      if (e.flags & kUnderCounted) {
        mod[i] = e.parent >= 0 ? mod[e.parent] : -1;
        continue;
      }
      int scope = e.scope >= 0 ? th->scopes[e.scope].module : -1;
      if (scope >= 0) scope = tree.nodes[scope].effective;
      int m = -1;
      if (e.owner >= 0) {
        for (int o : tree.owner_sets[e.owner]) {
          if (scope < 0 || tree.is_ancestor_or_self(scope, o)) {
            m = o;
            break;
          }
        }
        if (m < 0) m = scope;
      } else if (scope >= 0) {
        m = scope;
      } else if (e.parent >= 0) {
        m = mod[e.parent];
      }
      mod[i] = m >= 0 ? tree.nodes[m].effective : -1;
      relevant.push_back(i);
    }
    // Rule 4: the lowest common ancestor of the nearest attributed ops before and after.
    {
      const size_t k = relevant.size();
      std::vector<int> before(k, -1), after(k, -1);
      int last = -1;
      for (size_t j = 0; j < k; ++j) {
        before[j] = last;
        if (mod[relevant[j]] >= 0) last = mod[relevant[j]];
      }
      last = -1;
      for (size_t j = k; j-- > 0;) {
        after[j] = last;
        if (mod[relevant[j]] >= 0) last = mod[relevant[j]];
      }
      for (size_t j = 0; j < k; ++j) {
        size_t i = relevant[j];
        if (mod[i] >= 0) continue;
        mod[i] = (before[j] >= 0 && after[j] >= 0)
                     ? tree.lowest_common_ancestor(before[j], after[j])
                     : 0;
      }
    }

    // FLOPs, op table, calls and latency.
    std::vector<int64_t> last_seen(num_modules, -2), run_start(num_modules, 0),
        run_end(num_modules, 0);
    int64_t k = 0;
    for (size_t i : relevant) {
      const RawEvent& e = ev[i];
      const int m = mod[i];
      const int64_t end = end_of(e);
      const int64_t dur = end - e.start_ns;
      OpAcc& op = ops[e.name_id];
      ++op.calls;
      op.ns += dur;
      op.has_formula = op.has_formula || (e.flags & kHasFormula);
      bool counted = false;
      if (e.flags & kCounted) {
        const FormulaFn& fn = formula_for(e.name_id);
        if (fn) {
          std::vector<ArgView> args = arg_views(*th, e);
          try {
            std::optional<FlopCount> fc = fn(OpInputs(args.data(), args.size()));
            if (fc) {
              counted = true;
              add_saturating(op.flops, fc->flops, overflow);
              add_saturating(op.macs, fc->macs, overflow);
              add_saturating(r.flops, fc->flops, overflow);
              add_saturating(r.macs, fc->macs, overflow);
              size_t dt = static_cast<size_t>(op_dtype(args));
              add_saturating(r.flops_by_dtype[dt], fc->flops, overflow);
              for (int a = m; a >= 0; a = tree.nodes[a].parent) {
                add_saturating(acc[a].flops, fc->flops, overflow);
                add_saturating(acc[a].macs, fc->macs, overflow);
                add_saturating(acc[a].by_dtype[dt], fc->flops, overflow);
              }
            } else {
              ++op.declined;
            }
          } catch (const std::exception& ex) {
            ++formula_errors[fmt::format("{}: {}", in.names->name(e.name_id), ex.what())];
          }
        }
      }
      if (!counted) {
        const int64_t self = dur - child_ns[i];
        op.uncovered_ns += self;
        r.no_formula_s += static_cast<double>(self) * s_per_tick;
        for (int a = m; a >= 0; a = tree.nodes[a].parent) ++acc[a].na_ops;
      }
      for (int a = m; a >= 0; a = tree.nodes[a].parent) {
        if (scoped[a]) continue;
        if (last_seen[a] == k - 1) {
          run_end[a] = std::max(run_end[a], end);
        } else {
          if (last_seen[a] >= 0) acc[a].ns += run_end[a] - run_start[a];
          ++acc[a].calls;
          run_start[a] = e.start_ns;
          run_end[a] = end;
        }
        last_seen[a] = k;
      }
      ++k;
    }
    for (int a = 0; a < num_modules; ++a) {
      if (last_seen[a] >= 0) acc[a].ns += run_end[a] - run_start[a];
    }
    for (const ScopeRecord& s : th->scopes) {
      if (s.module < 0 || !scoped[s.module]) continue;
      ++acc[s.module].calls;
      acc[s.module].ns += (s.exit_ns != 0 ? s.exit_ns : in.stop_ns) - s.enter_ns;
    }
  }

  // Modules in tree order, ignored ones folded away.
  std::vector<int> remap(num_modules, -1);
  for (int t = 0; t < num_modules; ++t) {
    const ModuleNode& node = tree.nodes[t];
    if (node.ignored) continue;
    remap[t] = static_cast<int>(r.modules.size());
    ModuleStats s;
    s.name = node.name;
    s.type = node.type;
    s.depth = node.depth;
    s.parent = node.parent >= 0 ? remap[node.parent] : -1;
    s.calls = acc[t].calls;
    s.scoped = scoped[t];
    s.params = node.params;
    s.trainable_params = node.trainable_params;
    s.param_bytes = node.param_bytes;
    s.flops = acc[t].flops;
    s.macs = acc[t].macs;
    s.latency_s = static_cast<double>(acc[t].ns) * s_per_tick;
    s.na_ops = acc[t].na_ops;
    s.flops_by_dtype = acc[t].by_dtype;
    if (s.parent >= 0) r.modules[s.parent].children.push_back(remap[t]);
    r.modules.push_back(std::move(s));
  }
  r.params = tree.params;
  r.trainable_params = tree.trainable_params;
  r.param_bytes = tree.param_bytes;
  r.param_bytes_by_dtype = tree.param_bytes_by_dtype;
  r.duration_s = r.modules.empty() ? 0.0 : r.modules[0].latency_s;

  for (auto& [id, a] : ops) {
    OpStats s;
    s.name = in.names->name(id);
    s.has_formula = a.has_formula;
    s.calls = a.calls;
    s.flops = a.flops;
    s.macs = a.macs;
    s.latency_s = static_cast<double>(a.ns) * s_per_tick;
    s.uncovered_s = static_cast<double>(a.uncovered_ns) * s_per_tick;
    if (a.declined > 0) {
      r.problems.push_back(fmt::format(
          "{}: the formula could not count {} call(s) (arguments not understood); their FLOPs "
          "are n/a",
          s.name, a.declined));
    }
    r.ops.push_back(std::move(s));
  }
  std::sort(r.ops.begin(), r.ops.end(), [](const OpStats& a, const OpStats& b) {
    return a.latency_s != b.latency_s ? a.latency_s > b.latency_s : a.name < b.name;
  });
  for (const auto& [msg, count] : formula_errors) {
    r.problems.push_back(fmt::format("{} ({} call(s))", msg, count));
  }
  if (overflow) r.problems.push_back("a FLOP or MAC total overflowed 64 bits and was saturated");
  return r;
}

}  // namespace flopsprof::detail
