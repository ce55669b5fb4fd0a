#!/usr/bin/env python3
"""Permission-policy benchmark: Python check, raw C, fnmatch/wcmatch baselines, pathological globs.

    python bench/policy/run.py [--quick] [--json OUT] [--profile] [--clock wall|cpu]
                               [--instructions]

One run measures, on one deterministic workload (bench/policy/workload.py:
a 200-rule policy and 20,000 tool calls):

1. ``PermissionPolicy.check(tool, args)`` calls/s from Python, with a
   breakdown of where a call's time goes (argument string, binding, C), on
   this workload and on a second, "mixed" one (workload.mixed_calls: bash
   lines of many shapes, file paths, git, download and network, MCP tools).
   check() remembers its last bash lines; every timed pass starts with that
   memo empty (so only repeats within a pass count), and the warm figure
   (the memo kept across passes) is printed beside it. ``--instructions``
   also counts the instructions of one cold pass of each workload under
   ``valgrind --tool=callgrind`` (steady on a shared machine, where calls/s
   are not);
2. the C core alone: bench/policy/raw_match.c is compiled with ``cc`` (or
   $CC) against native/src and times ``a3s_ruleset_check`` over the same
   (tool, argument string) pairs, and every rule pattern alone
   (``a3s_glob_match``) over every subject;
3. baselines on the same pairs and rule semantics: stdlib ``fnmatch``
   (translate + re.compile), ``wcmatch`` (glob/fnmatch compile), and an
   exact-semantics ``re`` translation that doubles as a correctness oracle;
4. pathological patterns (``*a*a*a*a*a*a*a*a*b`` and friends, long ``**/``
   chains) against 10,000 and 65,536-byte subjects through ``Glob.match``.

Targets are printed as PASS/FAIL lines; they never fail the script, which
exits 0 unless the benchmark itself breaks. ``--quick`` shrinks repeats and
baseline sample sizes (a CI smoke run: about 10 s of CPU); the full run takes
about a minute on 2 cores. Rates are best-of-N (the least-disturbed pass, as
timeit recommends) with the median alongside; GC is off while timing.
``--clock cpu`` times with process CPU time instead of wall time, which is
steadier when other processes compete for the cores. bench/README.md explains
how to read the output.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import platform
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))  # bench/report.py

try:
    import codeward
except ImportError:  # a source tree with the extension built in place
    sys.path.insert(0, str(ROOT / "python"))
    import codeward

import baselines  # noqa: E402
import workload  # noqa: E402

from codeward import PermissionPolicy, _native  # noqa: E402
from codeward._native import Glob  # noqa: E402
from codeward.policy import argument_string  # noqa: E402
from report import section, table  # noqa: E402

# The argument strings check() decides a call on: one, or one per file of a multi-file
# read (a private helper; an older package without it has one string per call). A bash
# line is one string: the rule set splits it into its simple commands itself.
_decision_subjects: Callable[..., tuple[str, list[Any]]] | None = getattr(
    importlib.import_module("codeward.policy._subject"), "decision_subjects", None
)


def call_pairs(tool: str, args: Any) -> list[tuple[str, str]]:
    """The (canonical tool, argument string) pairs PermissionPolicy.check evaluates for a call."""
    name, subject = argument_string(tool, args)
    if _decision_subjects is None or name != "read" or "\n" not in subject:
        return [(name, subject)]
    name, subjects = _decision_subjects(tool, args)
    return [(name, s.text) for s in subjects]


TARGET_CHECKS_PER_S = 500_000
TARGET_RAW_VS_FNMATCH = 10.0
TARGET_PATHOLOGICAL_US = 1000.0
LIST_NAMES = {0: "none", 1: "deny", 2: "allow", 3: "ask"}
POLICY_CORE = ("error.c", "glob.c", "ruleset.c")  # all raw_match.c needs from native/src


@dataclass(frozen=True)
class Config:
    py_repeats: int  # passes over all 20k calls for PermissionPolicy.check
    stage_repeats: int  # passes for each stage of the breakdown
    c_check_repeats: int  # passes over all pairs in raw_match
    c_pattern_repeats: int  # passes of (every pattern x every subject) in raw_match
    base_pairs: int  # pairs for the fnmatch / re-exact rule sets (0 = all)
    base_repeats: int
    wc_pairs: int  # pairs for the wcmatch rule set (0 = all)
    wc_repeats: int
    pp_subjects: int  # subjects per pattern, Python engines (0 = all)
    wc_pp_subjects: int  # subjects per pattern, wcmatch
    pp_repeats: int
    patho_min_s: float  # a timed batch of one pathological case lasts at least this
    patho_repeats: int


FULL = Config(
    py_repeats=15,
    stage_repeats=10,
    c_check_repeats=100,
    c_pattern_repeats=7,
    base_pairs=0,
    base_repeats=10,
    wc_pairs=0,
    wc_repeats=3,
    pp_subjects=0,
    wc_pp_subjects=2000,
    pp_repeats=4,
    patho_min_s=0.02,
    patho_repeats=5,
)
QUICK = Config(
    py_repeats=3,
    stage_repeats=2,
    c_check_repeats=10,
    c_pattern_repeats=1,
    base_pairs=4000,
    base_repeats=2,
    wc_pairs=1000,
    wc_repeats=1,
    pp_subjects=1000,
    wc_pp_subjects=200,
    pp_repeats=1,
    patho_min_s=0.002,
    patho_repeats=1,
)


# --------------------------------------------------------------------------
# timing and printing
# --------------------------------------------------------------------------


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
clock: Callable[[], float] = time.perf_counter  # set from --clock in main()


def timed(fn: Callable[[], Any], repeats: int, warmup: bool = True) -> list[float]:
    """Times of `repeats` calls of fn (after one untimed warm-up), GC off."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        if warmup:
            fn()
        times = []
        for _ in range(repeats):
            t0 = clock()
            fn()
            times.append(clock() - t0)
        return times
    finally:
        if enabled:
            gc.enable()


