"""Runs Holistic Trace Analysis (HTA) on a multi-rank job's flopsprof traces; prints JSON.

    PYTHONPATH=<hta> /usr/bin/python3 tests/hta_check.py TRACE_DIR

What HTA finds: its ranks, its profiler steps, each rank's step start on HTA's shared timeline
(microseconds after the earliest event of all ranks), the c10d collectives per rank, a temporal
breakdown of each rank's CPU work in the step (busy, in collectives, idle; merged intervals as HTA
merges kernels), and its straggler analysis: with its default metric (the late start of GPU
communication kernels: on CPU-only traces it raises, and the error is reported) and with the same
metric over the c10d collectives of the CPU timeline, through HTA's own hook for a metric
(`straggler_identification_impl`).
"""
import json
import logging
import re
import sys

logging.disable(logging.WARNING)  # HTA logs its progress as warnings

from hta.analyzers.straggler import _get_top_k_stragglers_with_metric  # noqa: E402
from hta.trace_analysis import TraceAnalysis  # noqa: E402
from hta.utils.utils import merge_kernel_intervals  # noqa: E402


COLLECTIVE = r"^(gloo|nccl|mpi|ucc):"


def late_start_collectives(df, symbol_table, n_stragglers=2, visualize=False):
    """HTA's late-start metric on CPU collectives: of the collective calls (by iteration, name and
    occurrence), the one whose normalized start time varies most across ranks; the ranks that
    start it last are the potential stragglers (the others wait for them)."""
    names = symbol_table.get_sym_table()
    comm = df[df["name"].map(lambda i: bool(re.match(COLLECTIVE, names[i])))].copy()
    comm = comm.sort_values("ts")
    comm["occurrence"] = comm.groupby(["rank", "iteration", "name"]).cumcount()
    t_min = df["ts"].min()
    iters = max(df["iteration"].nunique(), 1)
    mean_iter_time = ((df["ts"] + df["dur"]).max() - t_min) / float(iters)
    comm["normalized_start_time"] = (comm["ts"] - t_min) / mean_iter_time
    spread = comm.groupby(["iteration", "name", "occurrence"])["normalized_start_time"].std()
    iteration, name, occurrence = spread.idxmax()
    metric = comm[
        comm["iteration"].eq(iteration) & comm["name"].eq(name) & comm["occurrence"].eq(occurrence)
    ]
    return _get_top_k_stragglers_with_metric(metric, "normalized_start_time", n_stragglers, visualize)


def busy_us(df):
    if df.empty:
        return 0
    merged = merge_kernel_intervals(df[["ts", "dur"]].copy())
    return int(merged["end"].sum() - merged["ts"].sum())


def main(trace_dir):
    analysis = TraceAnalysis(trace_dir=trace_dir)
    t = analysis.t
    sym = t.symbol_table
    names = sym.get_sym_table()
    ids = sym.get_sym_id_map()
    out = {"ranks": t.get_ranks(), "steps": [int(s) for s in analysis.get_profiler_steps()]}
    out["step_start_us"], out["collectives"], out["collective_names"] = {}, {}, {}
    out["breakdown"] = {}
    cpu_cats = {ids[c] for c in ("cpu_op", "user_annotation") if c in ids}
    for rank in t.get_ranks():
        df = t.get_trace(rank)
        name = df["name"].map(lambda i: names[i])
        steps = df[name.str.startswith("ProfilerStep#")]
        if steps.empty:
            sys.exit(f"rank {rank}: no ProfilerStep#N annotation in its trace (kineto's step marker)")
        step = steps.iloc[0]
        out["step_start_us"][str(rank)] = int(step["ts"])
        comm = df[name.str.match(COLLECTIVE)]
        out["collectives"][str(rank)] = int(len(comm))
        out["collective_names"][str(rank)] = sorted(set(name[comm.index]))
        in_step = df[(df["ts"] >= step["ts"]) & (df["ts"] < step["ts"] + step["dur"])]
        in_step_names = name[in_step.index]
        ops = in_step[in_step["cat"].isin(cpu_cats) & ~in_step_names.str.startswith("ProfilerStep#")]
        cpu = busy_us(ops)
        collective = busy_us(in_step[in_step_names.str.match(COLLECTIVE)])
        out["breakdown"][str(rank)] = {
            "step_us": int(step["dur"]),
            "cpu_busy_us": cpu,
            "collective_us": collective,
            "compute_us": cpu - collective,
            "idle_us": int(step["dur"]) - cpu,
        }
    try:
        out["stragglers"] = [int(r) for r in analysis.get_potential_stragglers(num_candidates=1)]
    except Exception as e:  # noqa: BLE001 - reported, the test decides
        out["stragglers_error"] = f"{type(e).__name__}: {e}"
    out["stragglers_cpu_collectives"] = [
        int(r)
        for r in analysis.get_potential_stragglers(
            num_candidates=1, straggler_identification_impl=late_start_collectives
        )
    ]
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
