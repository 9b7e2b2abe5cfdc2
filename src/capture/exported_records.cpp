// An exported program's graph as a run's records (capture/exported_records.h).
#include "capture/exported_records.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/function_schema.h>
#include <torch/csrc/jit/frontend/function_schema_parser.h>
#include <torch/version.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "flopsprof/error.h"
#include "formulas/common.h"
#include "formulas/registry.h"

namespace flopsprof::detail {
namespace {

// Schemas of ops that exported programs carry and LibTorch 1.13's registry lacks (as PyTorch 2.6
// declares them in aten/src/ATen/native/native_functions.yaml), so that their arguments land at
// their positions there too.
const char* const kSchemasLibTorchMayLack[] = {
    "aten::scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? "
    "attn_mask=None, float dropout_p=0.0, bool is_causal=False, *, float? scale=None, bool "
    "enable_gqa=False) -> Tensor",
    "aten::_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, Tensor? bias, "
    "Tensor running_mean, Tensor running_var, float momentum, float eps) -> (Tensor, Tensor, "
    "Tensor)",
    "aten::_native_batch_norm_legit.no_stats(Tensor input, Tensor? weight, Tensor? bias, bool "
    "training, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
    "aten::_native_batch_norm_legit_functional(Tensor input, Tensor? weight, Tensor? bias, Tensor "
    "running_mean, Tensor running_var, bool training, float momentum, float eps) -> (Tensor, "
    "Tensor, Tensor, Tensor, Tensor)",
    "aten::rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, float? "
    "eps=None) -> Tensor",
    "aten::_safe_softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor",
};

std::optional<c10::FunctionSchema> schema_of(const std::string& op, const std::string& overload) {
  auto handle = c10::Dispatcher::singleton().findSchema({op, overload});
  if (handle) return handle->schema();
  for (const char* s : kSchemasLibTorchMayLack) {
    c10::FunctionSchema f = torch::jit::parseSchema(s);
    if (f.name() == op && f.overload_name() == overload) return f;
  }
  return std::nullopt;
}

// Not ops a run would dispatch: export's size queries and runtime asserts.
bool is_export_bookkeeping(const std::string& op) {
  return op.rfind("aten::sym_", 0) == 0 || op.rfind("aten::_assert", 0) == 0 ||
         op == "aten::_functional_assert_async" || op == "aten::_functional_sym_constrain_range" ||
         op == "aten::_functional_sym_constrain_range_for_size";
}

uint64_t elements(const std::vector<int64_t>& sizes) {
  uint64_t n = 1;
  for (int64_t s : sizes) n = checked_mul(n, static_cast<uint64_t>(s));
  return n;
}

class Builder {
 public:
  Builder(const ExportedProgram& p, const std::string& name) : p_(p), name_(name) {}

  ExportedRecords build() {
    build_tree();
    out_.thread.thread_id = 1;
    enter(0);
    for (const ExportedNode& n : p_.nodes) {
      if (n.op.empty()) continue;  // getitem and other Python callables: no op
      if (n.op.rfind("higher_order::", 0) == 0) ++higher_order_[n.op];
      if (is_export_bookkeeping(n.op)) continue;
      add_node(n);
    }
    ++tick_;
    close_to(0);
    out_.stop_tick = tick_ + 1;
    add_problems();
    for (const std::string& t : p_.user_inputs) {
      auto it = p_.tensors.find(t);
      if (it == p_.tensors.end()) {
        out_.inputs.push_back("non-tensor");
        continue;
      }
      out_.inputs.push_back(
          fmt::format("{}[{}]", dtype_name(it->second.dtype), fmt::join(it->second.sizes, ", ")));
    }
    return std::move(out_);
  }

 private:
  // Closes the scopes deeper than `depth`.
  void close_to(size_t depth) {
    while (open_.size() > depth) {
      out_.thread.scopes[open_records_.back()].exit_tick = tick_;
      open_.pop_back();
      open_records_.pop_back();
    }
  }

  // Opens a scope of `module` inside the open ones.
  void enter(int module) {
    ThreadEvents& th = out_.thread;
    ScopeRecord s;
    s.module = module;
    s.parent = open_records_.empty() ? -1 : open_records_.back();
    s.enter_tick = tick_;
    s.exact = true;
    s.window = module == 0;
    th.scopes.push_back(s);
    open_.push_back(module);
    open_records_.push_back(static_cast<int32_t>(th.scopes.size() - 1));
  }

