// Post-collection processing: counting rule, attribution rules, calls, latency, per-op tables.
#include "aggregate.h"

#include <algorithm>
#include <map>
#include <tuple>
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
      case ArgKind::kDouble:
        v.d = a.d;
        break;
      case ArgKind::kInt:
      case ArgKind::kString:
      case ArgKind::kTensorList:
        v.i = a.i;
        break;
      default:
        break;
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
      case DType::kFloat64:
      case DType::kFloat32:
      case DType::kFloat16:
      case DType::kBFloat16:
      case DType::kFloat8:
      case DType::kComplex64:
      case DType::kComplex128:
        return a.dtype;
      default:
        if (first == DType::kUnknown) first = a.dtype;
    }
  }
  return first;
}

enum class Phase : uint8_t { kNone, kForward, kBackward, kRecompute, kStep };

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::kBackward:
      return "backward";
    case Phase::kRecompute:
      return "recompute";
    case Phase::kStep:
      return "step";
    default:
      return "forward";
  }
}

struct OpAcc {
  uint64_t calls = 0, flops = 0, macs = 0, declined = 0;
  int64_t ns = 0, uncovered_ns = 0;
  bool has_formula = false;
};

struct ModuleAcc {
  uint64_t flops = 0, macs = 0, calls = 0, na_ops = 0;
  uint64_t bwd_flops = 0, bwd_macs = 0, re_flops = 0, re_macs = 0;
  int64_t ns = 0, bwd_ns = 0;
  int64_t mem_alloc = 0, mem_held = 0;
  FlopsByDtype by_dtype{};
};

// Adds with saturation; records that a total overflowed.
void add_saturating(uint64_t& total, uint64_t v, bool& overflow) {
  if (__builtin_add_overflow(total, v, &total)) {
    total = UINT64_MAX;
    overflow = true;
  }
}

struct MemSample {
  int64_t time = 0, bytes = 0, reserved = 0;
  uint32_t name = UINT32_MAX;  // op name id; UINT32_MAX: between ops
  int module = -1;
  Phase phase = Phase::kForward;
};

struct PerThread {
  std::vector<Phase> phase;  // kNone: not a counted/listed op (nested or an autograd node)
  std::vector<int> mod;      // attributed module; -1: none ("(autograd)" for backward)
  std::vector<int> node_of;  // innermost enclosing autograd node (backward ops)
};

struct KernelAcc {
  uint64_t calls = 0;
  int64_t ns = 0;
};

std::vector<KernelStats> top_kernels(const std::map<std::string, KernelAcc>& by_name, size_t n,
                                     double ns_per_tick_s) {
  std::vector<KernelStats> out;
  for (const auto& [name, a] : by_name)
    out.push_back(KernelStats{name, a.calls, static_cast<double>(a.ns) * ns_per_tick_s});
  std::sort(out.begin(), out.end(), [](const KernelStats& a, const KernelStats& b) {
    return a.gpu_s != b.gpu_s ? a.gpu_s > b.gpu_s : a.name < b.name;
  });
  if (out.size() > n) out.resize(n);
  return out;
}

}  // namespace

std::string format_args(const std::vector<ArgView>& args) {
  std::string out;
  for (const ArgView& a : args) {
    if (!out.empty()) out += ", ";
    switch (a.kind) {
      case ArgKind::kTensor: {
        static const char* kShort[] = {"?",   "f64", "f32", "f16", "bf16", "f8", "c64", "c128",
                                       "i64", "i32", "i16", "i8",  "u8",   "b",  "q"};
        out += "T<";
        for (size_t d = 0; d < a.shape.size(); ++d)
          out += (d ? "x" : "") + std::to_string(a.shape[d]);
        out += (a.shape.empty() ? "" : "x");
        out += kShort[static_cast<size_t>(a.dtype) < 15 ? static_cast<size_t>(a.dtype) : 0];
        out += ">";
        break;
      }
      case ArgKind::kDouble:
        out += fmt::format("{}", a.d);
        break;
      case ArgKind::kInt:
        out += std::to_string(a.i);
        break;
      case ArgKind::kBool:
        out += a.b ? "True" : "False";
        break;
      case ArgKind::kIntList:
        out += fmt::format("[{}]", fmt::join(a.shape, ", "));
        break;
      case ArgKind::kDoubleList:
        out += fmt::format("[{}]", fmt::join(a.dlist, a.dlist + a.shape.size(), ", "));
        break;
      case ArgKind::kTensorList:
        out += fmt::format("TensorList[{}]", a.i);
        break;
      case ArgKind::kUndefinedTensor:
      case ArgKind::kNone:
        out += "None";
        break;
      default:
        out += "...";
        break;
    }
  }
  return out;
}

