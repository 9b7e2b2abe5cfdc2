// Decoding captured arguments and evaluating the formulas, once per op (see op_counts.h).
#include "aggregation/op_counts.h"

#include <algorithm>
#include <exception>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "formulas/common.h"
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
      case ArgKind::kTensor: {
        v.shape = IntSpan(thread.dims.data() + a.offset, a.count);
        v.repeated = (a.tensor_flags & kArgRepeated) != 0;
        v.contiguous = (a.tensor_flags & kArgStrided) == 0;
        if (a.tensor_flags & kArgExpanded) {
          v.extent = static_cast<uint64_t>(
              std::max<int64_t>(0, thread.dims[trailing_at(a, kArgExpanded)]));
        } else {
          uint64_t n = 1;  // saturating: bytes of absurd (meta) shapes never wrap
          for (int64_t d : v.shape) {
            if (__builtin_mul_overflow(n, static_cast<uint64_t>(std::max<int64_t>(0, d)), &n))
              n = UINT64_MAX;
          }
          v.extent = n;
        }
        if (a.tensor_flags & kArgMaskKept) {
          v.kept = static_cast<uint64_t>(
              std::max<int64_t>(0, thread.dims[trailing_at(a, kArgMaskKept)]));
        }
        break;
      }
      case ArgKind::kIntList:
        v.shape = IntSpan(thread.dims.data() + a.offset, a.count);
        break;
      case ArgKind::kTensorList:
        v.i = a.count;
        v.extent = static_cast<uint64_t>(std::max<int64_t>(0, thread.dims[a.offset]));
        if (a.tensor_flags & kArgElementNumels)
          v.shape = IntSpan(thread.dims.data() + a.offset + 1, a.count);
        break;
      case ArgKind::kDoubleList: {
        // The values are doubles (`dlist`); `shape` only carries their count.
        static const int64_t kZeros[64] = {};
        v.shape = IntSpan(kZeros, std::min<size_t>(a.count, 64));
        v.dlist = thread.doubles.data() + a.offset;
        break;
      }
      case ArgKind::kDouble:
        v.d = a.d;
        break;
      case ArgKind::kInt:
      case ArgKind::kString:
        v.i = a.i;
        break;
      default:
        break;
    }
  }
  return views;
}

namespace {

// The dtype an op computes in: its first floating-point tensor's, else its first tensor's.
DType op_dtype(const std::vector<ArgView>& args) {
  DType first = DType::kUnknown;
  for (const ArgView& a : args) {
    if (a.kind != ArgKind::kTensor) continue;
    if (is_floating(a.dtype)) return a.dtype;
    if (first == DType::kUnknown) first = a.dtype;
  }
  return first;
}

}  // namespace

namespace {

// The bytes of one op that counts bytes: its rule's, else the generic ones (in-place names read
// their inputs and write self; _foreach_ ops write their first list), else its reads alone.
void count_bytes(const std::string& name, const BytesFn& rule, bool metadata,
                 const std::vector<ArgView>& args, OpCount& c) {
  c.bytes = OpCount::kBytesKnown;
  if (metadata) return;  // views and metadata: nothing moves (and nothing was captured)
  const OpInputs in(args.data(), args.size());
  std::optional<ByteCount> b = rule ? rule(in) : std::nullopt;
  if (!b && !rule && !args.empty()) {
    const bool in_place_name =
        name.size() > 1 && name.back() == '_' && name[name.size() - 2] != '_';
    if (name.rfind("aten::_foreach_", 0) == 0) {
      b = ByteCount{input_bytes(in), arg_bytes(in, 0)};
    } else if (in_place_name && in.is_tensor(0)) {
      b = in_place(in, 0);
    }
  }
  if (b) {
    c.bytes_read = b->read;
    c.bytes_written = b->written;
  } else {
    c.bytes_read = input_bytes(in);
    c.bytes = OpCount::kWrittenUnknown;
  }
}

}  // namespace

