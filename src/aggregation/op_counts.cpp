// Decoding captured arguments and evaluating the formulas, once per op (see op_counts.h).
#include "aggregation/op_counts.h"

#include <algorithm>
#include <exception>
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
      case ArgKind::kTensor: {
        v.shape = IntSpan(thread.dims.data() + a.offset, a.count);
        v.repeated = (a.tensor_flags & kArgRepeated) != 0;
        v.contiguous = (a.tensor_flags & kArgStrided) == 0;
        if (a.tensor_flags & kArgExpanded) {
          v.extent = static_cast<uint64_t>(std::max<int64_t>(0, thread.dims[a.offset + a.count]));
        } else {
          uint64_t n = 1;  // saturating: bytes of absurd (meta) shapes never wrap
          for (int64_t d : v.shape) {
            if (__builtin_mul_overflow(n, static_cast<uint64_t>(std::max<int64_t>(0, d)), &n))
              n = UINT64_MAX;
          }
          v.extent = n;
        }
        break;
      }
      case ArgKind::kIntList:
        v.shape = IntSpan(thread.dims.data() + a.offset, a.count);
        break;
      case ArgKind::kTensorList:
        v.i = a.count;
        v.extent = static_cast<uint64_t>(std::max<int64_t>(0, thread.dims[a.offset]));
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

OpCounts count_ops(const std::vector<const ThreadEvents*>& threads, const NameLookup& names) {
  OpCounts out;
  std::unordered_map<uint32_t, FormulaFn> formulas;  // by name id
  out.threads.resize(threads.size());
  for (size_t t = 0; t < threads.size(); ++t) {
    const ThreadEvents& th = *threads[t];
    std::vector<OpCount>& counts = out.threads[t];
    counts.resize(th.events.size());
    for (size_t i = 0; i < th.events.size(); ++i) {
      const RawEvent& e = th.events[i];
      if (!(e.flags & kCounted)) continue;
      auto it = formulas.find(e.name_id);
      if (it == formulas.end())
        it = formulas.emplace(e.name_id, find_formula(names.name(e.name_id))).first;
      const FormulaFn& f = it->second;
      if (!f) continue;
      OpCount& c = counts[i];
      const std::vector<ArgView> args = arg_views(th, e);
      c.dtype = op_dtype(args);
      try {
        std::optional<FlopCount> fc = f(OpInputs(args.data(), args.size()));
        c.state = fc ? OpCount::kCounted : OpCount::kDeclined;
        if (fc) c.fc = *fc;
      } catch (const std::exception& ex) {
        c.state = OpCount::kFailed;
        ++out.errors[fmt::format("{}: {}", names.name(e.name_id), ex.what())];
      }
    }
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

}  // namespace flopsprof::detail
