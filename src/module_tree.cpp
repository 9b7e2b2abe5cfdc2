// Module tree bookkeeping: pre-order ranges, lowest common ancestor, ignored-module folding.
#include "module_tree.h"

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
  for (int i = static_cast<int>(nodes.size()) - 1; i >= 0; --i) {
    int end = i + 1;
    for (int c : nodes[i].children) end = std::max(end, nodes[c].subtree_end);
    nodes[i].subtree_end = end;
  }
}

int ModuleTree::lowest_common_ancestor(int a, int b) const {
  if (a < 0) return b;
  if (b < 0) return a;
  while (nodes[a].depth > nodes[b].depth) a = nodes[a].parent;
  while (nodes[b].depth > nodes[a].depth) b = nodes[b].parent;
  while (a != b) {
    a = nodes[a].parent;
    b = nodes[b].parent;
  }
  return a;
}

}  // namespace flopsprof::detail