Tf32Family tf32_family(const std::string& op) {
  static const std::set<std::string> cublas = {
      "aten::mm",     "aten::addmm",  "aten::bmm",    "aten::baddbmm",
      "aten::addbmm", "aten::matmul", "aten::linear", "aten::_addmm_activation"};
  if (cublas.count(op) != 0) return Tf32Family::kCublas;
  if (op == "aten::_cudnn_rnn" || op == "aten::_cudnn_rnn_backward") return Tf32Family::kCudnn;
  if (op.rfind("aten::conv", 0) == 0 || op.rfind("aten::_conv", 0) == 0 ||
      op.rfind("aten::cudnn_conv", 0) == 0)
    return Tf32Family::kCudnn;  // convolution, _convolution, conv2d, conv_transpose2d, ...
  return Tf32Family::kNone;
}

namespace {

// Each op name's rules, looked up once per profile.
class RuleCache {
 public:
  struct Rules {
    FormulaFn formula;
    BytesFn bytes;
    bool metadata = false;
    bool tf32 = false;  ///< its fp32 work runs on TF32 tensor cores in this profile
  };
  RuleCache(const NameLookup& names, Tf32Use tf32) : names_(names), tf32_(tf32) {}
  const Rules& of(uint32_t id) {
    auto it = rules_.find(id);
    if (it == rules_.end()) {
      const std::string& n = names_.name(id);
      const Tf32Family f = tf32_family(n);
      const bool on_tf32 = (f == Tf32Family::kCudnn && tf32_.convolutions) ||
                           (f == Tf32Family::kCublas && tf32_.matmuls);
      it = rules_
               .emplace(id,
                        Rules{find_formula(n), find_bytes_rule(n), formula_is_constant(n), on_tf32})
               .first;
    }
    return it->second;
  }

 private:
  const NameLookup& names_;
  const Tf32Use tf32_;
  std::unordered_map<uint32_t, Rules> rules_;  // by name id
};

// Which ops have a FLOP-counting op inside them (children follow their parents). A view or
// metadata op (empty, resize_: a constant formula, no arguments read) moves no bytes, so it does
// not take the bytes from the op around it: nll_loss2d_forward, whose kernel resizes its output,
// keeps its own.
std::vector<uint8_t> counts_inside(const std::vector<RawEvent>& ev, RuleCache& rules) {
  std::vector<uint8_t> inside(ev.size(), 0);
  for (size_t i = ev.size(); i-- > 0;) {
    const int32_t p = ev[i].parent;
    if (p < 0) continue;
    const bool moves = (ev[i].flags & kCounted) && !rules.of(ev[i].name_id).metadata;
    if (moves || inside[i]) inside[p] = 1;
  }
  return inside;
}

// One op's FLOPs from its formula (the causal convention's masked work taken out); a formula
// that throws is counted in `errors` by message.
void count_flops(const RuleCache::Rules& r, const std::vector<ArgView>& args,
                 const std::string& name, AttentionConvention convention, OpCount& c,
                 std::map<std::string, uint64_t>& errors) {
  try {
    std::optional<FlopCount> fc = r.formula(OpInputs(args.data(), args.size()));
    c.state = fc ? OpCount::kCounted : OpCount::kDeclined;
    if (fc) c.fc = *fc;
    if (fc && convention == AttentionConvention::kCausal) {
      c.fc.flops -= std::min(c.fc.flops, c.fc.masked_flops);
      c.fc.macs -= std::min(c.fc.macs, c.fc.masked_macs);
    }
  } catch (const std::exception& ex) {
    c.state = OpCount::kFailed;
    ++errors[fmt::format("{}: {}", name, ex.what())];
  }
}

// Writes no rule derives: the bytes allocated while the op (or an op inside it) ran, but kernel
// workspace (a block freed, matched by address, before the op that allocated it returns: as the
// memory statistics tell it apart) is no output.
void writes_from_allocations(const ThreadEvents& th, std::vector<OpCount>& counts) {
  const std::vector<RawEvent>& ev = th.events;
  std::vector<uint8_t> workspace(th.memory.size(), 0);
  std::map<std::pair<int8_t, uint64_t>, size_t> live;  // block -> its allocation's record
  for (size_t k = 0; k < th.memory.size(); ++k) {
    const MemRecord& m = th.memory[k];
    if (m.address == 0 || m.bytes == 0) continue;
    const std::pair<int8_t, uint64_t> block{m.device_type, m.address};
    if (m.bytes > 0) {
      live[block] = k;
      continue;
    }
    auto it = live.find(block);
    if (it == live.end()) continue;
    const int32_t op = th.memory[it->second].op;
    for (int32_t e = m.op; op >= 0 && e >= op && static_cast<size_t>(e) < ev.size();
         e = ev[e].parent) {
      if (e == op) {
        workspace[it->second] = 1;
        break;
      }
    }
    live.erase(it);
  }
  for (size_t k = 0; k < th.memory.size(); ++k) {
    const MemRecord& m = th.memory[k];
    if (workspace[k]) continue;
    if (m.bytes <= 0 || m.op < 0 || static_cast<size_t>(m.op) >= ev.size()) continue;
    int32_t i = m.op;
    while (i >= 0 && !counts[i].has_bytes()) i = ev[i].parent;
    if (i < 0) continue;
    OpCount& c = counts[i];
    if (c.bytes == OpCount::kWrittenUnknown) c.bytes = OpCount::kWrittenFromAllocations;
    if (c.bytes == OpCount::kWrittenFromAllocations) {
      c.bytes_written = sat_add(c.bytes_written, static_cast<uint64_t>(m.bytes));
    }
  }
}

}  // namespace

