// The attribution stage on synthetic events: one test per rule (attribution.h), no torch.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "attribution/attribution.h"
#include "records/builtin_modules.h"
#include "test_names.h"

namespace flopsprof::detail {
namespace {

using testing::Names;

// A tree of built-in and user modules. `add` returns the node index; `own` gives a module a
// parameter (owner set index returned).
struct Tree {
  ModuleTree t;
  int add(const std::string& name, const std::string& type, int parent, bool builtin) {
    ModuleNode n;
    n.name = name;
    n.type = type;
    n.parent = parent;
    if (builtin) n.builtin = find_builtin("torch::nn::" + type + "Impl", type);
    t.nodes.push_back(n);
    return static_cast<int>(t.nodes.size() - 1);
  }
  int own(int module, bool parameter = true) {
    t.owner_sets.push_back({module});
    t.owner_set_is_parameter.push_back(parameter ? 1 : 0);
    for (int a = module; a >= 0; a = t.nodes[a].parent) t.nodes[a].tensors += 1;
    return static_cast<int>(t.owner_sets.size() - 1);
  }
  const ModuleTree& done() {
    t.finalize();
    return t;
  }
};

struct Events {
  Names& names;
  ThreadEvents th;
  int64_t clock = 0;
  int32_t scope = -1;  // the scope record open for the next ops
  // Opens a scope record of `module` (closed at `stop`), nested in the open one.
  int32_t open_scope(int module, bool window, int64_t stop = 1000000) {
    th.scopes.push_back(ScopeRecord{module, scope, clock, stop, false, window});
    scope = static_cast<int32_t>(th.scopes.size() - 1);
    return scope;
  }
  int op(const std::string& name, int owner = -1, uint8_t flags = 0, int64_t seq = -1,
         int64_t seq_end = -1) {
    RawEvent e;
    e.name_id = names.id(name);
    e.owner = owner;
    e.flags = flags;
    e.seq_nr = seq;
    e.seq_end = seq_end;
    e.scope = scope;
    e.start_tick = clock;
    e.end_tick = clock + 10;
    clock += 10;
    th.events.push_back(e);
    return static_cast<int>(th.events.size() - 1);
  }
  // An autograd node for forward sequence number `seq` (evaluate_function wrapper + node).
  int node(const std::string& name, int64_t seq) {
    RawEvent w;
    w.name_id = names.id("autograd::engine::evaluate_function: " + name);
    w.kind = EventKind::kBackwardNode;
    w.flags = kBackward | kEngine;
    w.seq_nr = seq;
    w.start_tick = clock;
    w.end_tick = clock + 10;
    th.events.push_back(w);
    RawEvent n = w;
    n.name_id = names.id(name);
    n.flags = kBackward;
    n.parent = static_cast<int>(th.events.size() - 1);
    th.events.push_back(n);
    clock += 10;
    return static_cast<int>(th.events.size() - 1);
  }
};

struct Result {
  Attribution a;
  int module(int event) const { return a.threads[0].module[event]; }
  bool inferred(int event) const { return a.threads[0].inferred[event] != 0; }
  int calls(int m) const {
    int n = 0;
    for (const CallSpan& c : a.calls) n += c.module == m;
    return n;
  }
};

Result run(const ModuleTree& tree, const Events& ev, const Names& names) {
  AttributionInput in;
  in.tree = &tree;
  in.threads = {&ev.th};
  in.names = &names;
  in.stop_tick = 1000000;
  return Result{attribute(in)};
}

TEST(BuiltinTable, KnownTypesAndTheirOps) {
  const BuiltinSpec* relu = find_builtin("torch::nn::ReLUImpl", "ReLU");
  ASSERT_NE(relu, nullptr);
  EXPECT_TRUE(op_in_list(relu->ops, "aten::relu"));
  EXPECT_TRUE(op_in_list(relu->ops, "aten::relu_"));
  EXPECT_FALSE(op_in_list(relu->ops, "aten::relu6"));
  EXPECT_EQ(find_builtin("MyNet::LinearImpl", "Linear"), nullptr);  // a user's own "Linear"
  EXPECT_TRUE(find_builtin("torch::nn::FunctionalImpl", "Functional")->wildcard);
  EXPECT_TRUE(find_builtin("torch::nn::SequentialImpl", "Sequential")->container);
  const BuiltinSpec* emb = find_builtin("torch::nn::EmbeddingImpl", "Embedding");
  EXPECT_FALSE(op_in_list(emb->ops, "aten::matmul"));
}

// Rule 2: a built-in claims through ownership only the ops its forward runs.
TEST(AttributionRules, OwnershipIsLimitedToOpsTheBuiltinRuns) {
  Names names;
  Tree t;
  const int root = t.add("", "Net", -1, false);
  const int emb = t.add("emb", "Embedding", root, true);
  const int w = t.own(emb);
  const ModuleTree& tree = t.done();
  Events ev{names};
  const int lookup = ev.op("aten::embedding", w);
  const int tr = ev.op("aten::t", w);       // the tied decoder: weight.t()
  const int mm = ev.op("aten::matmul", w);  // matmul(h, weight.t())
  Result r = run(tree, ev, names);
  EXPECT_EQ(r.module(lookup), emb);
  EXPECT_EQ(r.module(tr), root);
  EXPECT_EQ(r.module(mm), root);
  EXPECT_EQ(r.calls(emb), 1);
  EXPECT_EQ(r.calls(root), 1);
}

// Rule 4: unclaimed ops inside a Sequential's call go to its parameterless children by type, in
// registration order; a trailing parameterless child extends the call.
TEST(AttributionRules, ParameterlessChildrenTakeTheirOpsInOrder) {
  Names names;
  Tree t;
  const int seq = t.add("", "Sequential", -1, true);
  const int l0 = t.add("0", "Linear", seq, true);
  const int relu = t.add("1", "ReLU", seq, true);
  const int drop = t.add("2", "Dropout", seq, true);
  const int l3 = t.add("3", "Linear", seq, true);
  const int sig = t.add("4", "Sigmoid", seq, true);
  const int w0 = t.own(l0), w3 = t.own(l3);
  const ModuleTree& tree = t.done();
  Events ev{names};
  ev.op("aten::t", w0);
  ev.op("aten::addmm", w0);
  const int r1 = ev.op("aten::relu");
  const int d2 = ev.op("aten::dropout");
  ev.op("aten::t", w3);
  ev.op("aten::addmm", w3);
  const int s4 = ev.op("aten::sigmoid");
  const int loss = ev.op("aten::binary_cross_entropy");
  Result r = run(tree, ev, names);
  EXPECT_EQ(r.module(r1), relu);
  EXPECT_EQ(r.module(d2), drop);
  EXPECT_EQ(r.module(s4), sig);
  EXPECT_EQ(r.module(loss), kOutsideModel);
  for (int m : {seq, l0, relu, drop, l3, sig}) EXPECT_EQ(r.calls(m), 1) << m;
}

// Rule 4: a module reused out of registration order (one ReLU called twice); a Functional takes
// what its specific neighbours leave.
TEST(AttributionRules, ReusedModulesAndFunctional) {
  Names names;
  Tree t;
  const int root = t.add("", "Net", -1, false);
  const int fc1 = t.add("fc1", "Linear", root, true);
  const int fc2 = t.add("fc2", "Linear", root, true);
  const int act = t.add("act", "ReLU", root, true);
  const int w1 = t.own(fc1), w2 = t.own(fc2);
  const ModuleTree& tree = t.done();
  Events ev{names};
  ev.op("aten::t", w1);
  ev.op("aten::addmm", w1);
  const int a1 = ev.op("aten::relu");
  const int view = ev.op("aten::view");  // a functional call in Net::forward: Net's own
  ev.op("aten::t", w2);
  ev.op("aten::addmm", w2);
  const int a2 = ev.op("aten::relu");
  Result r = run(tree, ev, names);
  EXPECT_EQ(r.module(a1), act);
  EXPECT_EQ(r.module(view), root);
  EXPECT_EQ(r.module(a2), act);
  EXPECT_EQ(r.calls(act), 2);

  Tree f;
  const int s = f.add("", "Sequential", -1, true);
  const int l0 = f.add("0", "Linear", s, true);
  const int fn = f.add("1", "Functional", s, true);
  const int l2 = f.add("2", "Linear", s, true);
  const int v0 = f.own(l0), v2 = f.own(l2);
  const ModuleTree& ftree = f.done();
  Events fe{names};
  fe.op("aten::t", v0);
  fe.op("aten::addmm", v0);
  const int x = fe.op("aten::cumsum");
  fe.op("aten::t", v2);
  fe.op("aten::addmm", v2);
  Result fr = run(ftree, fe, names);
  EXPECT_EQ(fr.module(x), fn);
  EXPECT_EQ(fr.calls(fn), 1);
}

// Rule 4, several parameterless children of one type used out of registration order (a decoder:
// embedding_dropout once before its loop, lstm_output_dropout in each step): each op goes to the
// child taken after the same sibling before, else to one the call has not run yet.
TEST(AttributionRules, SameTypeChildrenOutOfRegistrationOrder) {
  Names names;
  Tree t;
  const int root = t.add("", "Decoder", -1, false);
  const int emb = t.add("embedding", "Embedding", root, true);
  const int cell = t.add("cell", "Linear", root, true);
  const int out = t.add("out", "Linear", root, true);
  const int d_emb = t.add("embedding_dropout", "Dropout", root, true);
  const int d_out = t.add("output_dropout", "Dropout", root, true);
  const int we = t.own(emb), wc = t.own(cell), wo = t.own(out);
  const ModuleTree& tree = t.done();
  Events ev{names};
  ev.op("aten::embedding", we);
  const int first = ev.op("aten::dropout");
  std::vector<int> in_loop;
  for (int step = 0; step < 3; ++step) {
    ev.op("aten::t", wc);
    ev.op("aten::addmm", wc);
    in_loop.push_back(ev.op("aten::dropout"));
    ev.op("aten::t", wo);
    ev.op("aten::addmm", wo);
  }
  Result r = run(tree, ev, names);
  EXPECT_EQ(r.module(first), d_emb);
  for (int e : in_loop) EXPECT_EQ(r.module(e), d_out);
  EXPECT_EQ(r.calls(d_emb), 1);
  EXPECT_EQ(r.calls(d_out), 3);
  EXPECT_EQ(r.calls(root), 1);
}

// Rule 4 in a LibTorch composite whose forward runs its children out of registration order:
// TransformerEncoderLayer registers self_attn, linear1, dropout, linear2, norm1, norm2, dropout1,
// dropout2 but runs self_attn, dropout1, norm1, linear1, relu, dropout, linear2, dropout2, norm2.
TEST(AttributionRules, KnownRunOrderOfALibTorchComposite) {
  Names names;
  Tree t;
  const int layer = t.add("", "TransformerEncoderLayer", -1, false);
  t.t.nodes[layer].run_order = builtin_run_order("torch::nn::TransformerEncoderLayerImpl");
  const int attn = t.add("self_attn", "Linear", layer, true);  // stands in for the attention
  const int l1 = t.add("linear1", "Linear", layer, true);
  const int drop = t.add("dropout", "Dropout", layer, true);
  const int l2 = t.add("linear2", "Linear", layer, true);
  const int n1 = t.add("norm1", "LayerNorm", layer, true);
  const int n2 = t.add("norm2", "LayerNorm", layer, true);
  const int drop1 = t.add("dropout1", "Dropout", layer, true);
  const int drop2 = t.add("dropout2", "Dropout", layer, true);
  const int wa = t.own(attn), w1 = t.own(l1), w2 = t.own(l2), wn1 = t.own(n1), wn2 = t.own(n2);
  const ModuleTree& tree = t.done();
  EXPECT_EQ(tree.nodes[drop1].child_index, 1);  // run order: self_attn, dropout1, ...
  Events ev{names};
  ev.op("aten::t", wa);
  ev.op("aten::addmm", wa);
  const int d1 = ev.op("aten::dropout");
  ev.op("aten::add");
  ev.op("aten::layer_norm", wn1);
  ev.op("aten::t", w1);
  ev.op("aten::addmm", w1);
  const int relu = ev.op("aten::relu");  // F::relu in the layer's forward: its own
  const int d = ev.op("aten::dropout");
  ev.op("aten::t", w2);
  ev.op("aten::addmm", w2);
  const int d2 = ev.op("aten::dropout");
  ev.op("aten::add");
  ev.op("aten::layer_norm", wn2);
  Result r = run(tree, ev, names);
  EXPECT_EQ(r.module(d1), drop1);
  EXPECT_EQ(r.module(d), drop);
  EXPECT_EQ(r.module(d2), drop2);
  EXPECT_EQ(r.module(relu), layer);
  for (int m : {drop1, drop, drop2}) EXPECT_EQ(r.calls(m), 1) << tree.nodes[m].name;
}

// Rules 1 and 3 with a call window (get_model_profile's call of the model): one call of the root
// whatever runs inside (a greedy decoding loop's argmax before the first child runs again), a
// FLOPSPROF_MODULE() record of the root inside it is the same call, and the window's own ops
// (weakly anchored to the root) neither split a child's call nor hide registration order.
TEST(AttributionRules, CallWindowIsOneCallOfTheRoot) {
  for (bool inner_scope : {false, true}) {
    Names names;
    Tree t;
    const int root = t.add("", "Decoder", -1, false);
    const int emb = t.add("embedding", "Embedding", root, true);
    const int att = t.add("attention", "Attention", root, false);
    const int l1 = t.add("attention.a", "Linear", att, true);
    const int l2 = t.add("attention.b", "Linear", att, true);
    const int out = t.add("out", "Linear", root, true);
    const int d_emb = t.add("embedding_dropout", "Dropout", root, true);
    const int d_out = t.add("output_dropout", "Dropout", root, true);
    const int we = t.own(emb), w1 = t.own(l1), w2 = t.own(l2), wo = t.own(out);
    const ModuleTree& tree = t.done();
    Events ev{names};
    ev.open_scope(root, /*window=*/true);
    if (inner_scope) ev.open_scope(root, /*window=*/false);
    ev.op("aten::ones");
    ev.op("aten::embedding", we);
    const int first_drop = ev.op("aten::dropout");
    std::vector<int> tanh, drops, argmax;
    for (int step = 0; step < 2; ++step) {
      ev.op("aten::t", w1);
      ev.op("aten::addmm", w1);
      tanh.push_back(ev.op("aten::tanh"));
      ev.op("aten::t", w2);
      ev.op("aten::addmm", w2);
      drops.push_back(ev.op("aten::dropout"));
      ev.op("aten::view");  // the window's own op: no hint of where the next child stands
      ev.op("aten::t", wo);
      ev.op("aten::addmm", wo);
      argmax.push_back(ev.op("aten::argmax"));
      ev.op("aten::embedding", we);
    }
    Result r = run(tree, ev, names);
    EXPECT_EQ(r.calls(root), 1) << inner_scope;
    EXPECT_EQ(r.calls(att), 2) << inner_scope;
    EXPECT_EQ(r.calls(emb), 3) << inner_scope;
    EXPECT_EQ(r.module(first_drop), d_emb) << inner_scope;
    for (int e : drops) EXPECT_EQ(r.module(e), d_out) << inner_scope;
    for (int e : tanh) EXPECT_EQ(r.module(e), att) << inner_scope;
    for (int e : argmax) EXPECT_EQ(r.module(e), root) << inner_scope;
  }
}

// Rule 3: a built-in's calls end with its op (Linear: `t` starts one), so back-to-back calls are
// two; the parent goes on (nothing between says its forward returned).
TEST(AttributionRules, BackToBackCallsOfABuiltin) {
  Names names;
  Tree t;
  const int root = t.add("", "Net", -1, false);
  const int fc = t.add("fc", "Linear", root, true);
  const int w = t.own(fc);
  const ModuleTree& tree = t.done();
  Events ev{names};
  for (int i = 0; i < 2; ++i) {
    ev.op("aten::t", w);
    ev.op("aten::addmm", w);
  }
  Result r = run(tree, ev, names);
  EXPECT_EQ(r.calls(fc), 2);
  EXPECT_EQ(r.calls(root), 1);
}

// Rule 5: work before the model's first op and after its forward is outside the model; a loss
// between two forwards separates two calls of the root.
TEST(AttributionRules, OutsideTheModelAndTwoForwards) {
  Names names;
  Tree t;
  const int root = t.add("", "Net", -1, false);
  const int fc = t.add("fc", "Linear", root, true);
  const int w = t.own(fc);
  const ModuleTree& tree = t.done();
  Events ev{names};
  const int data = ev.op("aten::randn");
  // x.mm(w_true): data generation by the caller, or the first line of Net::forward: op order
  // cannot tell; it is the root's, as get_model_profile's call window sees such an op, marked
  // as inferred. randn is a new tensor: the caller's.
  const int prep = ev.op("aten::mm");
  ev.op("aten::t", w);
  ev.op("aten::addmm", w);
  const int tail = ev.op("aten::log_softmax");  // the end of the forward (no grad)
  const int loss = ev.op("aten::nll_loss");
  ev.op("aten::t", w);
  ev.op("aten::addmm", w);
  Result r = run(tree, ev, names);
  EXPECT_EQ(r.module(data), kOutsideModel);
  EXPECT_EQ(r.module(prep), root);
  EXPECT_TRUE(r.inferred(prep));
  EXPECT_EQ(r.module(tail), root);
  EXPECT_TRUE(r.inferred(tail));       // after the last module: op order again
  EXPECT_FALSE(r.inferred(prep + 1));  // `t` reads fc's weight
  EXPECT_EQ(r.module(loss), kOutsideModel);
  EXPECT_EQ(r.calls(root), 2);
  EXPECT_EQ(r.calls(fc), 2);
}

// In grad mode data flow ends the forward: an op reading a tensor from outside (targets) is the
// caller's, one reading only the model's outputs continues it.
TEST(AttributionRules, GradModeTailFollowsDataFlow) {
  Names names;
  Tree t;
  const int root = t.add("", "Net", -1, false);
  const int fc = t.add("fc", "Linear", root, true);
  const int w = t.own(fc);
  const ModuleTree& tree = t.done();
  Events ev{names};
  ev.op("aten::t", w, 0, /*seq=*/10, /*seq_end=*/10);
  ev.op("aten::addmm", w, 0, 10, 11);
  const int tail = ev.op("aten::relu", -1, 0, 11, 12);
  ev.th.events[tail].in_seq = 10;  // reads addmm's output
  const int loss = ev.op("aten::mse_loss", -1, kExternalInput, 12, 13);
  ev.th.events[loss].in_seq = 11;
  Result r = run(tree, ev, names);
  EXPECT_EQ(r.module(tail), root);
  EXPECT_EQ(r.module(loss), kOutsideModel);
}

// An in-place op on a parameter (an optimizer step without a step scope) is no forward work.
TEST(AttributionRules, ParameterUpdatesAreOutside) {
  Names names;
  Tree t;
  const int root = t.add("", "Net", -1, false);
  const int fc = t.add("fc", "Linear", root, true);
  const int w = t.own(fc);
  const ModuleTree& tree = t.done();
  Events ev{names};
  ev.op("aten::t", w);
  ev.op("aten::addmm", w);
  const int update = ev.op("aten::add_", w, kSelfOwned);
  Result r = run(tree, ev, names);
  EXPECT_EQ(r.module(update), kOutsideModel);
  EXPECT_EQ(r.calls(fc), 1);
}

// Rule 6: the node goes to the op that created it; an earlier op with the same sequence number
// that created nothing (zero_grad's zero_, clone, to) does not take it.
TEST(AttributionRules, NodesLinkToTheOpThatCreatedThem) {
  Names names;
  Tree t;
  const int root = t.add("", "Net", -1, false);
  const int conv = t.add("conv", "Conv2d", root, true);
  const int w = t.own(conv);
  const ModuleTree& tree = t.done();
  Events ev{names};
  const int to = ev.op("aten::to", -1, 0, /*seq=*/5, /*seq_end=*/5);  // created no node
  const int c = ev.op("aten::conv2d", w, 0, 5, 6);
  ev.th.events[c].in_seq = -1;
  const int node = ev.node("ConvolutionBackward0", 5);
  Result r = run(tree, ev, names);
  EXPECT_EQ(r.module(to), kOutsideModel);
  EXPECT_EQ(r.module(node), conv);
  EXPECT_EQ(r.a.origin[0][node].event, c);
}

// Phase spans: runs of top-level events of one phase, read by the aggregation (backward latency)
// and the trace (phase tracks). Work outside the model and optimizer steps break a forward run;
// a backward pass is this model's only when it ran one of its nodes.
TEST(AttributionRules, PhaseSpansAreRunsOfTheModelsForwardAndItsBackwardPasses) {
  Names names;
  Tree t;
  const int root = t.add("", "Net", -1, false);
  const int conv = t.add("conv", "Conv2d", root, true);
  const int w = t.own(conv);
  const ModuleTree& tree = t.done();
  Events ev{names};
  ev.op("aten::conv2d", w, 0, 5, 6);   // forward [0, 10)
  ev.op("aten::relu");                 // [10, 20), the model's (rule: order)
  ev.op("aten::randn");                // outside? decided below
  ev.node("ConvolutionBackward0", 5);  // our pass [30, 40)
  ev.op("aten::add_", -1, kStep);      // optimizer step [40, 50)
  ev.node("OtherBackward0", 99);       // another model's pass [50, 60)
  ev.op("aten::conv2d", w, 0, 7, 8);   // forward again [60, 70)
  Result r = run(tree, ev, names);
  const std::vector<PhaseSpan>& spans = r.a.phase_spans;
  std::vector<std::tuple<Phase, int64_t, int64_t, bool>> got;
  for (const PhaseSpan& p : spans) got.emplace_back(p.phase, p.start, p.end, p.ours);
  // relu follows the model's conv with nothing between (the model's); randn reads no tensor of
  // the model after its last op (outside): the forward run ends where randn starts.
  EXPECT_EQ(r.module(1), root);
  ASSERT_EQ(r.module(2), kOutsideModel);
  const int64_t fwd_end = 20;
  const std::vector<std::tuple<Phase, int64_t, int64_t, bool>> want = {
      {Phase::kForward, 0, fwd_end, true},
      {Phase::kBackward, 30, 40, true},
      {Phase::kBackward, 50, 60, false},
      {Phase::kForward, 60, 70, true}};
  EXPECT_EQ(got, want);
  // The other model's pass is outside this one, not its "(autograd)".
  EXPECT_EQ(r.module(static_cast<int>(ev.th.events.size()) - 2), kOutsideModel);
}

}  // namespace
}  // namespace flopsprof::detail
