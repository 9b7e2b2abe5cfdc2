// Comparing two profiles: what changed, per module and per op, and a gate for CI
// (docs/diff.md). Torch-free: works on ProfileResults and on the JSON files profiles are saved as.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "flopsprof/report.h"

namespace flopsprof {

/// A profile read back from the JSON `to_json`, `save_json` or `flopsprof MODEL --json` wrote.
struct LoadedProfile {
  ProfileResult result;
  int schema_version = 0;
  std::string source;  ///< the file it came from ("<string>" for text)
  /// What the file does not record, never taken as 0: "workload" (schema_version 1),
  /// "memory" (not tracked), "bytes", "backward" (no backward keys), "module_ops" (no
  /// per-module op tables). diff() marks the
  /// quantities that rest on them unknown and says so in its warnings.
  std::vector<std::string> missing;
};

/// Parses a profile's JSON (schema_version 1 or 2). Throws `Error` naming `source` and what is
/// wrong for text that is not JSON or not a flopsprof profile (no `schema_version`, a newer
/// schema, a module or op without a required key or with a value of the wrong type). Fills what
/// diff() compares: the summary's totals, workload, spreads, modules, ops, memory peak.
LoadedProfile profile_from_json(const std::string& text, const std::string& source = "<string>");
/// The largest profile file `load_profile_json` reads: 1 GiB (a profile of 100,000 modules with
/// their op tables takes about 100 MB).
constexpr uint64_t kMaxProfileBytes = uint64_t{1} << 30;

/// `profile_from_json` of a file: a regular file (not a folder, FIFO or device) of at most
/// kMaxProfileBytes. `Error` naming the path and the reason when it cannot be read. Values nested
/// more than 64 levels deep are refused before parsing; messages quote at most 60 characters of a
/// bad value.
LoadedProfile load_profile_json(const std::string& path);

/// A profile standing for repeated runs of one workload (the command's --profile-runs): the
/// first run's numbers, with every module's (and the summary's) forward, backward and step
/// spreads taken over the runs, and `workload.runs` their count. Modules are matched by name.
/// Throws `Error` for no runs, or runs of different models (module names differ).
ProfileResult combine_runs(const std::vector<ProfileResult>& runs);

/// An exact quantity (FLOPs, MACs, params, calls, bytes) on both sides. `known` is false when a
/// side does not record it (an older file, memory not tracked): then no delta is claimed.
struct CountDelta {
  uint64_t base = 0, next = 0;
  bool known = true;
  int64_t delta() const;  ///< next - base, saturating at the int64 range
  /// |next - base|, exact over the whole uint64 range (the sign: next < base).
  uint64_t abs_delta() const { return next >= base ? next - base : base - next; }
  /// 100 x delta / base; +/-infinity when base is 0 and next is not; 0 when both are 0.
  double percent() const;
  bool changed() const { return known && base != next; }
};

/// A latency on both sides, seconds. With repeats on both sides (spreads with 2+ samples), the
/// values are medians per iteration and `noise` is set when the two [min, max] ranges overlap;
/// otherwise they are the profiles' totals, single samples (`repeated` false).
struct TimeDelta {
  double base = 0, next = 0;
  bool known = true;
  bool repeated = false;  ///< medians of repeated runs on both sides
  bool noise = false;     ///< the change is inside the run-to-run spread
  double delta() const { return next - base; }
  double percent() const;  ///< as CountDelta::percent
};

/// A rate or ratio on both sides (tokens/s, MFU, MBU as fractions). 0 on a side: unknown there
/// (no tokens, no peaks), and then no delta is claimed.
struct RateDelta {
  double base = 0, next = 0;
  bool known() const { return base > 0 && next > 0; }
  double delta() const { return next - base; }
  double percent() const;  ///< as CountDelta::percent
};

/// kSame: a module with the same type and the same exact quantities (FLOPs, MACs, params, calls,
/// backward FLOPs, bytes), an op with the same calls, FLOPs, MACs and bytes; latency may still
/// differ (its own delta and noise flag). kChanged: the type or an exact quantity differs.
/// kAdded / kRemoved: in one profile only.
enum class DiffStatus { kSame, kChanged, kAdded, kRemoved };

/// One op, matched by name and phase (the model's op table) or by name (a module's own ops).
struct OpDiff {
  std::string name, phase;
  DiffStatus status = DiffStatus::kSame;
  CountDelta calls, flops, macs, bytes;
  TimeDelta latency;  ///< totals (ops carry no spread)
};

/// One module of either profile, matched by dotted name (after DiffOptions::renames).
struct ModuleDiff {
  using Status = DiffStatus;
  Status status = Status::kSame;
  std::string name;                 ///< dotted name in the new profile (the base's when removed)
  std::string base_name;            ///< its name in the base (differs when renamed)
  std::string base_type, new_type;  ///< "" on the side it is absent from
  int depth = 0;
  CountDelta params, calls, flops, macs, bwd_flops, bytes;
  TimeDelta latency, bwd_latency;
  /// Its share of the root's latency delta (forward): delta / the root's delta, when
  /// `share_known`: the root's delta is outside the noise (not inside the run-to-run spread; with
  /// single samples, at least 1% of the root's latency). 0 otherwise.
  double share_of_delta = 0;
  bool share_known = false;
  /// Its own forward ops (not its submodules'), matched by name, by |latency delta|. Empty for a
  /// side from a file without per-module ops (written before they were recorded).
  std::vector<OpDiff> ops;
};

/// One region (FlopsProfiler::region(): a phase such as "prefill" or "decode") of either profile,
/// matched by name. kChanged: its windows, tokens, FLOPs, backward FLOPs or bytes differ.
struct RegionDiff {
  std::string name;
  DiffStatus status = DiffStatus::kSame;
  CountDelta windows, tokens, flops, bwd_flops, bytes;
  /// Wall time: medians per window when both sides have 2+ windows (noise when their per-window
  /// ranges overlap), else the regions' totals.
  TimeDelta latency;
  TimeDelta latency_per_token;  ///< known when both sides know their tokens
  RateDelta tokens_per_s, mfu, mbu;
};

/// One line of the totals.
struct TotalDiff {
  std::string key;  ///< "params", "fwd_flops", "fwd_latency_s", "memory.peak_bytes", ...
  bool is_time = false;
  CountDelta count;  ///< when !is_time
  TimeDelta time;    ///< when is_time
};

struct DiffOptions {
  /// Base names to new names: a module renamed (and its submodules with it), e.g.
  /// {"encoder.layer", "encoder.layers"}.
  std::vector<std::pair<std::string, std::string>> renames;
};

/// The comparison of two profiles.
struct ProfileDiff {
  std::string base_source, new_source;
  /// The latency statistic of every module, op, total and region line: "median per iteration"
  /// when both profiles repeated their iterations (spreads of 2+ samples at the root: several
  /// iterations or `--profile-runs N`) and neither has regions; else "total" (whole-profile sums;
  /// a profile with regions keeps its per-window figures in the regions table).
  std::string statistic = "total";
  /// Each side's workload in one line ("inputs fp32[4, 16]; batch 4; 1 iteration; 3 runs; 2
  /// intra-op threads; LibTorch 1.13.0 Release; <CPU>; flopsprof 0.1.0").
  std::string base_workload, new_workload;
  /// Where the workloads differ ("batch_size: 4 (base) vs 2 (new)"), what a side does not
  /// record, and whether latency deltas are single samples. Data, not only text.
  std::vector<std::string> warnings;
  std::vector<TotalDiff> totals;
  std::vector<ModuleDiff> modules;  ///< the new profile's tree order, removed modules after
                                    ///< their base parent; the roots always match
  std::vector<OpDiff> ops;          ///< by |latency delta|, largest first
  /// The regions of both profiles: the new profile's order, then those only in the base.
  std::vector<RegionDiff> regions;
  const TotalDiff* total(const std::string& key) const;
  const RegionDiff* region(const std::string& name) const;
  const ModuleDiff* module(const std::string& name) const;  ///< by new (or removed) name
};

/// Compares `base` with `next`. Never throws for well-formed results; `Error` for a rename
/// whose old name is not in the base.
ProfileDiff diff(const LoadedProfile& base, const LoadedProfile& next,
                 const DiffOptions& options = {});
/// The same for results in memory (nothing missing, sources "base" and "new").
ProfileDiff diff(const ProfileResult& base, const ProfileResult& next,
                 const DiffOptions& options = {});

/// What the text rendering shows.
struct DiffTextOptions {
  int depth = -1;                ///< deepest module level shown; -1: all
  int top = 0;                   ///< > 0: only the N modules with the largest deltas, largest first
  double threshold_percent = 0;  ///< hide modules whose every delta is under this % of its base
  double threshold_s = 0;        ///< and whose latency delta is under this many seconds
  bool ops = true;               ///< the model's op table's deltas
  bool module_ops = false;       ///< each shown module's own ops' deltas under it (--ops)
};

/// Text for a terminal: header and warnings, totals side by side, the modules (tree order, or
/// by largest delta with `top`), the ops.
std::string format_diff_text(const ProfileDiff& d, const DiffTextOptions& options = {});
/// JSON (docs/json.md, "Diff"): warnings, summary, modules with base/new/delta, ops.
std::string diff_to_json(const ProfileDiff& d, int indent = 2);
/// One self-contained HTML page: totals, warnings, the module tree coloured by delta.
std::string diff_to_html(const ProfileDiff& d);

/// A CI rule: `[module=NAME:|region=NAME:]FIELD OP VALUE[%]`, e.g. `latency>+5%`, `flops>0`,
/// `params!=0`, `memory.peak>+10%`, `module=encoder.layer.0:latency>+20%`,
/// `region=decode:tokens_per_s<-5%`. OP is one of > >= < <= == !=; the delta (new - base; with
/// %, its percent of |base|) is compared with VALUE. Fields: latency, bwd_latency, step_latency,
/// iter_latency, flops, macs, bwd_flops, params, calls, bytes, memory.peak (totals only); a
/// region's: latency, latency_per_token, tokens_per_s, mfu, mbu (fractions: 0.05 is 5 points),
/// flops, bwd_flops, bytes, tokens, windows.
struct GateRule {
  std::string text;    ///< as given
  std::string module;  ///< "" : the totals (or a region's)
  std::string region;  ///< "" : the totals (or a module's)
  std::string field;
  std::string op;
  double value = 0;
  bool percent = false;
  /// The value when it is written as an integer (no '.', no exponent), exactly: its sign and
  /// magnitude, saturated at 2^64 (`beyond`: larger than any count's delta). Count fields compare
  /// their exact delta with it, so 2^64 - 1 is never rounded to 2^64.
  bool integer = false, negative = false, beyond = false;
  uint64_t magnitude = 0;
};

/// Parses a rule; `Error` naming what is wrong (an unknown field, operator or number).
GateRule parse_gate_rule(const std::string& text);

/// The outcome of the rules on a diff.
struct GateResult {
  std::vector<std::string> broken;   ///< rules that hold, each with the values that break it
  std::vector<std::string> noise;    ///< latency rules that would break but the delta is noise
  std::vector<std::string> unknown;  ///< rules that cannot be checked (a side lacks the field, a
                                     ///< module in neither profile): bad input, exit 2. A module in
                                     ///< one profile only is checked against 0 on the other side.
};
GateResult check_gate(const ProfileDiff& d, const std::vector<GateRule>& rules);

/// `flopsprof diff` as a function: arguments after "diff", output to `out`, messages to `err`;
/// returns the exit code (0 no rule broken, 1 a --fail-if rule broken, 2 bad input).
int diff_command(const std::vector<std::string>& args, std::string& out, std::string& err);

}  // namespace flopsprof