  // A node's op, in the scopes of its module chain (the root, then its stack's modules), with
  // its arguments in its schema's order.
  void add_node(const ExportedNode& n) {
    ThreadEvents& th = out_.thread;
    std::vector<int> chain{0};
    for (const auto& [path, type] : n.modules) chain.push_back(index_.at(path));
    size_t common = 0;
    while (common < open_.size() && common < chain.size() && open_[common] == chain[common])
      ++common;
    ++tick_;
    close_to(common);
    for (size_t k = common; k < chain.size(); ++k) enter(chain[k]);
    ++tick_;
    RawEvent e;
    e.name_id = out_.names.id(n.op);
    e.start_tick = e.end_tick = tick_;
    e.scope = open_records_.back();
    e.args_begin = static_cast<uint32_t>(th.args.size());
    if (find_formula(n.op)) e.flags |= kCounted;
    put_arguments(n);
    const size_t count = th.args.size() - e.args_begin;
    if (count > std::numeric_limits<uint16_t>::max())
      throw Error(name_ + ": the node " + n.target + " has more arguments than a record holds");
    e.args_count = static_cast<uint16_t>(count);
    th.events.push_back(e);
  }

  // A node's arguments: in its schema's order with defaults for those left out, or (an op not in
  // this LibTorch's registry) in the order saved.
  void put_arguments(const ExportedNode& n) {
    const bool higher_order = n.op.rfind("higher_order::", 0) == 0;
    const std::optional<c10::FunctionSchema> schema =
        higher_order ? std::nullopt : schema_of(n.op, n.overload);
    std::set<std::string> seen;
    if (!schema) {
      if (!higher_order) ++no_schema_[n.op + (n.overload.empty() ? "" : "." + n.overload)];
      for (const ExportedArg& a : n.inputs) put(a, seen);
      return;
    }
    for (const c10::Argument& a : schema->arguments()) {
      auto it = std::find_if(n.inputs.begin(), n.inputs.end(),
                             [&](const ExportedArg& x) { return x.name == a.name(); });
      if (it != n.inputs.end()) {
        put(*it, seen);
      } else {
        put_default(a);
      }
    }
  }

  // What the records cannot count: ops not in the registry, higher-order ops' subgraphs.
  void add_problems() {
    for (const auto& [op, calls] : no_schema_) {
      out_.problems.push_back(fmt::format(
          "exported program: {} ({} call(s)) is not in this LibTorch's op registry (LibTorch {}): "
          "its arguments were taken in the order saved, defaults left out; its count may be n/a "
          "or wrong (profile it with the LibTorch the program was exported from)",
          op, calls, TORCH_VERSION));
    }
    for (const auto& [op, calls] : higher_order_) {
      out_.problems.push_back(fmt::format(
          "exported program: the higher-order op {} ({} call(s)): the ops of its subgraphs are not "
          "counted (listed as an op without a formula)",
          op, calls));
    }
  }

  static std::string short_type(const std::string& qualified) {
    const size_t dot = qualified.rfind('.');
    return dot == std::string::npos ? qualified : qualified.substr(dot + 1);
  }

