// The attribution stage: raw events + module tree in; each event's phase, module and call out.
//
// Runs once per profile, after collection. Every consumer (module statistics, op table, memory,
// GPU, Chrome trace) reads its result instead of re-deciding. Evidence first (scope records of
// observed module calls, FLOPSPROF_MODULE() scopes, parameter ownership, autograd links), then the
// rules that infer from op order, each inferred placement marked: docs/attribution.md lists them
// in the order they apply.
#pragma once

#include <cstdint>
#include <vector>

#include "records/events.h"
#include "records/module_tree.h"

namespace flopsprof::detail {

enum class Phase : uint8_t { kNone, kForward, kBackward, kRecompute, kStep };

/// "forward", "backward", "recompute", "step" (kNone reads "forward").
const char* phase_name(Phase p);

/// Module value of forward work that ran outside the model's forward.
constexpr int kOutsideModel = -2;
/// Module value of backward work linked to no forward op ("(autograd)").
constexpr int kUnlinked = -1;

/// Whether an op of phase `p` placed in `module` is forward work outside the model (the
/// reports' "outside" phase: data preparation, the loss, metrics, another model's work).
inline bool is_outside_forward(Phase p, int module) {
  return p == Phase::kForward && module == kOutsideModel;
}
/// The phase work is reported in: phase_name(p), or "outside" for forward work outside the
/// model. The op table, the trace and the collectives all label work with it.
inline const char* phase_label(Phase p, int module) {
  return is_outside_forward(p, module) ? "outside" : phase_name(p);
}

/// One call of a module: a FLOPSPROF_MODULE() scope, or a run of ops the rules gave it.
struct CallSpan {
  int module = 0;
  int thread = 0;              ///< index into AttributionInput::threads
  int64_t start = 0, end = 0;  ///< timestamp units
};

/// Per event of one thread, indexed like `ThreadEvents::events`.
struct ThreadAttribution {
  /// kNone: an autograd node, or nested in an op of the same phase and module (listed neither
  /// in the op table nor counted).
  std::vector<Phase> phase;
  /// Module (effective: ignored modules folded into their parent), kOutsideModel, or kUnlinked.
  /// Autograd nodes and the ops inside them carry their node's module.
  std::vector<int> module;
  /// 1: a forward op whose module a rule inferred from op order (no parameter it reads, no
  /// observed call it ran in, no observed work of its module on both sides of it), or backward
  /// work of such an op (its autograd node, the ops in it); 0 otherwise.
  std::vector<uint8_t> inferred;
  /// Per step record of the thread: 1 when it is this profile's step (step_scope(), or an
  /// optimizer step that updated this model's parameters), 0 for another model's optimizer.
  std::vector<uint8_t> step_counts;
  /// Innermost enclosing autograd node (backward work), -1 otherwise.
  std::vector<int> node_of;
  /// Per event: for an inferred placement, index into `Attribution::alternatives` of the modules
  /// (or kOutsideModel) whose forward may have run it instead, and which therefore may show too
  /// little; -1 otherwise. Nested events carry their top-level op's.
  std::vector<int32_t> alternative;
};

/// Bits of `Attribution::calls_inferred`: why a module's call count rests on op order.
enum CallsInferred : uint8_t {
  /// Its first child ran again with nothing between that shows a return: one call or two
  /// (net(net(x)); Attend's f(A), f(B)) cannot be told apart.
  kCallsRestart = 1 << 0,
  /// A call of it ran only some of its layers (a method other than forward, children called
  /// directly: an encoder's features(), a Transformer's encoder and decoder called by hand).
  kCallsPartial = 1 << 1,
  /// It shows no call while a submodule ran: its children were called directly, or its calls
  /// could not be seen.
  kCallsNone = 1 << 2,
  /// A user module that shows no call, nor does any submodule, while the module holding it ran:
  /// its forward may have run no op that shows it (one that returns its input), or not at all.
  kCallsHidden = 1 << 3,
  /// A user module with no parameters, no observed call and no submodule that ran, whose calls
  /// are those of the ops op order gave it: it may have run more or less often, or not at all (a
  /// registered placeholder whose forward never runs, next to a module that ran).
  kCallsGuessed = 1 << 4,
};

/// Where an autograd node came from: the forward op that created it.
struct Origin {
  int thread = -1;
  int event = -1;
};

/// A run of consecutive top-level events of one phase on one thread: the model's forward work
/// (neither an optimizer step's nor work outside the model), or one backward pass.
struct PhaseSpan {
  int thread = 0;                 ///< index into AttributionInput::threads
  Phase phase = Phase::kForward;  ///< kForward or kBackward
  int64_t start = 0, end = 0;     ///< timestamp units
  /// Forward: true. Backward: the pass ran a node of this model (another model's backward pass,
  /// in a loop with several profilers, is outside it).
  bool ours = true;
  /// Backward: the pass also ran nodes of another profiled model's forward (a GAN's generator
  /// and discriminator in one backward()): this model's backward time is then `own`, not the
  /// pass's span.
  bool shared = false;
  /// Backward: the summed time of this model's own nodes in the pass (timestamp units).
  int64_t own = 0;
};

struct Attribution {
  std::vector<ThreadAttribution> threads;
  /// Phase spans of every thread, each thread's in time order.
  std::vector<PhaseSpan> phase_spans;
  /// Calls of every non-ignored module, all threads, in no particular order.
  std::vector<CallSpan> calls;
  /// Modules whose calls came from FLOPSPROF_MODULE() scopes.
  std::vector<bool> scoped;
  /// Per module: bits of `CallsInferred` saying why its call count rests on op order (0: it does
  /// not, or its calls were observed).
  std::vector<uint8_t> calls_inferred;
  /// Sets of modules (kOutsideModel for the caller) whose forward may have run an op a rule placed
  /// elsewhere: `ThreadAttribution::alternative` indexes them. Sorted, no duplicates.
  std::vector<std::vector<int>> alternatives;
  /// The forward op that created each autograd node, per thread per event (-1 elsewhere).
  std::vector<std::vector<Origin>> origin;
};

struct AttributionInput {
  const ModuleTree* tree = nullptr;
  std::vector<const ThreadEvents*> threads;
  const NameLookup* names = nullptr;
  int64_t stop_tick = 0;  ///< end of events and scopes still open (timestamp units)
};

/// Applies the rules above. Pure: no torch, no globals.
Attribution attribute(const AttributionInput& input);

/// Whether module `m` of `tree` may claim an op named `op` through ownership (rule 4).
bool module_runs_op(const ModuleTree& tree, int m, const std::string& op);

/// The module and phase of event `i` on thread `t`, as the attribution placed it (an autograd
/// node is backward; an op the attribution left without a phase counts as forward).
std::pair<int, Phase> event_owner(const Attribution& attribution,
                                  const std::vector<const ThreadEvents*>& threads, size_t t,
                                  size_t i);

/// The outermost call of a module in no running profile's tree around op `e` of thread `th` (a
/// member never passed to register_module(), a module built in forward, a model no profiler
/// knows), when `e` ran in no call of a module of this or another profiled model: the index of
/// that call's scope record, the unit its ops are placed with. -1: none.
int unknown_module_call(const ThreadEvents& th, const RawEvent& e);

/// A module's dotted name, or "(outside the model)" / "(autograd)" for the pseudo-owners.
std::string module_label(const ModuleTree& tree, int module);

}  // namespace flopsprof::detail