def timed_together(fns: dict[str, Callable[[], Any]], repeats: int) -> dict[str, list[float]]:
    """Like timed() for several functions, interleaved so that they share the same
    machine conditions (a noisy neighbour slows all of them, not just one)."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for fn in fns.values():
        timed(fn, 0)  # warm-up
    for _ in range(repeats):
        for k, fn in fns.items():
            times[k].extend(timed(fn, 1, warmup=False))
    return times


@dataclass
class Rate:
    items: int
    best_s: float
    median_s: float

    @classmethod
    def of(cls, items: int, times: Sequence[float]) -> Rate:
        return cls(items, min(times), statistics.median(times))

    @property
    def best(self) -> float:
        return self.items / self.best_s

    @property
    def median(self) -> float:
        return self.items / self.median_s

    @property
    def us_per_item(self) -> float:
        return self.best_s / self.items * 1e6

    def as_dict(self) -> dict[str, float]:
        return {**asdict(self), "per_s_best": self.best, "per_s_median": self.median}


def si(x: float) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= scale:
            return f"{x / scale:.2f}{unit}"
    return f"{x:.0f}"


# --------------------------------------------------------------------------
# 1. PermissionPolicy.check from Python
# --------------------------------------------------------------------------


def clear_memo(policy: PermissionPolicy) -> None:
    """Empties check()'s memo of bash lines (an older package has none, or keeps it in an
    lru_cache)."""
    clear = getattr(getattr(policy, "_ruleset", None), "clear_memo", None)
    if clear is None:
        clear = getattr(getattr(policy, "_bash_memo", None), "cache_clear", None)
    if clear is not None:
        clear()


def bench_workloads(
    policy: PermissionPolicy, workloads: dict[str, list[tuple[str, Any]]], cfg: Config
) -> dict[str, dict[str, Rate]]:
    """check() calls/s per workload, cold (memo emptied at the start of each pass) and warm,
    interleaved so that every workload sees the same machine load."""
    check = policy.check

    def cold(xs: list[tuple[str, Any]]) -> None:
        clear_memo(policy)
        for tool, args in xs:
            check(tool, args)

    def warm(xs: list[tuple[str, Any]]) -> None:
        for tool, args in xs:
            check(tool, args)

    fns: dict[str, Callable[[], Any]] = {}
    for name, calls in workloads.items():
        fns[f"{name} cold"] = partial(cold, calls)
        fns[f"{name} warm"] = partial(warm, calls)
    times = timed_together(fns, cfg.py_repeats)
    out: dict[str, dict[str, Rate]] = {}
    for name, calls in workloads.items():
        out[name] = {t: Rate.of(len(calls), times[f"{name} {t}"]) for t in ("cold", "warm")}
    return out


def instructions_per_call(name: str) -> float | None:
    """Instructions of one cold pass of a workload's check() calls, per call, counted by
    callgrind in a child (only the calls: collection is on inside itertools.starmap)."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    with tempfile.TemporaryDirectory(prefix="a3s-bench-cg-") as tmp:
        cmd = [
            valgrind,
            "--tool=callgrind",
            "--collect-atstart=no",
            "--toggle-collect=starmap_next",
            f"--callgrind-out-file={tmp}/cg.out",
            sys.executable,
            str(Path(__file__).resolve()),
            "--instr-child",
            name,
        ]
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        run = subprocess.run(cmd, capture_output=True, text=True, env=env)
    collected = [ln for ln in run.stderr.splitlines() if "Collected :" in ln]
    if run.returncode != 0 or not collected:
        return None
    calls = int(run.stdout.strip() or 0)
    count = int(collected[-1].rsplit(":", 1)[1])
    return count / calls if calls and count else None


def instr_child(name: str) -> int:
    import collections
    import itertools

    rules = workload.policy_rules()
    policy = PermissionPolicy(
        deny=rules["deny"], allow=rules["allow"], ask=rules["ask"], default_decision="ask"
    )
    calls = workload.tool_calls() if name == "bench/policy" else workload.mixed_calls()
    collections.deque(itertools.starmap(policy.check, calls), maxlen=0)
    print(len(calls))
    return 0