  // Modules by path: every path of the stacks, every parameter's module, and their dotted
  // ancestors (a ModuleList has no forward, so no stack names it), children in the order the
  // graph first reaches them.
  void build_tree() {
    struct Pending {
      std::string type;
      std::vector<std::string> children;
    };
    std::map<std::string, Pending> nodes;
    nodes[""].type = p_.root_type.empty() ? "ExportedProgram" : short_type(p_.root_type);
    auto add = [&](const std::string& path, const std::string& type, auto& self) -> void {
      auto it = nodes.find(path);
      if (it != nodes.end()) {
        if (it->second.type.empty() && !type.empty()) it->second.type = short_type(type);
        return;
      }
      const size_t dot = path.rfind('.');
      const std::string parent = dot == std::string::npos ? "" : path.substr(0, dot);
      self(parent, "", self);
      nodes[path].type = type.empty() ? "" : short_type(type);
      nodes[parent].children.push_back(path);
    };
    for (const ExportedNode& n : p_.nodes) {
      for (const auto& [path, type] : n.modules) add(path, type, add);
    }
    for (const ExportedParameter& q : p_.parameters) {
      const size_t dot = q.fqn.rfind('.');
      add(dot == std::string::npos ? "" : q.fqn.substr(0, dot), "", add);
    }
    ModuleTree& tree = out_.tree;
    auto emit = [&](const std::string& path, int parent, auto& self) -> void {
      ModuleNode m;
      m.name = path;
      m.type = nodes[path].type.empty() ? "Module" : nodes[path].type;
      m.parent = parent;
      const int me = static_cast<int>(tree.nodes.size());
      index_[path] = me;
      tree.nodes.push_back(std::move(m));
      for (const std::string& c : nodes[path].children) self(c, me, self);
    };
    emit("", -1, emit);
    // Each tensor once per module holding it in its subtree (tied weights: one tensor under two
    // names, ExportedParameter::same_as), as a run counts shared parameters.
    auto module_of = [&](const ExportedParameter& q) {
      const size_t dot = q.fqn.rfind('.');
      return index_.at(dot == std::string::npos ? "" : q.fqn.substr(0, dot));
    };
    std::vector<std::vector<int>> holders(p_.parameters.size());  // by the tensor's first name
    for (size_t i = 0; i < p_.parameters.size(); ++i) {
      const ExportedParameter& q = p_.parameters[i];
      int first = static_cast<int>(i);
      while (p_.parameters[first].same_as >= 0 && p_.parameters[first].same_as < first)
        first = p_.parameters[first].same_as;
      for (int a = module_of(q); a >= 0; a = tree.nodes[a].parent) {
        tree.nodes[a].tensors += 1;
        std::vector<int>& h = holders[first];
        if (std::find(h.begin(), h.end(), a) == h.end()) h.push_back(a);
      }
    }
    for (size_t i = 0; i < p_.parameters.size(); ++i) {
      const ExportedParameter& q = p_.parameters[i];
      if (q.buffer || holders[i].empty()) continue;
      const ExportedTensor& t = p_.tensors.at(q.tensor);
      const uint64_t numel = elements(t.sizes);
      const uint64_t bytes = checked_mul(numel, element_bytes(t.dtype));
      for (int a : holders[i]) {
        tree.nodes[a].params += numel;
        if (t.requires_grad) tree.nodes[a].trainable_params += numel;
        tree.nodes[a].param_bytes += bytes;
      }
      tree.param_bytes_by_dtype[static_cast<size_t>(t.dtype)] += bytes;
    }
    tree.finalize();
    tree.params = tree.nodes[0].params;
    tree.trainable_params = tree.nodes[0].trainable_params;
    tree.param_bytes = tree.nodes[0].param_bytes;
  }

  void put_tensor(ArgRecord& r, const std::string& tname, std::set<std::string>& seen) {
    ThreadEvents& th = out_.thread;
    const ExportedTensor& t = p_.tensors.at(tname);
    r.kind = ArgKind::kTensor;
    r.dtype = t.dtype;
    r.count = static_cast<uint32_t>(t.sizes.size());
    r.offset = th.dims.size();
    for (int64_t d : t.sizes) th.dims.push_back(d);
    if (!seen.insert(tname).second) r.tensor_flags |= kArgRepeated;
    if (!t.contiguous) r.tensor_flags |= kArgStrided;
    if (t.covered >= 0) {
      r.tensor_flags |= kArgStrided | kArgExpanded;
      th.dims.push_back(t.covered);
    }
  }