ProfileResult aggregate(const AggregateInput& in, TraceData* trace) {
  const ModuleTree& tree = *in.tree;
  const int num_modules = static_cast<int>(tree.nodes.size());
  ProfileResult r;
  r.timer = in.timer;
  r.problems = in.problems;
  std::vector<ModuleAcc> acc(num_modules);
  std::map<std::pair<int, uint32_t>, OpAcc> ops;  // (phase, name id)
  std::unordered_map<uint32_t, FormulaFn> formulas;
  std::map<std::string, uint64_t> formula_errors;  // message -> count
  const double s_per_tick = in.ns_per_tick * 1e-9;
  bool overflow = false;
  auto end_of = [&](const RawEvent& e) { return e.end_ns != 0 ? e.end_ns : in.stop_ns; };
  auto formula_for = [&](uint32_t id) -> const FormulaFn& {
    auto it = formulas.find(id);
    if (it == formulas.end()) it = formulas.emplace(id, find_formula(in.names->name(id))).first;
    return it->second;
  };
  auto effective = [&](int m) { return m >= 0 ? tree.nodes[m].effective : -1; };

  std::vector<bool> scoped(num_modules, false);
  for (const ThreadEvents* th : in.threads) {
    for (const ScopeRecord& s : th->scopes) {
      if (s.module >= 0 && !s.backward && tree.nodes[s.module].effective == s.module)
        scoped[s.module] = true;
    }
  }

  std::vector<MemSample> mem;

  // Pass 1: phases, and forward / recompute attribution by rules 1-3.
  std::vector<PerThread> per(in.threads.size());
  for (size_t t = 0; t < in.threads.size(); ++t) {
    const ThreadEvents& th = *in.threads[t];
    const size_t n = th.events.size();
    PerThread& pt = per[t];
    pt.phase.assign(n, Phase::kNone);
    pt.mod.assign(n, -1);
    for (size_t i = 0; i < n; ++i) {
      const RawEvent& e = th.events[i];
      if (e.kind != EventKind::kOp) continue;
      const int parent = e.parent;
      if (e.flags & kUnderCounted) {  // inherits everything from the op it is nested in
        if (parent >= 0) pt.mod[i] = pt.mod[parent];
        continue;
      }
      const ScopeRecord* scope = e.scope >= 0 ? &th.scopes[e.scope] : nullptr;
      Phase ph = Phase::kForward;
      if (e.flags & kStep) {
        ph = Phase::kStep;
      } else if (e.flags & kBackward) {
        const bool parent_re = parent >= 0 && pt.phase[parent] == Phase::kRecompute;
        ph = (e.seq_nr >= 0 || parent_re || (scope && scope->backward)) ? Phase::kRecompute
                                                                        : Phase::kBackward;
      }
      pt.phase[i] = ph;
      if (ph != Phase::kForward && ph != Phase::kRecompute) continue;
      int s = scope ? effective(scope->module) : -1;
      if (ph == Phase::kRecompute && scope && !scope->backward) s = -1;  // a forward scope
      int m = -1;
      if (e.owner >= 0) {
        for (int o : tree.owner_sets[e.owner]) {
          if (s < 0 || tree.is_ancestor_or_self(s, o)) {
            m = o;
            break;
          }
        }
        if (m < 0) m = s;
      } else if (s >= 0) {
        m = s;
      } else if (parent >= 0) {
        m = pt.mod[parent];
      }
      pt.mod[i] = effective(m);
    }
    // Rule 4 for forward ops: the lowest common ancestor of the attributed neighbours.
    std::vector<size_t> fwd;
    for (size_t i = 0; i < n; ++i) {
      if (pt.phase[i] == Phase::kForward) fwd.push_back(i);
    }
    std::vector<int> before(fwd.size(), -1), after(fwd.size(), -1);
    for (size_t j = 0, last = SIZE_MAX; j < fwd.size(); ++j) {
      before[j] = last == SIZE_MAX ? -1 : pt.mod[last];
      if (pt.mod[fwd[j]] >= 0) last = fwd[j];
    }
    for (size_t j = fwd.size(), last = SIZE_MAX; j-- > 0;) {
      after[j] = last == SIZE_MAX ? -1 : pt.mod[last];
      if (pt.mod[fwd[j]] >= 0) last = fwd[j];
    }
    for (size_t j = 0; j < fwd.size(); ++j) {
      int& m = pt.mod[fwd[j]];
      if (m < 0)
        m = (before[j] >= 0 && after[j] >= 0) ? tree.lowest_common_ancestor(before[j], after[j])
                                              : 0;
    }
  }

  // Pass 2: the autograd link. A backward node carries the sequence number of the forward op
  // that created it and that op's thread: key (forward thread, sequence number) -> module.
  struct Origin {
    int module;
    int thread;
    int event;
  };
  std::unordered_map<uint64_t, std::unordered_map<int64_t, Origin>> by_seq;
  for (size_t t = 0; t < in.threads.size(); ++t) {
    const ThreadEvents& th = *in.threads[t];
    auto& map = by_seq[th.thread_id];
    for (size_t i = 0; i < th.events.size(); ++i) {
      const RawEvent& e = th.events[i];
      const Phase ph = per[t].phase[i];
      // Recomputed forward ops create nodes too (the checkpointed segment's own backward). An op
      // covers the sequence numbers its nested (unrecorded) ops took; the outermost op wins.
      if (e.seq_nr < 0 || (ph != Phase::kForward && ph != Phase::kRecompute)) continue;
      const int64_t last = std::max(e.seq_end, e.seq_nr + 1);
      for (int64_t q = e.seq_nr; q < last; ++q) {
        map.emplace(q, Origin{per[t].mod[i], static_cast<int>(t), static_cast<int>(i)});
      }
    }
  }
  auto node_origin = [&](const RawEvent& node) -> const Origin* {
    if (node.seq_nr < 0) return nullptr;
    auto t = by_seq.find(node.fwd_thread);
    if (t == by_seq.end()) return nullptr;
    auto m = t->second.find(node.seq_nr);
    return m == t->second.end() ? nullptr : &m->second;
  };
  auto node_module = [&](const RawEvent& node) -> int {
    const Origin* o = node_origin(node);
    return o ? o->module : -1;
  };
  // The module and phase of recorded event `i` on thread `t` (after pass 3 has run for `t`): an
  // autograd node belongs to the module of its forward op; an op carries its own attribution.
  auto event_owner = [&](size_t t, size_t i) -> std::pair<int, Phase> {
    const RawEvent& e = in.threads[t]->events[i];
    const PerThread& pt = per[t];
    if (e.kind == EventKind::kBackwardNode) {
      const int nd = pt.node_of[i];
      return {nd >= 0 ? node_module(in.threads[t]->events[nd]) : -1, Phase::kBackward};
    }
    return {pt.mod[i], pt.phase[i] == Phase::kNone ? Phase::kForward : pt.phase[i]};
  };
  auto module_name = [&](int m) { return m >= 0 ? tree.nodes[m].name : std::string("(autograd)"); };
  auto span = [&](int thread, int64_t start, int64_t end, std::string name,
                  const char* cat) -> TraceData::Span& {
    TraceData::Span sp;
    sp.thread = thread;
    sp.start = start;
    sp.end = end;
    sp.name = std::move(name);
    sp.cat = cat;
    trace->spans.push_back(std::move(sp));
    return trace->spans.back();
  };
  auto module_span = [&](int thread, int m, int64_t start, int64_t end) {
    if (!trace) return;
    TraceData::Span& sp =
        span(thread, start, end,
             tree.nodes[m].type + (tree.nodes[m].name.empty() ? "" : " " + tree.nodes[m].name),
             "module");
    sp.module = tree.nodes[m].name;
    sp.phase = "forward";
  };

  // Pass 3: statistics.
  for (size_t t = 0; t < in.threads.size(); ++t) {
    const ThreadEvents& th = *in.threads[t];
    const std::vector<RawEvent>& ev = th.events;
    const size_t n = ev.size();
    PerThread& pt = per[t];
    if (n == 0 && th.scopes.empty() && th.steps.empty()) continue;
    ++r.threads;
    r.op_events += n;
    std::vector<int64_t> child_ns(n, 0);
    for (size_t i = 0; i < n; ++i) {
      if (ev[i].parent >= 0) child_ns[ev[i].parent] += end_of(ev[i]) - ev[i].start_ns;
    }
    // Backward ops belong to the module of their innermost enclosing autograd node. Ops that the
    // engine runs in a node's evaluate_function wrapper after the node itself (validate_outputs:
    // e.g. the reduction of a broadcast bias gradient) belong to that node too.
    std::vector<int>& node_of = pt.node_of;
    node_of.assign(n, -1);
    for (size_t i = 0; i < n; ++i) {
      const RawEvent& e = ev[i];
      const int p = e.parent;
      if (e.kind == EventKind::kBackwardNode && !(e.flags & kEngine)) {
        node_of[i] = static_cast<int>(i);
        if (p >= 0 && (ev[p].flags & kEngine)) node_of[p] = static_cast<int>(i);
      } else if (p >= 0) {
        node_of[i] = node_of[p];
      }
    }
    for (size_t i = 0; i < n; ++i) {
      if (pt.phase[i] == Phase::kBackward)
        pt.mod[i] = node_of[i] >= 0 ? node_module(ev[node_of[i]]) : -1;
    }

    std::vector<int64_t> last_seen(num_modules, -2), run_start(num_modules, 0),
        run_end(num_modules, 0);
    int64_t k = 0;
    int64_t bwd_start = -1, bwd_end = -1, fwd_start = -1, fwd_end = -1;
    const int tid = static_cast<int>(t);
    auto close_fwd = [&] {
      if (fwd_start >= 0 && trace)
        span(tid, fwd_start, fwd_end, "forward", "phase").phase = "forward";
      fwd_start = -1;
    };
    auto close_bwd = [&] {
      if (bwd_start < 0) return;
      r.bwd_latency_s += static_cast<double>(bwd_end - bwd_start) * s_per_tick;
      if (trace) span(tid, bwd_start, bwd_end, "backward", "phase").phase = "backward";
      bwd_start = -1;
    };
    for (size_t i = 0; i < n; ++i) {
      const RawEvent& e = ev[i];
      const int64_t end = end_of(e);
      const int64_t dur = end - e.start_ns;
      // Backward passes: spans of consecutive top-level backward events (forward ones likewise).
      if (e.parent < 0) {
        if (e.flags & kBackward) {
          close_fwd();
          if (bwd_start < 0) bwd_start = e.start_ns;
          bwd_end = std::max(bwd_end, end);
        } else {
          close_bwd();
          if (!(e.flags & kStep)) {
            if (fwd_start < 0) fwd_start = e.start_ns;
            fwd_end = std::max(fwd_end, end);
          } else {
            close_fwd();
          }
        }
      }
      if (trace) {
        const bool node = e.kind == EventKind::kBackwardNode;
        TraceData::Span& sp =
            span(tid, e.start_ns, end, in.names->name(e.name_id), node ? "autograd" : "op");
        if (node) {
          const int nd = node_of[i];
          sp.module = module_name(nd >= 0 ? node_module(ev[nd]) : -1);
          sp.phase = "backward";
          const Origin* o = (e.flags & kEngine) ? nullptr : node_origin(e);
          if (o != nullptr) {
            const RawEvent& f = in.threads[o->thread]->events[o->event];
            trace->flows.push_back(TraceData::Flow{o->thread, tid, f.start_ns, e.start_ns});
          }
        } else if (pt.phase[i] != Phase::kNone) {
          sp.module = module_name(pt.mod[i]);
          sp.phase = phase_name(pt.phase[i]);
        }
      }
      if (e.kind == EventKind::kBackwardNode) {
        r.has_backward = true;
        // Node time: the evaluate_function wrapper (node + output validation) when there is one.
        const bool wrapped =
            !(e.flags & kEngine) && e.parent >= 0 && (ev[e.parent].flags & kEngine);
        if (!wrapped) {
          int m = node_of[i] >= 0 ? node_module(ev[node_of[i]]) : -1;
          if (m < 0) {
            r.autograd_latency_s += static_cast<double>(dur) * s_per_tick;
          } else {
            for (int a = m; a >= 0; a = tree.nodes[a].parent) acc[a].bwd_ns += dur;
          }
        }
        ++k;
        continue;
      }
      const Phase ph = pt.phase[i];
      if (ph == Phase::kNone) continue;
      if (ph != Phase::kForward) ++k;  // breaks forward runs
      const int m = pt.mod[i];
      OpAcc& op = ops[{static_cast<int>(ph), e.name_id}];
      ++op.calls;
      op.ns += dur;
      op.has_formula = op.has_formula || (e.flags & kHasFormula);
      std::optional<FlopCount> fc;
      DType dt = DType::kUnknown;
      if ((e.flags & kCounted) && formula_for(e.name_id)) {
        std::vector<ArgView> args = arg_views(th, e);
        try {
          fc = formula_for(e.name_id)(OpInputs(args.data(), args.size()));
          if (!fc) ++op.declined;
        } catch (const std::exception& ex) {
          ++formula_errors[fmt::format("{}: {}", in.names->name(e.name_id), ex.what())];
        }
        dt = op_dtype(args);
      }
      if (trace) {
        TraceData::Span& sp = trace->spans.back();
        if (fc) sp.flops = static_cast<int64_t>(fc->flops);
        if (e.flags & kCounted) sp.inputs = format_args(arg_views(th, e));
      }
      if (fc) {
        add_saturating(op.flops, fc->flops, overflow);
        add_saturating(op.macs, fc->macs, overflow);
      } else {
        const int64_t self = dur - child_ns[i];
        op.uncovered_ns += self;
        if (ph == Phase::kForward) r.no_formula_s += static_cast<double>(self) * s_per_tick;
      }
      switch (ph) {
        case Phase::kForward:
          if (fc) {
            add_saturating(r.flops, fc->flops, overflow);
            add_saturating(r.macs, fc->macs, overflow);
            add_saturating(r.flops_by_dtype[static_cast<size_t>(dt)], fc->flops, overflow);
          }
          for (int a = m; a >= 0; a = tree.nodes[a].parent) {
            if (fc) {
              add_saturating(acc[a].flops, fc->flops, overflow);
              add_saturating(acc[a].macs, fc->macs, overflow);
              add_saturating(acc[a].by_dtype[static_cast<size_t>(dt)], fc->flops, overflow);
            } else {
              ++acc[a].na_ops;
            }
            if (scoped[a]) continue;
            if (last_seen[a] == k - 1) {
              run_end[a] = std::max(run_end[a], end);
            } else {
              if (last_seen[a] >= 0) {
                acc[a].ns += run_end[a] - run_start[a];
                module_span(tid, a, run_start[a], run_end[a]);
              }
              ++acc[a].calls;
              run_start[a] = e.start_ns;
              run_end[a] = end;
            }
            last_seen[a] = k;
          }
          ++k;
          break;
        case Phase::kBackward:
          if (!fc) break;
          add_saturating(r.bwd_flops, fc->flops, overflow);
          add_saturating(r.bwd_macs, fc->macs, overflow);
          if (m < 0) add_saturating(r.autograd_flops, fc->flops, overflow);
          for (int a = m; a >= 0; a = tree.nodes[a].parent) {
            add_saturating(acc[a].bwd_flops, fc->flops, overflow);
            add_saturating(acc[a].bwd_macs, fc->macs, overflow);
          }
          break;
        case Phase::kRecompute:
          if (!fc) break;
          add_saturating(r.recompute_flops, fc->flops, overflow);
          add_saturating(r.recompute_macs, fc->macs, overflow);
          for (int a = m; a >= 0; a = tree.nodes[a].parent) {
            add_saturating(acc[a].re_flops, fc->flops, overflow);
            add_saturating(acc[a].re_macs, fc->macs, overflow);
          }
          break;
        case Phase::kStep:
          r.has_step = true;
          if (fc) add_saturating(r.step_flops, fc->flops, overflow);
          break;
        default:
          break;
      }
    }
    close_bwd();
    close_fwd();
    for (int a = 0; a < num_modules; ++a) {
      if (last_seen[a] >= 0) {
        acc[a].ns += run_end[a] - run_start[a];
        module_span(tid, a, run_start[a], run_end[a]);
      }
    }
    for (const ScopeRecord& s : th.scopes) {
      if (s.module < 0 || s.backward || !scoped[s.module]) continue;
      const int64_t exit = s.exit_ns != 0 ? s.exit_ns : in.stop_ns;
      ++acc[s.module].calls;
      acc[s.module].ns += exit - s.enter_ns;
      module_span(tid, s.module, s.enter_ns, exit);
    }
    // Memory: each allocation or free belongs to the op that was open on its thread.
    for (const MemRecord& m : th.memory) {
      MemSample x;
      x.time = m.time_ns;
      x.bytes = m.bytes;
      x.reserved = m.total_reserved;
      if (m.op >= 0 && static_cast<size_t>(m.op) < n) {
        x.name = ev[m.op].name_id;
        std::tie(x.module, x.phase) = event_owner(t, static_cast<size_t>(m.op));
      } else {
        const ScopeRecord* sc = m.scope >= 0 ? &th.scopes[m.scope] : nullptr;
        x.phase = sc && sc->backward ? Phase::kRecompute : Phase::kForward;
        x.module = sc ? effective(sc->module) : 0;
      }
      if (x.phase == Phase::kForward) {
        for (int a = x.module; a >= 0; a = tree.nodes[a].parent) {
          if (x.bytes > 0) acc[a].mem_alloc += x.bytes;
          acc[a].mem_held += x.bytes;
        }
      }
      mem.push_back(x);
    }
    for (const StepRecord& s : th.steps) {
      r.has_step = true;
      const int64_t end = s.end_ns != 0 ? s.end_ns : in.stop_ns;
      r.step_latency_s += static_cast<double>(end - s.start_ns) * s_per_tick;
      if (trace) span(tid, s.start_ns, end, "step", "phase").phase = "step";
    }
  }

  // GPU activity: each record belongs to the op that launched it (external correlation id).
  std::vector<int64_t> gpu_ns(num_modules, 0), gpu_first(num_modules, INT64_MAX),
      gpu_last(num_modules, INT64_MIN);
  std::vector<std::map<std::string, KernelAcc>> gpu_kernels(num_modules);
  if (in.gpu != nullptr) {
    const GpuCollection& g = *in.gpu;
    GpuStats& gs = r.gpu;
    gs.backend = g.backend;
    gs.reason = g.reason;
    gs.device = g.device;
    gs.measured = !g.records.empty();
    std::map<std::string, KernelAcc> all;
    int64_t first = INT64_MAX, last = INT64_MIN, unattributed = 0;
    for (const GpuRecord& k : g.records) {
      const int64_t dur = k.end_ns - k.start_ns;  // device ns
      ++gs.kernels;
      gs.busy_s += static_cast<double>(dur) * 1e-9;
      first = std::min(first, k.start_ns);
      last = std::max(last, k.end_ns);
      KernelAcc& ka = all[k.name];
      ++ka.calls;
      ka.ns += dur;
      uint32_t t = 0, i = 0;
      int m = -1;
      const RawEvent* launcher = nullptr;
      if (split_external_id(k.external_id, &t, &i) && t < in.threads.size() &&
          i < in.threads[t]->events.size()) {
        launcher = &in.threads[t]->events[i];
        m = event_owner(t, i).first;
      }
      if (m < 0) unattributed += dur;
      for (int a = m; a >= 0; a = tree.nodes[a].parent) {
        gpu_ns[a] += dur;
        gpu_first[a] = std::min(gpu_first[a], k.start_ns);
        gpu_last[a] = std::max(gpu_last[a], k.end_ns);
        KernelAcc& mk = gpu_kernels[a][k.name];
        ++mk.calls;
        mk.ns += dur;
      }
      if (trace) {
        TraceData::GpuSpan sp;
        sp.device = k.device;
        sp.stream = k.stream;
        auto to_host = [&](int64_t ns) {
          return g.host_origin +
                 static_cast<int64_t>(static_cast<double>(ns - g.gpu_origin_ns) / in.ns_per_tick);
        };
        sp.start = to_host(k.start_ns);
        sp.end = to_host(k.end_ns);
        sp.name = k.name;
        sp.module = module_name(m);
        if (launcher != nullptr) {
          sp.launcher_thread = static_cast<int>(t);
          sp.launcher_start = launcher->start_ns;
        }
        trace->gpu.push_back(std::move(sp));
      }
    }
    if (gs.measured) gs.span_s = static_cast<double>(last - first) * 1e-9;
    gs.unattributed_s = static_cast<double>(unattributed) * 1e-9;
    gs.top_kernels = top_kernels(all, 10, 1e-9);
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
    s.bwd_flops = acc[t].bwd_flops;
    s.bwd_macs = acc[t].bwd_macs;
    s.bwd_latency_s = static_cast<double>(acc[t].bwd_ns) * s_per_tick;
    s.recompute_flops = acc[t].re_flops;
    s.recompute_macs = acc[t].re_macs;
    s.fwd_alloc_bytes = acc[t].mem_alloc;
    s.fwd_held_bytes = acc[t].mem_held;
    s.gpu_busy_s = static_cast<double>(gpu_ns[t]) * 1e-9;
    s.gpu_span_s = gpu_ns[t] > 0 ? static_cast<double>(gpu_last[t] - gpu_first[t]) * 1e-9 : 0.0;
    s.top_kernels = top_kernels(gpu_kernels[t], 5, 1e-9);
    if (s.parent >= 0) r.modules[s.parent].children.push_back(remap[t]);
    r.modules.push_back(std::move(s));
  }
  r.params = tree.params;
  r.trainable_params = tree.trainable_params;
  r.param_bytes = tree.param_bytes;
  r.param_bytes_by_dtype = tree.param_bytes_by_dtype;
  r.duration_s = r.modules.empty() ? 0.0 : r.modules[0].latency_s;

  // The footprint: all threads' records merged by time, net bytes since the profile started.
  if (in.track_memory) {
    MemoryStats& ms = r.memory;
    ms.tracked = true;
    std::stable_sort(mem.begin(), mem.end(),
                     [](const MemSample& a, const MemSample& b) { return a.time < b.time; });
    int64_t in_use = 0;
    const int64_t t0 = mem.empty() ? 0 : mem.front().time;
    ms.trace.reserve(mem.size());
    for (const MemSample& x : mem) {
      in_use += x.bytes;
      if (trace) trace->memory.emplace_back(x.time, in_use);
      (x.bytes >= 0 ? ms.allocations : ms.frees) += 1;
      MemorySample sample;
      sample.time_s = static_cast<double>(x.time - t0) * s_per_tick;
      sample.bytes = in_use;
      sample.reserved = x.reserved;
      sample.op = x.name == UINT32_MAX ? "" : in.names->name(x.name);
      sample.module = x.module >= 0 ? tree.nodes[x.module].name : "(autograd)";
      sample.phase = phase_name(x.phase);
      if (in_use > ms.peak_bytes) {
        ms.peak_bytes = in_use;
        ms.peak_op = sample.op;
        ms.peak_module = sample.module;
        ms.peak_phase = sample.phase;
      }
      if (x.phase == Phase::kForward) ms.fwd_peak_bytes = std::max(ms.fwd_peak_bytes, in_use);
      ms.peak_reserved_bytes = std::max(ms.peak_reserved_bytes, x.reserved);
      ms.trace.push_back(std::move(sample));
    }
    ms.final_bytes = in_use;
  }

  for (auto& [key, a] : ops) {
    OpStats s;
    s.name = in.names->name(key.second);
    s.phase = phase_name(static_cast<Phase>(key.first));
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