def bench_python(
    policy: PermissionPolicy,
    calls: list[tuple[str, dict[str, Any]]],
    pairs_of_call: list[list[tuple[str, str]]],
    kinds: list[str],
    cfg: Config,
) -> dict[str, Any]:
    """Rates are per call; a multi-file read is one call and several rule-set checks."""
    check = policy.check
    pairs = [p for ps in pairs_of_call for p in ps]

    def run_check(xs: Sequence[tuple[str, Any]] = calls) -> None:
        clear_memo(policy)  # cold: only the repeats within this pass are remembered
        for tool, args in xs:
            check(tool, args)

    total = Rate.of(len(calls), timed(run_check, cfg.py_repeats))

    # Breakdown: each stage alone over the same calls, best pass.
    native_check = policy._ruleset.check  # the binding PermissionPolicy.check calls

    def run_argstr(xs: Sequence[tuple[str, Any]] = calls) -> None:
        for tool, args in xs:
            argument_string(tool, args)

    def run_native(xs: Sequence[tuple[str, str]] = pairs) -> None:
        for name, subject in xs:
            native_check(name, subject)

    # The same binding call on a rule set with no rules: argument conversion, the
    # C call, the int result, and next to no matching. A bash line goes under another
    # tool name: a rule set reads every bash line into its commands, rules or none,
    # and that is the bash reader's time, not the binding's.
    empty_check = _native.Ruleset().check
    bound_pairs = [("bash_" if name == "bash" else name, subject) for name, subject in pairs]

    def run_binding(xs: Sequence[tuple[str, str]] = bound_pairs) -> None:
        for name, subject in xs:
            empty_check(name, subject)

    def noop(tool: str, args: Any) -> None:
        return None

    def run_noop(xs: Sequence[tuple[str, Any]] = calls) -> None:
        for tool, args in xs:
            noop(tool, args)

    r = cfg.stage_repeats
    times = timed_together(
        {
            "check": run_check,
            "argument_string": run_argstr,
            "native": run_native,
            "binding": run_binding,
            "loop+call": run_noop,
        },
        r,
    )
    stages = {k: Rate.of(len(calls), v) for k, v in times.items()}
    per_kind: dict[str, dict[str, float]] = {}
    for kind in sorted(set(kinds), key=kinds.index):
        idx = [i for i, k in enumerate(kinds) if k == kind]
        kc = [calls[i] for i in idx]
        kp = [p for i in idx for p in pairs_of_call[i]]
        kt = timed_together(
            {
                "check_us": partial(run_check, kc),
                "argstr_us": partial(run_argstr, kc),
                "native_us": partial(run_native, kp),
            },
            r,
        )
        per_kind[kind] = {k: Rate.of(len(idx), v).us_per_item for k, v in kt.items()}
        per_kind[kind]["calls"] = len(idx)
        per_kind[kind]["pairs"] = len(kp)
        per_kind[kind]["subject_bytes_mean"] = sum(len(s) for _, s in kp) / len(kp)
    native_per_check = Rate(len(pairs), stages["native"].best_s, stages["native"].median_s)
    return {
        "total": total,
        "stages": stages,
        "native_per_check": native_per_check,
        "per_kind": per_kind,
    }


def profile_check(policy: PermissionPolicy, calls: list[tuple[str, dict[str, Any]]]) -> None:
    import cProfile
    import pstats

    check = policy.check
    prof = cProfile.Profile()
    prof.enable()
    for tool, args in calls:
        check(tool, args)
    prof.disable()
    section("cProfile of one pass of PermissionPolicy.check (top 15 by own time)")
    pstats.Stats(prof, stream=sys.stdout).sort_stats("tottime").print_stats(15)


# --------------------------------------------------------------------------
# 2. raw C
# --------------------------------------------------------------------------


def find_cc() -> str | None:
    cc = os.environ.get("CC")
    if cc:
        return cc
    for name in ("cc", "gcc", "clang"):
        path = shutil.which(name)
        if path:
            return path
    return None


def dump_workload(
    path: Path,
    rules: dict[str, list[str]],
    pairs: list[tuple[str, str]],
    kinds: list[str],
    kind_names: list[str],
) -> None:
    def enc(s: str) -> bytes:
        b = s.encode("utf-8", "surrogatepass")
        return struct.pack("<I", len(b)) + b

    out = [b"A3SBENCH"]
    ordered = [(baselines.LIST_CODES[n], r) for n in ("deny", "allow", "ask") for r in rules[n]]
    out.append(struct.pack("<I", len(ordered)))
    for code, rule in ordered:
        out.append(struct.pack("<I", code) + enc(rule))
    out.append(struct.pack("<I", len(pairs)))
    kind_id = {k: i for i, k in enumerate(kind_names)}
    for (name, subject), kind in zip(pairs, kinds, strict=True):
        out.append(enc(name) + enc(subject) + struct.pack("<I", kind_id[kind]))
    out.append(struct.pack("<I", len(kind_names)))
    out.extend(enc(k) for k in kind_names)
    path.write_bytes(b"".join(out))