OpCounts count_ops(const std::vector<const ThreadEvents*>& threads, const NameLookup& names,
                   AttentionConvention convention, Tf32Use tf32) {
  OpCounts out;
  RuleCache rules(names, tf32);
  out.threads.resize(threads.size());
  for (size_t t = 0; t < threads.size(); ++t) {
    const ThreadEvents& th = *threads[t];
    const std::vector<RawEvent>& ev = th.events;
    std::vector<OpCount>& counts = out.threads[t];
    counts.resize(ev.size());
    const std::vector<uint8_t> inside = counts_inside(ev, rules);
    for (size_t i = 0; i < ev.size(); ++i) {
      const RawEvent& e = ev[i];
      if (e.kind != EventKind::kOp || (e.flags & kUnderCounted)) continue;
      const bool counted = (e.flags & kCounted) != 0;
      const int32_t p = e.parent;
      const bool outermost = p < 0 || ev[p].kind != EventKind::kOp;
      const bool byte_op = counted || (!inside[i] && (outermost || inside[p]));
      if (!byte_op) continue;
      const RuleCache::Rules& r = rules.of(e.name_id);
      OpCount& c = counts[i];
      const std::vector<ArgView> args = arg_views(th, e);
      c.dtype = op_dtype(args);
      if (c.dtype == DType::kFloat32 && r.tf32) c.dtype = DType::kTFloat32;
      count_bytes(names.name(e.name_id), r.bytes, r.metadata, args, c);
      if (counted && r.formula)
        count_flops(r, args, names.name(e.name_id), convention, c, out.errors);
    }
    writes_from_allocations(th, counts);
  }
  return out;
}

std::string format_args(const std::vector<ArgView>& args) {
  std::string out;
  for (const ArgView& a : args) {
    if (!out.empty()) out += ", ";
    switch (a.kind) {
      case ArgKind::kTensor: {
        out += "T<";
        for (size_t d = 0; d < a.shape.size(); ++d)
          out += (d ? "x" : "") + std::to_string(a.shape[d]);
        out += (a.shape.empty() ? "" : "x");
        out += dtype_name(a.dtype);  // the one name of each dtype ("fp32"), as everywhere
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

std::vector<DType> OpCounts::flop_dtypes() const {
  std::vector<DType> dtypes;
  for (const auto& t : threads) {
    for (const OpCount& c : t) {
      if (c.counted() && c.fc.flops > 0 && is_floating(c.dtype) &&
          std::find(dtypes.begin(), dtypes.end(), c.dtype) == dtypes.end())
        dtypes.push_back(c.dtype);
    }
  }
  return dtypes;
}

}  // namespace flopsprof::detail
