// Module tree bookkeeping: pre-order ranges, run order, ignored-module folding.
#include "records/module_tree.h"

#include <algorithm>
#include <climits>

#include "records/builtin_modules.h"

namespace flopsprof::detail {

void ModuleTree::finalize() {
  for (auto& n : nodes) n.children.clear();
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    ModuleNode& n = nodes[i];
    n.depth = n.parent < 0 ? 0 : nodes[n.parent].depth + 1;
    if (n.parent >= 0) {
      n.child_index = static_cast<int>(nodes[n.parent].children.size());
      nodes[n.parent].children.push_back(i);
      n.ignored = n.ignored || nodes[n.parent].ignored;
    }
    n.ignored = n.ignored && n.parent >= 0;  // the root is never ignored
    n.effective = n.ignored ? nodes[n.parent].effective : i;
  }
  for (ModuleNode& n : nodes) {
    if (n.run_order.empty()) continue;
    auto rank = [&](int c) {  // position of the child's attribute name in run_order
      const std::string& name = nodes[c].name;
      const size_t dot = name.rfind('.');
      const std::string_view attr = dot == std::string::npos
                                        ? std::string_view(name)
                                        : std::string_view(name).substr(dot + 1);
      const int r = word_position(n.run_order, attr);
      return r >= 0 ? r : INT_MAX;  // not named: after the named ones, in registration order
    };
    std::stable_sort(n.children.begin(), n.children.end(),
                     [&](int a, int b) { return rank(a) < rank(b); });
    for (size_t k = 0; k < n.children.size(); ++k)
      nodes[n.children[k]].child_index = static_cast<int>(k);
  }
  for (int i = static_cast<int>(nodes.size()) - 1; i >= 0; --i) {
    int end = i + 1;
    for (int c : nodes[i].children) end = std::max(end, nodes[c].subtree_end);
    nodes[i].subtree_end = end;
  }
}

}  // namespace flopsprof::detail