def bench_raw_c(
    rules: dict[str, list[str]],
    pairs: list[tuple[str, str]],
    kinds: list[str],
    cfg: Config,
    clock_name: str,
) -> dict[str, Any]:
    cc = find_cc()
    if cc is None:
        return {"skipped": "no C compiler (set CC or install cc)"}
    kind_names = sorted(set(kinds), key=kinds.index)
    with tempfile.TemporaryDirectory(prefix="a3s-bench-") as tmp:
        tmpdir = Path(tmp)
        exe = tmpdir / "raw_match"
        src_dir = ROOT / "native" / "src"

        include = f"-I{ROOT / 'native' / 'include'}"

        def compile_one(src: Path) -> tuple[Path, Path, subprocess.CompletedProcess[str]]:
            obj = tmpdir / (src.stem + ".o")
            cmd = [cc, "-O2", "-std=c11", include, "-c", str(src), "-o", str(obj)]
            return src, obj, subprocess.run(cmd, capture_output=True, text=True)

        # One compiler per source file, in parallel, then one link.
        t0 = time.perf_counter()
        sources = [*sorted(src_dir.glob("*.c")), HERE / "raw_match.c"]
        try:
            with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
                built = list(pool.map(compile_one, sources))
        except OSError as exc:
            return {"skipped": f"cannot run the C compiler {cc!r}: {exc}"}
        objs = [obj for _, obj, r in built if r.returncode == 0]
        failed = [(src, r) for src, _, r in built if r.returncode != 0]
        note = ""
        if failed:
            needed = {*POLICY_CORE, "raw_match.c"}
            if any(src.name in needed for src, _ in failed):
                return {"skipped": "compile failed:\n" + failed[0][1].stderr[-2000:]}
            # raw_match needs only the policy core: a half-written unrelated file
            # should not cost the benchmark its C numbers.
            note = "left out (did not compile): " + ", ".join(src.name for src, _ in failed)
        link = [cc, *map(str, objs), "-o", str(exe)]
        if sys.platform.startswith("linux"):
            link.append("-lpthread")
        linked = subprocess.run(link, capture_output=True, text=True)
        if linked.returncode != 0:
            return {"skipped": "link failed:\n" + linked.stderr[-2000:]}
        build_s = time.perf_counter() - t0
        wl, dec = tmpdir / "workload.bin", tmpdir / "decisions.bin"
        dump_workload(wl, rules, pairs, kinds, kind_names)
        run = subprocess.run(
            [
                str(exe),
                str(wl),
                str(dec),
                str(cfg.c_check_repeats),
                str(cfg.c_pattern_repeats),
                clock_name,
            ],
            capture_output=True,
            text=True,
        )
        if run.returncode != 0:
            return {"skipped": f"raw_match failed ({run.returncode}): {run.stderr[-2000:]}"}
        result: dict[str, Any] = json.loads(run.stdout)
        result["decisions"] = list(dec.read_bytes())
        result["build_s"] = build_s
        result["cc"] = cc
        result["build_note"] = note
        return result


# --------------------------------------------------------------------------
# 3. baselines
# --------------------------------------------------------------------------


def bench_baselines(
    policy: PermissionPolicy,
    pairs: list[tuple[str, str]],
    ref: list[int],
    c_result: dict[str, Any],
    cfg: Config,
) -> dict[str, Any]:
    views = policy.rules()
    subjects_all = [s for _, s in pairs]
    glob_cache: dict[int, Any] = {}
    out: dict[str, Any] = {}
    for name, factory in baselines.ENGINES.items():
        try:
            engine = factory()
        except ImportError as exc:
            out[name] = {"skipped": f"{exc} (pip install wcmatch)"}
            continue
        t0 = time.perf_counter()
        rs = baselines.PyRuleset(views, engine)
        compile_s = time.perf_counter() - t0  # always wall time
        is_wc = name == "wcmatch"
        n_pairs = (cfg.wc_pairs if is_wc else cfg.base_pairs) or len(pairs)
        sub = pairs[:n_pairs]
        chk = rs.check

        def run(sub: list[tuple[str, str]] = sub, chk: Callable[[str, str], int] = chk) -> None:
            for tool, subject in sub:
                chk(tool, subject)

        rate = Rate.of(len(sub), timed(run, cfg.wc_repeats if is_wc else cfg.base_repeats))
        decisions = [chk(t, s) for t, s in sub]
        agree = sum(d == r for d, r in zip(decisions, ref, strict=False)) / len(sub)

        # Per pattern: every rule pattern alone over the subjects (as raw_match does).
        n_subj = (cfg.wc_pp_subjects if is_wc else cfg.pp_subjects) or len(subjects_all)
        subjects = subjects_all[:n_subj]
        matchers = rs.arg_matchers
        hits: list[int] = []

        def run_pp(
            matchers: list[tuple[int, Any]] = matchers,
            subjects: list[str] = subjects,
            hits: list[int] = hits,
        ) -> None:
            hits.clear()
            for _, m in matchers:
                hits.append(baselines.count_hits(m, subjects))

        pp = Rate.of(len(matchers) * len(subjects), timed(run_pp, cfg.pp_repeats, warmup=False))
        # a3s's own hit count on the same subjects, to show how far the semantics differ
        if n_subj == len(subjects_all) and "per_pattern" in c_result:
            a3s_hits = sum(p["hits"] for p in c_result["per_pattern"])
        else:
            a3s_hits = 0
            for index, _ in matchers:
                if index not in glob_cache:
                    glob_cache[index] = Glob(views[index].pattern)
                g = glob_cache[index]
                a3s_hits += sum(map(g.match, subjects))
        out[name] = {
            "compile_s": compile_s,
            "check": rate,
            "pairs": len(sub),
            "agreement": agree,
            "per_pattern": pp,
            "pp_subjects": len(subjects),
            "patterns": len(matchers),
            "hits": sum(hits),
            "a3s_hits": a3s_hits,
        }
    return out


# --------------------------------------------------------------------------
# 4. pathological patterns
# --------------------------------------------------------------------------


