// Rule 9 of docs/attribution.md: the ends of the root's forward (inferred, marked on both sides).
#include "attribution/thread_attributor.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace flopsprof::detail::attr {

// Rule 9, the end of the model's forward. Without a hook, the ops between the model's last
// claimed op and its `return` (a final `log_softmax`, `view`) look like the caller's. In grad
// mode data flow decides: an op whose tensor inputs were all computed inside this call of the
// model (their grad_fn came after its first op) continues it; one that reads a tensor from
// outside (targets, data) or from before the call ends it. Without grad, the call continues
// up to the first op that looks like a loss, a metric, a new tensor or a device copy.
void ThreadAttributor::rule9_root_tail() {
  if (scoped_[0]) return;             // FLOPSPROF_MODULE() in the root: its boundaries are exact
  if (ends_in_builtin(0, 1)) return;  // a Sequential ending with a built-in: nothing after is its
  for (Call& c : calls_) {
    if (c.module != 0) continue;
    int64_t first_seq = INT64_MAX;
    for (int p = c.first; p <= c.last; ++p) {
      const RawEvent& e = th_.events[items_[p].event];
      if (e.seq_nr >= 0) first_seq = std::min(first_seq, e.seq_nr);
    }
    int pos = c.last + 1;
    while (claimable(pos)) {
      if (in_foreign_call(th_.events[items_[pos].event])) break;  // another model's module
      int end = pos + 1;
      const int unit = unknown_unit_at(pos);
      if (unit >= 0) {  // a call of a module in no profiled tree goes whole, by data flow
        while (claimable(end) && unknown_unit_at(end) == unit) ++end;
        if (!unit_continues_tail(pos, end, first_seq)) break;
      } else if (!continues_tail(pos, first_seq)) {
        break;
      }
      for (int q = pos; q < end; ++q) {
        items_[q].assigned = 0;
        items_[q].edge = true;
      }
      c.last = end - 1;
      pos = end;
    }
  }
}

// Whether unclaimed item `pos`, right after the root's call, continues it (rule 9): in grad
// mode an op whose tensor inputs were all computed inside the call (first_seq: its first
// sequence number; unknown when the call ran without grad); without grad, an op that does not
// look like the caller's.
bool ThreadAttributor::continues_tail(int pos, int64_t first_seq) const {
  const RawEvent& e = th_.events[items_[pos].event];
  if (e.seq_nr < 0) return !ends_forward(item_name(pos));
  if ((e.flags & kExternalInput) || e.in_seq < 0) return false;
  if (creates_tensor(item_name(pos))) return false;  // backward()'s ones_like(loss)
  return first_seq == INT64_MAX || e.in_seq >= first_seq;
}

// Whether the call of a module in no profiled tree made of items [begin, end) continues the
// root's call: in grad mode when it reads what the call computed and no data from outside (its
// own parameters are not data); without grad, by op order alone (a module call never looks
// like the caller's loss or metric).
bool ThreadAttributor::unit_continues_tail(int begin, int end, int64_t first_seq) const {
  bool grad = false, reads_call = false;
  for (int q = begin; q < end; ++q) {
    const RawEvent& e = th_.events[items_[q].event];
    if (e.seq_nr < 0) continue;
    grad = true;
    if (e.flags & kExternalInput) return false;
    if (e.in_seq >= 0 && (first_seq == INT64_MAX || e.in_seq >= first_seq)) reads_call = true;
  }
  return !grad || reads_call;
}

// The start of the model's forward: ops right before its first claimed op (a resize or a
// reshape of the input at the top of the root's forward) are its own, as get_model_profile's
// call window sees them, back to the first op that looks like the caller's (a new tensor, a
// device copy, a loss, a metric) or an in-place op (zero_grad). The caller's own preparation
// written just before `model->forward(x)` looks the same: these ops are marked as inferred.
void ThreadAttributor::rule9_root_head() {
  if (scoped_[0]) return;
  if (ends_in_builtin(0, -1)) return;  // a Sequential starting with a built-in: nothing before
  for (Call& c : calls_) {
    if (c.module != 0) continue;
    // The data the model's first op that reads data reads. Capture holds the tensor of every op
    // outside the model's module calls until an op inside one reads data (ThreadBuffer::
    // hold_data), so the caller's ops compared with it below name a tensor that no later one
    // could replace at the same address.
    uint64_t model_data = 0;
    for (int p = c.first; p <= c.last && model_data == 0; ++p) {
      model_data = th_.events[items_[p].event].data_in;
    }
    int pos = c.first - 1;
    while (claimable(pos)) {
      const RawEvent& e = th_.events[items_[pos].event];
      if (in_foreign_call(e)) break;  // another model's forward
      int begin = pos;
      const int unit = unknown_unit_at(pos);
      if (unit >= 0) {  // a call of a module in no profiled tree goes whole
        while (claimable(begin - 1) && unknown_unit_at(begin - 1) == unit) --begin;
        bool same_data = false;
        for (int q = begin; q <= pos; ++q) {
          const uint64_t d = th_.events[items_[q].event].data_in;
          same_data = same_data || (d != 0 && d == model_data);
        }
        if (same_data) break;  // it reads what the model reads: the caller's side work
      } else {
        const std::string& op = item_name(pos);
        if (ends_forward(op) || (op.size() > 1 && op.back() == '_')) break;
        // It read what the model reads: the caller's work on the model's input (targets
        // computed from the batch), not a step producing that input.
        if (e.data_in != 0 && e.data_in == model_data) break;
      }
      for (int q = begin; q <= pos; ++q) {
        items_[q].assigned = 0;
        items_[q].edge = true;
      }
      c.first = begin;
      pos = begin - 1;
    }
  }
}

// Whether unclaimed item `pos` is work of the caller rather than of the model's forward: in
// grad mode it reads data from outside (or no tensor with history); without grad, its name is
// one of the caller's (a loss, a metric, a new tensor, a device copy).
bool ThreadAttributor::looks_outside(int pos) const {
  const RawEvent& e = th_.events[items_[pos].event];
  if (unknown_unit(e) >= 0) return false;  // a module's call, not the caller's loss or data
  if (e.seq_nr >= 0) return (e.flags & kExternalInput) || e.in_seq < 0;
  return ends_forward(item_name(pos));
}

// A new tensor shaped like another (the implicit gradient of `loss.backward()`).
bool ThreadAttributor::creates_tensor(const std::string& op) {
  return op_in_list("zeros_like ones_like empty_like full_like randn_like rand_like", op);
}

bool ThreadAttributor::ends_forward(const std::string& op) {
  static constexpr std::string_view kStops =
      "nll_loss nll_loss_nd nll_loss2d cross_entropy_loss cross_entropy binary_cross_entropy "
      "binary_cross_entropy_with_logits kl_div mse_loss l1_loss smooth_l1_loss huber_loss "
      "cosine_embedding_loss margin_ranking_loss hinge_embedding_loss soft_margin_loss "
      "multilabel_margin_loss multi_margin_loss ctc_loss poisson_nll_loss triplet_margin_loss "
      "item _local_scalar_dense eq ne argmax argmin topk to _to_copy copy_ clone detach "
      "randn rand randint randperm normal normal_ uniform_ bernoulli zeros ones empty full "
      "arange linspace tensor scalar_tensor zeros_like ones_like empty_like full_like "
      "randn_like rand_like";
  return op.find("loss") != std::string::npos || op_in_list(kStops, op);
}

}  // namespace flopsprof::detail::attr