  void put(const ExportedArg& a, std::set<std::string>& seen) {
    ThreadEvents& th = out_.thread;
    ArgRecord r;
    using K = ExportedArg::Kind;
    switch (a.kind) {
      case K::kNone:
        break;
      case K::kTensor:
        put_tensor(r, a.tensors[0], seen);
        break;
      case K::kTensors:
      case K::kOptionalTensors: {
        r.kind = ArgKind::kTensorList;
        r.count = static_cast<uint32_t>(a.tensors.size());
        r.offset = th.dims.size();
        th.dims.push_back(0);
        uint64_t bytes = 0;
        if (a.kind == K::kOptionalTensors) r.tensor_flags |= kArgElementNumels;
        for (const std::string& tn : a.tensors) {
          if (tn.empty()) {
            th.dims.push_back(-1);
            continue;
          }
          const ExportedTensor& t = p_.tensors.at(tn);
          if (r.dtype == DType::kUnknown) r.dtype = t.dtype;
          const uint64_t n = elements(t.sizes);
          bytes = checked_add(bytes, checked_mul(n, element_bytes(t.dtype)));
          if (a.kind == K::kOptionalTensors) th.dims.push_back(static_cast<int64_t>(n));
        }
        th.dims[r.offset] = static_cast<int64_t>(bytes);
        break;
      }
      case K::kInt:
        r.kind = ArgKind::kInt;
        r.i = a.i;
        break;
      case K::kInts:
        r.kind = ArgKind::kIntList;
        r.count = static_cast<uint32_t>(a.ints.size());
        r.offset = th.dims.size();
        th.dims.insert(th.dims.end(), a.ints.begin(), a.ints.end());
        break;
      case K::kFloat:
        r.kind = ArgKind::kDouble;
        r.d = a.d;
        break;
      case K::kFloats:
        r.kind = ArgKind::kDoubleList;
        r.count = static_cast<uint32_t>(a.floats.size());
        r.offset = th.doubles.size();
        th.doubles.insert(th.doubles.end(), a.floats.begin(), a.floats.end());
        break;
      case K::kBool:
        r.kind = ArgKind::kBool;
        r.b = a.b;
        break;
      case K::kString:
        r.kind = ArgKind::kString;
        r.i = a.s.empty() ? 0 : a.s[0];
        break;
      case K::kOther:
        r.kind = ArgKind::kOther;
        break;
    }
    th.args.push_back(r);
  }

  // An argument torch.export left out: its default value, as the boxed call would carry it.
  void put_default(const c10::Argument& a) {
    ThreadEvents& th = out_.thread;
    ArgRecord r;
    if (a.default_value()) {
      const c10::IValue& v = *a.default_value();
      if (v.isInt()) {
        r.kind = ArgKind::kInt;
        r.i = v.toInt();
      } else if (v.isDouble()) {
        r.kind = ArgKind::kDouble;
        r.d = v.toDouble();
      } else if (v.isBool()) {
        r.kind = ArgKind::kBool;
        r.b = v.toBool();
      } else if (v.isIntList()) {
        r.kind = ArgKind::kIntList;
        const std::vector<int64_t> l = v.toIntVector();
        r.count = static_cast<uint32_t>(l.size());
        r.offset = th.dims.size();
        th.dims.insert(th.dims.end(), l.begin(), l.end());
      } else if (v.isDoubleList()) {
        r.kind = ArgKind::kDoubleList;
        const std::vector<double> l = v.toDoubleVector();
        r.count = static_cast<uint32_t>(l.size());
        r.offset = th.doubles.size();
        th.doubles.insert(th.doubles.end(), l.begin(), l.end());
      } else if (v.isString()) {
        r.kind = ArgKind::kString;
        const std::string s = v.toStringRef();
        r.i = s.empty() ? 0 : s[0];
      } else if (!v.isNone()) {
        r.kind = ArgKind::kOther;
      }
    }
    th.args.push_back(r);
  }

  const ExportedProgram& p_;
  const std::string& name_;
  ExportedRecords out_;
  std::map<std::string, int> index_;
  std::vector<int> open_;  // module indices of the open scopes, outermost first
  std::vector<int32_t> open_records_;
  std::map<std::string, uint64_t> no_schema_, higher_order_;  // op -> calls
  int64_t tick_ = 1;
};

}  // namespace

uint32_t ExportedNames::id(const std::string& n) {
  auto it = std::find(names.begin(), names.end(), n);
  if (it != names.end()) return static_cast<uint32_t>(it - names.begin());
  names.push_back(n);
  return static_cast<uint32_t>(names.size() - 1);
}

ExportedRecords exported_records(const ExportedProgram& program, const std::string& name) {
  return Builder(program, name).build();
}

}  // namespace flopsprof::detail