def pathological_cases() -> list[tuple[str, str, str, str]]:
    """(group, label, pattern, subject name)."""
    chain_limit = (4096 - 5) // 3  # "**/" * k + "**b**" at the 4 KiB pattern limit
    shapes = [
        ("*a*a*a*a*a*a*a*a*b", "*a x8 *b (literal suffix)"),
        ("*a*a*a*a*a*a*a*a*b*", "*a x8 *b* (no literal suffix)"),
        ("*a*a*a*a*a*a*a*a*a", "*a x9 (matches)"),
        ("**a**a**a**a**a**a**a**a**b**", "**a x8 **b** (globstar)"),
        ("*a" * 32 + "*b*", "*a x32 *b*"),
        ("**a" * 64 + "**b**", "**a x64 **b**"),
    ]
    chains = [
        ("**/" * 8 + "b", "**/ x8 b"),
        ("**/" * 8 + "**b**", "**/ x8 **b**"),
        ("**/a" * 64 + "**/b", "**/a x64 **/b"),
        ("**/" * 64 + "**b**", "**/ x64 **b**"),
        ("**/" * chain_limit + "**b**", f"**/ x{chain_limit} **b** (4 KiB limit)"),
    ]
    limits = [
        ("*a" * 2000 + "*b*", "*a x2000 *b* (4 KiB)"),
        ("*a" * 2047 + "*", "*a x2047 * (4 KiB limit, matches)"),
        ("**a" * 1364 + "**", "**a x1364 ** (4 KiB limit, matches)"),
    ]
    cases = []
    for pattern, label in shapes:
        for subj in ("a*10000", "a*65536"):
            cases.append(("redos-shapes", label, pattern, subj))
    for pattern, label in chains:
        # "a": one byte, where the documented O(len(pattern) * len(subject) / 64) bound
        # predicts next to nothing, so any time left is spent on the pattern alone.
        for subj in ("a", "a*10000", "a*65536", "a/*32768"):
            cases.append(("**/ chains", label, pattern, subj))
    for pattern, label in limits:
        for subj in ("a*10000", "a*65536"):
            cases.append(("size limits", label, pattern, subj))
    return cases


SUBJECTS = {"a": "a", "a*10000": "a" * 10000, "a*65536": "a" * 65536, "a/*32768": "a/" * 32768}


