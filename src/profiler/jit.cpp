// TorchScript models: the mirror module tree, and the interpreter's module hierarchy resolved to
// it (capture/jit_hierarchy.cpp turns the hierarchy into scope records).
#include "flopsprof/jit.h"

#include <algorithm>
#include <deque>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include "capture/jit_hierarchy.h"
#include "flopsprof/scope.h"

namespace flopsprof {

namespace {

// A node of the mirror tree: a plain torch::nn::Module named after the TorchScript class (not a
// LibTorch built-in: no rule of the attribution guesses its ops; its scopes say where they ran).
class MirrorModule : public torch::nn::Module {
 public:
  explicit MirrorModule(const std::string& type) : torch::nn::Module(type) {}
};

std::string class_name(const torch::jit::Module& m) {
  auto type = m.type();
  if (!type || !type->name()) return "Module";
  return type->name()->name();  // "__torch__.torchvision.models.resnet.ResNet" -> "ResNet"
}

}  // namespace

// The mirror tree and the resolution of the interpreter's hierarchies to it; capture's hierarchy
// callback (capture/jit_hierarchy.h) asks it while the model is observed.
struct JitModel::Impl : detail::HierarchySource {
  struct Node {
    std::string name;  // attribute name in its parent ("conv1"); "" for the root
    std::string type;  // TorchScript class name
    int parent = -1;
    std::vector<int> children;
    const torch::nn::Module* mirror = nullptr;
  };
  torch::jit::Module module;
  std::shared_ptr<torch::nn::Module> root;
  std::vector<Node> nodes;

  std::mutex mu;  // guards the resolution cache and stats written when a hierarchy changes
  std::unordered_map<std::string, std::vector<int>> resolved;  // joined hierarchy -> node path
  std::vector<std::string> unresolved;

  int add(const torch::jit::Module& m, const std::string& name, int parent,
          const std::shared_ptr<torch::nn::Module>& mirror) {
    const int id_ = static_cast<int>(nodes.size());
    nodes.push_back(Node{name, class_name(m), parent, {}, mirror.get()});
    for (const auto& p : m.named_parameters(/*recurse=*/false)) {
      if (p.value.defined()) mirror->register_parameter(p.name, p.value, p.value.requires_grad());
    }
    for (const auto& b : m.named_buffers(/*recurse=*/false)) {
      if (b.value.defined()) mirror->register_buffer(b.name, b.value);
    }
    for (const auto& c : m.named_children()) {
      auto child = std::make_shared<MirrorModule>(class_name(c.value));
      mirror->register_module(c.name, child);
      const int cid = add(c.value, c.name, id_, child);
      nodes[id_].children.push_back(cid);
    }
    return id_;
  }

  // "layer1(Sequential)::forward" under `parent`: the child with that attribute name, else the
  // nearest descendant with that name and class (containers never called, a ModuleList, are not
  // in the hierarchy: "0(TransformerEncoderLayer)" under "encoder" is "encoder.layers.0").
  // -1: not a module call ("::relu", "SELF(...)"); -2: no such module.
  int resolve_entry(int parent, std::string_view entry) const {
    const size_t open = entry.find('(');
    if (open == std::string_view::npos || open == 0) return -1;  // a free function: "::relu"
    const std::string_view inst = entry.substr(0, open);
    if (inst == "SELF") return -1;  // a method of the same module
    // A frame of a free function (not inlined): "CALL_FUNCTION::relu()::relu".
    if (inst.find("::") != std::string_view::npos) return -1;
    const size_t close = entry.find(')', open);
    const std::string_view type =
        entry.substr(open + 1, close == std::string_view::npos ? 0 : close - open - 1);
    if (type.empty()) return -1;
    for (int c : nodes[parent].children) {
      if (nodes[c].name == inst) return c;
    }
    std::deque<int> queue(nodes[parent].children.begin(), nodes[parent].children.end());
    while (!queue.empty()) {
      const int n = queue.front();
      queue.pop_front();
      if (nodes[n].name == inst && nodes[n].type == type) return n;
      for (int c : nodes[n].children) queue.push_back(c);
    }
    return -2;
  }

  // The mirror modules of one hierarchy, the root first (its own ops are as exact as any
  // module's).
  std::vector<const torch::nn::Module*> resolve(
      const std::vector<std::string>& hierarchy) override {
    std::vector<const torch::nn::Module*> modules;
    for (int n : resolve_path(hierarchy)) modules.push_back(nodes[n].mirror);
    return modules;
  }

  // The node path of one hierarchy (cached per distinct hierarchy).
  std::vector<int> resolve_path(const std::vector<std::string>& hierarchy) {
    std::string key;
    for (const auto& h : hierarchy) key.append(h).push_back('|');
    std::lock_guard<std::mutex> lock(mu);
    auto it = resolved.find(key);
    if (it != resolved.end()) return it->second;
    std::vector<int> path{0};
    int cur = 0;
    // The first entry is the root's own frame: "TOP(ResNet)::forward".
    for (size_t i = 1; i < hierarchy.size(); ++i) {
      const int r = resolve_entry(cur, hierarchy[i]);
      if (r == -2) {
        if (unresolved.size() < 16 &&
            std::find(unresolved.begin(), unresolved.end(), hierarchy[i]) == unresolved.end()) {
          unresolved.push_back(hierarchy[i]);
        }
        continue;
      }
      if (r < 0) continue;
      cur = r;
      path.push_back(r);
    }
    resolved.emplace(std::move(key), path);
    return path;
  }
};

JitModel::JitModel(torch::jit::Module module) : impl_(std::make_unique<Impl>()) {
  impl_->module = std::move(module);
  auto root = std::make_shared<MirrorModule>(class_name(impl_->module));
  impl_->root = root;
  impl_->add(impl_->module, "", -1, root);
}

JitModel::~JitModel() { detail::forget_hierarchy_source(impl_.get()); }

const std::shared_ptr<torch::nn::Module>& JitModel::tree() const { return impl_->root; }
torch::jit::Module& JitModel::module() { return impl_->module; }

c10::IValue JitModel::forward(std::vector<c10::IValue> inputs) {
  struct CloseScopes {
    Impl* impl;
    ~CloseScopes() {
      impl->in_forward.store(false, std::memory_order_relaxed);
      detail::close_hierarchy_scopes(*impl);
    }
  };
  detail::CallWindow window(impl_->root.get());
  impl_->in_forward.store(true, std::memory_order_relaxed);
  CloseScopes close{impl_.get()};  // before the window closes
  return impl_->module.forward(std::move(inputs));
}

JitObserver JitModel::observe() {
  JitObserver obs;
  obs.handle_ = detail::observe_hierarchy(impl_.get());
  return obs;
}

JitModel::HierarchyStats JitModel::hierarchy_stats() const {
  HierarchyStats s;
  s.ops = impl_->ops.load();
  s.ops_without_hierarchy = impl_->ops_without.load();
  std::lock_guard<std::mutex> lock(impl_->mu);
  s.unresolved = impl_->unresolved;
  return s;
}

JitObserver& JitObserver::operator=(JitObserver&& other) noexcept {
  if (this != &other) {
    reset();
    handle_ = other.handle_;
    other.handle_ = 0;
  }
  return *this;
}

void JitObserver::reset() noexcept {
  detail::stop_observing_hierarchy(handle_);
  handle_ = 0;
}

}  // namespace flopsprof
