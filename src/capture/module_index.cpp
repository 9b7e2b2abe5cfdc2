// Module tree, parameter counts (shared parameters once) and ownership from torch::nn::Module.
#include "capture/module_index.h"

#include <set>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/nn/module.h>
#include <torch/version.h>

#include "capture/builtin_calls.h"
#include "flopsprof/error.h"
#include "records/builtin_modules.h"

namespace flopsprof::detail {

DType to_dtype(c10::ScalarType type) noexcept {
  switch (type) {
    case c10::ScalarType::Double:
      return DType::kFloat64;
    case c10::ScalarType::Float:
      return DType::kFloat32;
    case c10::ScalarType::Half:
      return DType::kFloat16;
    case c10::ScalarType::BFloat16:
      return DType::kBFloat16;
    case c10::ScalarType::ComplexFloat:
      return DType::kComplex64;
    case c10::ScalarType::ComplexDouble:
      return DType::kComplex128;
    case c10::ScalarType::Long:
      return DType::kInt64;
    case c10::ScalarType::Int:
      return DType::kInt32;
    case c10::ScalarType::Short:
      return DType::kInt16;
    case c10::ScalarType::Char:
      return DType::kInt8;
    case c10::ScalarType::Byte:
      return DType::kUInt8;
    case c10::ScalarType::Bool:
      return DType::kBool;
    case c10::ScalarType::QInt8:
    case c10::ScalarType::QUInt8:
    case c10::ScalarType::QInt32:
      return DType::kQuantized;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
    case c10::ScalarType::Float8_e5m2:
    case c10::ScalarType::Float8_e4m3fn:
      return DType::kFloat8;
#endif
    default:
      return DType::kUnknown;
  }
}

std::string display_type_name(const std::string& cpp) {
  // As DeepSpeed shows class names: template arguments, namespaces and a trailing "Impl" go.
  // "ns::ResNetImpl<ns::ResidualBlock>" -> "ResNet"; "(anonymous namespace)::BlockImpl" -> "Block".
  std::string name = cpp.substr(0, cpp.find('<'));
  size_t colon = name.rfind("::");
  if (colon != std::string::npos) name = name.substr(colon + 2);
  while (!name.empty() && name.back() == ' ') name.pop_back();
  if (name.size() > 4 && name.compare(name.size() - 4, 4, "Impl") == 0)
    name.resize(name.size() - 4);
  return name.empty() ? cpp : name;
}

namespace {

// The module tree from named_modules() (pre-order: a parent precedes its children), each node with
// what follows from its C++ type (display name, built-in facts: once per type, as a model of
// 10,000 layers has a few types) and its ignored mark; `modules[i]` is node i's module (the root's
// is null: it is not owned by a shared_ptr we can see here, so it is added by hand). The ignored
// types that matched a module are added to `matched`.
void add_modules(const torch::nn::Module& root, const std::set<std::string>& ignore,
                 ModelIndex& index, std::vector<std::shared_ptr<torch::nn::Module>>& modules,
                 std::set<std::string>& matched) {
  ModuleTree& tree = index.tree;
  std::unordered_map<std::string, int> by_name;
  auto children = const_cast<torch::nn::Module&>(root).named_modules("", /*include_self=*/false);
  tree.nodes.push_back(ModuleNode{});
  tree.nodes[0].type = display_type_name(root.name());
  tree.nodes[0].builtin = find_builtin(root.name(), tree.nodes[0].type);
  tree.nodes[0].run_order = builtin_run_order(root.name());
  tree.nodes[0].once_each = builtin_runs_each_child_once(root.name());
  tree.nodes[0].calls_observed = builtin_calls_observed(root);
  modules.push_back(nullptr);
  by_name[""] = 0;
  index.by_ptr.emplace(&root, 0);
  struct TypeFacts {
    std::string type;
    const BuiltinSpec* builtin;
    std::string_view run_order;
    bool once_each;
  };
  std::unordered_map<std::string, TypeFacts> by_type;
  for (const auto& item : children) {
    ModuleNode node;
    node.name = item.key();
    const std::string& cpp = item.value()->name();
    auto [facts, added] = by_type.try_emplace(cpp);
    if (added) {
      TypeFacts& f = facts->second;
      f.type = display_type_name(cpp);
      f.builtin = find_builtin(cpp, f.type);
      f.run_order = builtin_run_order(cpp);
      f.once_each = builtin_runs_each_child_once(cpp);
    }
    node.type = facts->second.type;
    node.builtin = facts->second.builtin;
    node.run_order = facts->second.run_order;
    node.once_each = facts->second.once_each;
    node.calls_observed = builtin_calls_observed(*item.value());
    node.starts_observed = builtin_call_starts_observed(*item.value());
    size_t dot = node.name.rfind('.');
    auto parent = by_name.find(dot == std::string::npos ? "" : node.name.substr(0, dot));
    node.parent = parent == by_name.end() ? 0 : parent->second;
    if (ignore.count(node.type)) {
      node.ignored = true;
      matched.insert(node.type);
    }
    int id = static_cast<int>(tree.nodes.size());
    by_name[node.name] = id;
    index.by_ptr.emplace(item.value().get(), id);
    tree.nodes.push_back(std::move(node));
    modules.push_back(item.value());
  }
}

// An ignored type that matched no module is a mistake: the error names the types present.
void check_ignored(const std::set<std::string>& ignore, const std::set<std::string>& matched,
                   const ModuleTree& tree) {
  for (const std::string& t : ignore) {
    if (matched.count(t) == 0) {
      std::set<std::string> types;  // the root cannot be ignored: not offered
      for (size_t k = 1; k < tree.nodes.size(); ++k) types.insert(tree.nodes[k].type);
      throw Error(fmt::format(
          "ignore_modules: no module of type '{}' in the model (types present: {}); pass type "
          "names as shown in the report, without namespace or 'Impl'",
          t, fmt::join(types, ", ")));
    }
  }
}

// Parameters (each node counts the unique parameters of its subtree: a shared one once), the
// model's device, and which modules own each parameter's and buffer's storage.
void add_parameters_and_owners(const torch::nn::Module& root,
                               const std::vector<std::shared_ptr<torch::nn::Module>>& modules,
                               ModelIndex& index) {
  ModuleTree& tree = index.tree;
  std::vector<std::unordered_set<const void*>> seen(tree.nodes.size());
  std::unordered_map<const void*, int32_t> owner_set_of;
  for (size_t i = 0; i < tree.nodes.size(); ++i) {
    const torch::nn::Module& m = i == 0 ? root : *modules[i];
    const auto parameters = m.named_parameters(/*recurse=*/false);  // once: a copy per call
    for (const auto& p : parameters) {
      const at::Tensor& t = p.value();
      if (!t.defined()) continue;
      if (index.device_type < 0 && !t.device().is_cpu() && !t.device().is_meta()) {
        index.device_type = static_cast<int>(t.device().type());
        index.device_index = t.device().has_index() ? t.device().index() : 0;
      }
      uint64_t numel = static_cast<uint64_t>(t.numel());
      uint64_t bytes = numel * t.element_size();
      for (int a = static_cast<int>(i); a >= 0; a = tree.nodes[a].parent) {
        if (!seen[a].insert(t.unsafeGetTensorImpl()).second) continue;
        tree.nodes[a].params += numel;
        if (t.requires_grad()) tree.nodes[a].trainable_params += numel;
        tree.nodes[a].param_bytes += bytes;
        if (a == 0)
          tree.param_bytes_by_dtype[static_cast<size_t>(to_dtype(t.scalar_type()))] += bytes;
      }
    }
    auto own = [&](const at::Tensor& t, bool parameter) {
      if (t.defined() && t.is_meta()) index.meta = true;
      if (!t.defined() || !t.unsafeGetTensorImpl()->has_storage()) return;
      const void* key = t.storage().unsafeGetStorageImpl();
      auto [it, inserted] =
          owner_set_of.try_emplace(key, static_cast<int32_t>(tree.owner_sets.size()));
      if (inserted) {
        tree.owner_sets.emplace_back();
        tree.owner_set_is_parameter.push_back(0);
        index.owner_entries.emplace_back(key, it->second);
      }
      if (parameter) tree.owner_set_is_parameter[it->second] = 1;
      auto& set = tree.owner_sets[it->second];
      if (set.empty() || set.back() != static_cast<int>(i)) set.push_back(static_cast<int>(i));
    };
    uint64_t tensors = 0;
    for (const auto& p : parameters) {
      tensors += p.value().defined() ? 1 : 0;
      own(p.value(), /*parameter=*/true);
    }
    for (const auto& b : m.named_buffers(false)) {
      tensors += b.value().defined() ? 1 : 0;
      own(b.value(), /*parameter=*/false);
    }
    for (int a = static_cast<int>(i); a >= 0 && tensors > 0; a = tree.nodes[a].parent)
      tree.nodes[a].tensors += tensors;
  }
}

}  // namespace

ModelIndex build_model_index(const torch::nn::Module& root,
                             const std::vector<std::string>& ignore_types) {
  ModelIndex index;
  ModuleTree& tree = index.tree;
  const std::set<std::string> ignore(ignore_types.begin(), ignore_types.end());
  std::set<std::string> matched;
  std::vector<std::shared_ptr<torch::nn::Module>> modules;
  add_modules(root, ignore, index, modules, matched);
  check_ignored(ignore, matched, tree);
  tree.finalize();
  add_parameters_and_owners(root, modules, index);
  tree.params = tree.nodes[0].params;
  tree.trainable_params = tree.nodes[0].trainable_params;
  tree.param_bytes = tree.nodes[0].param_bytes;
  for (const ModuleNode& n : tree.nodes) {
    index.scope_names.push_back(n.name.empty() ? n.type : n.type + ": " + n.name);
  }
  return index;
}

}  // namespace flopsprof::detail