def bench_pathological(cfg: Config) -> list[dict[str, Any]]:
    results = []
    globs: dict[str, Any] = {}
    for group, label, pattern, subj_name in pathological_cases():
        subject = SUBJECTS[subj_name]
        if pattern not in globs:
            globs[pattern] = Glob(pattern)
        match = globs[pattern].match
        t0 = clock()
        matched = bool(match(subject))
        t = clock() - t0
        n = 1

        def batch(n: int, match: Callable[[str], Any] = match, subject: str = subject) -> None:
            for _ in range(n):
                match(subject)

        while t < cfg.patho_min_s and n < 1 << 20:  # autorange: a batch long enough to time
            n *= 10 if t * 100 < cfg.patho_min_s else 2
            t = timed(partial(batch, n), 1, warmup=False)[0]
        times = [t, *timed(partial(batch, n), cfg.patho_repeats - 1, warmup=False)]
        results.append(
            {
                "group": group,
                "label": label,
                "pattern_len": len(pattern),
                "subject": subj_name,
                "subject_len": len(subject),
                "matched": matched,
                "us_per_match": min(times) / n * 1e6,
            }
        )
    return results


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="few repeats and samples (CI smoke run)")
    ap.add_argument("--json", metavar="OUT", help="also write every figure to OUT as JSON")
    ap.add_argument(
        "--profile", action="store_true", help="also print a cProfile of PermissionPolicy.check"
    )
    ap.add_argument(
        "--clock",
        choices=sorted(CLOCKS),
        default="wall",
        help="wall (default) or cpu: process CPU time, steadier on a busy machine",
    )
    ap.add_argument(
        "--instructions",
        action="store_true",
        help="also count check()'s instructions per call under valgrind --tool=callgrind",
    )
    ap.add_argument("--instr-child", metavar="WORKLOAD", help=argparse.SUPPRESS)
    opts = ap.parse_args(argv)
    if opts.instr_child:
        return instr_child(opts.instr_child)
    cfg = QUICK if opts.quick else FULL
    global clock
    clock = CLOCKS[opts.clock]
    started = time.perf_counter()
    marks: dict[str, float] = {}

    def mark(name: str) -> None:
        marks[name] = time.perf_counter() - started - sum(marks.values())

    try:
        import wcmatch

        wc_version = getattr(wcmatch, "__version__", "?")
    except ImportError:
        wc_version = "not installed"
    print("codeward permission-policy benchmark" + (" (--quick)" if opts.quick else ""))
    print(
        f"  python {platform.python_version()} ({platform.python_implementation()}), "
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs; "
        f"codeward {codeward.__version__} (native {codeward.native_version()}); "
        f"wcmatch {wc_version}"
    )
    print(f"  clock: {opts.clock}; rates are best of N passes (median alongside)")

    # ---- workload -----------------------------------------------------------
    rules = workload.policy_rules()
    policy = PermissionPolicy(
        deny=rules["deny"], allow=rules["allow"], ask=rules["ask"], default_decision="ask"
    )
    calls = workload.tool_calls()
    call_kinds = [workload.kind_of(t) for t, _ in calls]
    pairs_of_call = [call_pairs(t, a) for t, a in calls]
    # The unit of the C and baseline figures: one rule-set check per pair.
    pairs = [p for ps in pairs_of_call for p in ps]
    kinds = [k for k, ps in zip(call_kinds, pairs_of_call, strict=True) for _ in ps]
    ref = [policy._ruleset.check(n, s) for n, s in pairs]  # the list code a3s decides
    # The pairs must reproduce check(): per call, the strictest list of its pairs
    # (deny, then ask or no rule under an ask default, then allow).
    default = policy.default_decision
    strictness = {"deny": 0, "ask": 1, "allow": 2}
    decided_by_pairs, at = [], 0
    for ps in pairs_of_call:
        names = [LIST_NAMES[c] if c else default.value for c in ref[at : at + len(ps)]]
        decided_by_pairs.append(min(names, key=strictness.__getitem__))
        at += len(ps)
    py_consistent = all(
        policy.check(t, a).value == d for (t, a), d in zip(calls, decided_by_pairs, strict=True)
    )
    hist = {LIST_NAMES[c]: ref.count(c) for c in (1, 2, 3, 0)}
    kind_counts = {k: call_kinds.count(k) for k in sorted(set(call_kinds), key=call_kinds.index)}
    mean_len = sum(len(s) for _, s in pairs) / len(pairs)
    print(
        f"  workload: {len(policy.rules())} rules "
        f"(deny {len(rules['deny'])}, allow {len(rules['allow'])}, ask {len(rules['ask'])}), "
        f"{len(calls)} calls (seed {workload.SEED:#x}): "
        + ", ".join(f"{k} {v}" for k, v in kind_counts.items())
    )
    print(
        f"  rule-set checks: {len(pairs)} (a multi-file read is checked once per file); "
        "C and baseline rates are per check, Python rates per call"
    )
    print(
        f"  argument strings: mean {mean_len:.0f} B, max {max(len(s) for _, s in pairs)} B; "
        "deciding list: " + ", ".join(f"{k} {v}" for k, v in hist.items())
    )

    mark("workload")

    # ---- 1. Python ------------------------------------------------------------
    section("1. PermissionPolicy.check from Python (20k calls per pass)")
    py = bench_python(policy, calls, pairs_of_call, call_kinds, cfg)
    total: Rate = py["total"]
    print(
        f"  {si(total.best)} calls/s best of {cfg.py_repeats} "
        f"({total.us_per_item:.2f} us/call), median {si(total.median)}/s"
    )

    mixed = workload.mixed_calls()
    loads = bench_workloads(policy, {"bench/policy": calls, "mixed": mixed}, cfg)
    mixed_kinds = [workload.kind_of(t) for t, _ in mixed]
    print(
        "\n  both workloads, interleaved (cold: check()'s memo of bash lines emptied before each"
        " pass;\n  warm: kept across passes). mixed: "
        + ", ".join(
            f"{k} {mixed_kinds.count(k)}" for k in sorted(set(mixed_kinds), key=mixed_kinds.index)
        )
    )
    instr: dict[str, float | None] = {}
    if opts.instructions:
        for name in loads:
            instr[name] = instructions_per_call(name)
    rows = []
    for name, r in loads.items():
        n_instr = instr.get(name)
        rows.append(
            [
                name,
                si(r["cold"].best),
                si(r["cold"].median),
                f"{r['cold'].us_per_item:.2f}",
                si(r["warm"].best),
                f"{r['cold'].best / TARGET_CHECKS_PER_S:.2f}",
                "-" if n_instr is None else f"{n_instr:,.0f}",
            ]
        )
    table(
        ["workload", "cold/s", "median", "us/call", "warm/s", "vs 500k", "instr/call"],
        rows,
        "lrrrrrr",
    )
    if opts.instructions and not any(instr.values()):
        print("  (instructions: valgrind not found or callgrind failed)")

    mark("python")

    # ---- 2. raw C -------------------------------------------------------------
    section("2. Raw C: a3s_ruleset_check and a3s_glob_match (bench/policy/raw_match.c)")
    c = bench_raw_c(rules, pairs, kinds, cfg, opts.clock)
    c_ok = "skipped" not in c
    if not c_ok:
        print(f"  SKIPPED: {c['skipped']}")
        c_checks = c_matches = 0.0
        c_consistent = None
    else:
        c_checks = float(c["checks_per_s_best"])
        c_matches = float(c["matches_per_s_best"])
        c_consistent = c["decisions"] == ref
        print(f"  built with {c['cc']} -O2 -std=c11 (native/src/*.c) in {c['build_s']:.1f} s")
        if c["build_note"]:
            print(f"  note: {c['build_note']}")
        print(
            f"  checks : {si(c_checks)} checks/s best of {c['check_repeats']} "
            f"({1e6 / c_checks:.2f} us/check), median {si(c['checks_per_s_median'])}/s"
        )
        print(
            f"  matches: {si(c_matches)} matches/s best of {c['pattern_repeats']} "
            f"({c['patterns']} patterns x {c['pairs']} subjects, "
            f"{1e9 / c_matches:.1f} ns/match), median {si(c['matches_per_s_median'])}/s"
        )
        slow = sorted(c["per_pattern"], key=lambda p: -p["ns_per_match"])[:5]
        views = policy.rules()
        print("  slowest patterns alone (ns per match, mean over all subjects):")
        for p in slow:
            print(f"    {p['ns_per_match']:8.1f} ns  {views[p['rule']].raw}")

    # where the time of one check goes
    st = py["stages"]
    chk_us, arg_us = st["check"].us_per_item, st["argument_string"].us_per_item
    nat_us, loop_us = st["native"].us_per_item, st["loop+call"].us_per_item
    bind_us = st["binding"].us_per_item
    c_us = 1e6 / c_checks if c_ok else float("nan")
    print(
        "\n  where one PermissionPolicy.check call goes (us/call, best pass of each stage alone,"
        "\n  stages interleaved so they see the same machine load):"
    )

    def share(us: float) -> str:
        return f"{100 * us / chk_us:.0f}%"

    rest_us = chk_us - arg_us - nat_us
    rows: list[list[Any]] = [
        ["check(tool, args), whole call", f"{chk_us:.2f}", "100%"],
        ["  argument_string(tool, args)", f"{arg_us:.2f}", share(arg_us)],
        ["  Ruleset.check(name, subject)", f"{nat_us:.2f}", share(nat_us)],
        ["    binding: same call, empty rule set", f"{bind_us:.2f}", share(bind_us)],
        ["    bash reading + matching", f"{nat_us - bind_us:.2f}", share(nat_us - bind_us)],
        # check() builds its strings in C (Ruleset.call) and remembers bash lines: it
        # costs less than the two stages above, which is what this row shows.
        ["  check minus the two stages above", f"{rest_us:.2f}", share(rest_us)],
        ["cross-check: raw C a3s_ruleset_check", f"{c_us:.2f}", share(c_us)],
        ["for scale: a Python loop + 2-arg call", f"{loop_us:.2f}", ""],
    ]
    table(["stage", "us/call", "share"], rows)
    print("\n  per kind of call (us/call):")
    krows: list[list[Any]] = []
    c_kind = {k["kind"]: k for k in c.get("per_kind", [])}
    total_time = sum(v["check_us"] * v["calls"] for v in py["per_kind"].values())
    for kind, v in py["per_kind"].items():
        ck = c_kind.get(kind)
        krows.append(
            [
                kind,
                v["calls"],
                f"{v['subject_bytes_mean']:.0f}",
                f"{v['check_us']:.2f}",
                f"{v['argstr_us']:.2f}",
                f"{v['native_us']:.2f}",
                f"{ck['best_s'] / v['calls'] * 1e6:.2f}" if ck else "-",
                f"{100 * v['check_us'] * v['calls'] / total_time:.0f}%",
            ]
        )
    table(["kind", "calls", "subj B", "check", "arg_str", "Ruleset", "raw C", "share"], krows)
    print(
        "  check = the whole call; arg_str = argument_string; Ruleset = binding + C;"
        "\n  raw C = raw_match.c; share = this kind's part of the total check() time."
    )

    mark("raw_c")

    # ---- 3. baselines -----------------------------------------------------------
    section("3. Baselines: same rules, same (tool, argument string) pairs, deny->allow->ask")
    # A bash line is not one match: the rule set splits it into its simple commands and
    # matches each spelling (docs/policy.md), which the baselines do not model. They, the
    # agreement and the 10x target use the other pairs; bash lines are timed on their own.
    matching = [i for i, k in enumerate(kinds) if k != "bash"]
    match_pairs = [pairs[i] for i in matching]
    match_ref = [ref[i] for i in matching]
    c_other = [k for k in c.get("per_kind", []) if k["kind"] != "bash"]
    c_bash = [k for k in c.get("per_kind", []) if k["kind"] == "bash"]
    c_match_checks = (
        sum(k["pairs"] for k in c_other) / sum(k["best_s"] for k in c_other) if c_other else 0.0
    )
    if c_ok and c_bash:
        print(
            f"  bash lines ({c_bash[0]['pairs']}) are split per simple command by the rule set "
            f"({c_bash[0]['best_s'] / c_bash[0]['pairs'] * 1e6:.2f} us/line in C); the"
            f"\n  baselines use the other {len(match_pairs)} pairs (a3s raw C on them: "
            f"{si(c_match_checks)} checks/s)"
        )
    c_for_base = {k: v for k, v in c.items() if k != "per_pattern"}
    base = bench_baselines(policy, match_pairs, match_ref, c_for_base, cfg)
    rows = []
    if c_ok:
        rows.append(
            [
                "a3s raw C (a3s_ruleset_check)",
                si(c_checks),
                f"{1e6 / c_checks:.2f}",
                len(pairs),
                "100.00%",
                si(c_matches),
                f"{c['pattern_hits']}",
                f"{c['pattern_hits']}",
            ]
        )
    rows.append(
        [
            "a3s PermissionPolicy.check (incl. arg string)",
            si(total.best),
            f"{total.us_per_item:.2f}",
            len(calls),
            "100.00%",
            "-",
            "-",
            "-",
        ]
    )
    rows.append(
        [
            "a3s Ruleset.check from Python",
            si(py["native_per_check"].best),
            f"{py['native_per_check'].us_per_item:.2f}",
            len(pairs),
            "100.00%",
            "-",
            "-",
            "-",
        ]
    )
    for name, b in base.items():
        if "skipped" in b:
            rows.append([name, "skipped", "", "", "", "", "", ""])
            print(f"  {name}: SKIPPED: {b['skipped']}")
            continue
        rows.append(
            [
                name,
                si(b["check"].best),
                f"{b['check'].us_per_item:.2f}",
                b["pairs"],
                f"{100 * b['agreement']:.2f}%",
                si(b["per_pattern"].best),
                b["hits"],
                b["a3s_hits"],
            ]
        )
    table(
        ["engine", "checks/s", "us/check", "n", "agree", "matches/s", "hits", "a3s hits"],
        rows,
        align="lrrrrrrr",
    )
    print(
        "  n: calls timed for check(), rule-set checks (pairs) for the others. agree: share of"
        "\n  decisions equal to a3s's. matches/s: every rule pattern alone over the subjects"
        "\n  (hits vs a3s hits on the same subjects shows the semantic gap)."
    )

    def ratio(a: float, b: dict[str, Any] | None, key: str = "check") -> float:
        if not b or "skipped" in b or not a:
            return float("nan")
        return float(a / b[key].best)

    fn, wc, rx = base.get("fnmatch"), base.get("wcmatch"), base.get("re-exact")
    ratios = {
        "raw_c_checks_vs_fnmatch": ratio(c_match_checks, fn),
        "raw_c_checks_vs_wcmatch": ratio(c_match_checks, wc),
        "raw_c_checks_vs_re_exact": ratio(c_match_checks, rx),
        "raw_c_matches_vs_fnmatch_matches": ratio(c_matches, fn, "per_pattern"),
        "raw_c_matches_vs_wcmatch_matches": ratio(c_matches, wc, "per_pattern"),
        "python_check_vs_fnmatch": ratio(total.best, fn),
        "python_check_vs_wcmatch": ratio(total.best, wc),
        "python_check_vs_re_exact": ratio(total.best, rx),
    }
    print("\n  ratios (best vs best; > 1 means a3s is faster):")
    table(["ratio", "x"], [[k, f"{v:.1f}"] for k, v in ratios.items()])

    mark("baselines")

    # ---- 4. pathological -------------------------------------------------------
    section("4. Pathological patterns through Glob.match")
    patho = bench_pathological(cfg)
    table(
        ["group", "pattern", "len", "subject", "match", "us/match", "<1ms"],
        [
            [
                p["group"],
                p["label"],
                p["pattern_len"],
                p["subject"],
                "yes" if p["matched"] else "no",
                f"{p['us_per_match']:.1f}",
                "yes" if p["us_per_match"] < TARGET_PATHOLOGICAL_US else "NO",
            ]
            for p in patho
        ],
        align="llrllrl",
    )
    worst = max(patho, key=lambda p: p["us_per_match"])
    by_group: dict[str, dict[str, Any]] = {}
    for p in patho:
        if p["group"] not in by_group or p["us_per_match"] > by_group[p["group"]]["us_per_match"]:
            by_group[p["group"]] = p
    for g, p in by_group.items():
        print(f"  worst {g}: {p['us_per_match']:.1f} us ({p['label']} vs {p['subject']})")

    mark("pathological")

    # ---- targets ----------------------------------------------------------------
    section("Targets (informational: the script never fails on them)")

    def verdict(ok: bool | None) -> str:
        return "SKIP" if ok is None else "PASS" if ok else "FAIL"

    raw_ratio = ratios["raw_c_checks_vs_fnmatch"]
    targets: dict[str, bool | None] = {
        "python_check_500k": total.best >= TARGET_CHECKS_PER_S,
        "python_check_mixed_500k": loads["mixed"]["cold"].best >= TARGET_CHECKS_PER_S,
        "raw_c_10x_fnmatch": None if raw_ratio != raw_ratio else raw_ratio >= TARGET_RAW_VS_FNMATCH,
        "pathological_under_1ms": worst["us_per_match"] < TARGET_PATHOLOGICAL_US,
    }
    print(
        f"  {verdict(targets['python_check_500k'])}  PermissionPolicy.check >= 500k calls/s:"
        f" {si(total.best)}/s"
    )
    print(
        f"  {verdict(targets['python_check_mixed_500k'])}  PermissionPolicy.check >= 500k calls/s"
        f" on the mixed workload: {si(loads['mixed']['cold'].best)}/s"
    )
    print(
        f"  {verdict(targets['raw_c_10x_fnmatch'])}  raw C matcher >= 10x fnmatch:"
        f" {ratios['raw_c_checks_vs_fnmatch']:.1f}x checks/s"
        f" (per pattern alone: {ratios['raw_c_matches_vs_fnmatch_matches']:.1f}x)"
    )
    print(
        f"  {verdict(targets['pathological_under_1ms'])}  no pathological pattern slower than"
        f" 1 ms: worst {worst['us_per_match']:.1f} us ({worst['label']} vs {worst['subject']})"
    )
    checks_ok = {
        "c_decisions_equal_python": c_consistent,
        "pairs_reproduce_policy_check": py_consistent,
        "re_exact_agrees": (rx or {}).get("agreement") == 1.0
        if rx and "skipped" not in rx
        else None,
    }
    for k, v in checks_ok.items():
        print(f"  {'ok  ' if v else ('n/a ' if v is None else 'BAD ')}  consistency: {k}")
    elapsed = time.perf_counter() - started
    print(
        f"\n  total time {elapsed:.1f} s ("
        + ", ".join(f"{k} {v:.1f}" for k, v in marks.items())
        + ")"
    )

    if opts.profile:
        profile_check(policy, calls)

    if opts.json:

        def plain(x: Any) -> Any:
            if isinstance(x, Rate):
                return x.as_dict()
            if isinstance(x, dict):
                return {k: plain(v) for k, v in x.items()}
            if isinstance(x, list):
                return [plain(v) for v in x]
            return x

        c_out = {k: v for k, v in c.items() if k != "decisions"}
        doc = {
            "quick": opts.quick,
            "config": asdict(cfg),
            "environment": {
                "python": platform.python_version(),
                "platform": platform.platform(),
                "cpus": os.cpu_count(),
                "codeward": codeward.__version__,
                "native": codeward.native_version(),
                "wcmatch": wc_version,
            },
            "workload": {
                "rules": len(policy.rules()),
                "calls": len(calls),
                "rule_set_checks": len(pairs),
                "seed": workload.SEED,
                "kinds": kind_counts,
                "deciding_list": hist,
                "mean_argument_bytes": mean_len,
            },
            "python_check": plain(py),
            "workloads": {
                k: {**plain(v), "instructions_per_call": instr.get(k)} for k, v in loads.items()
            },
            "raw_c": c_out,
            "baselines": plain(base),
            "ratios": ratios,
            "pathological": patho,
            "targets": targets,
            "consistency": checks_ok,
            "elapsed_s": elapsed,
            "section_s": marks,
            "clock": opts.clock,
        }
        Path(opts.json).write_text(json.dumps(doc, indent=2, default=str) + "\n")
        print(f"  wrote {opts.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
