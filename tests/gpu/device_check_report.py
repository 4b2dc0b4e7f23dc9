"""The summary of tests/gpu/device-check.sh, and the canned inputs of its dry run.

  device_check_report.py summary WORK      reads WORK/steps.tsv, WORK/runs.tsv, the accl-perf JSON
                                           files, copy.log, ctest.log, torch.log, sanitizer.tsv and
                                           the sanitizer-TOOL.log files; prints the one summary
                                           table; writes WORK/summary.txt and summary.json; exit 0
                                           when every check and target passed, else 1
  device_check_report.py fake-perf JSON COLLECTIVE RANKS MINBYTES MAXBYTES FACTOR VERSION [FAULT]
                                           writes accl-perf's JSON (bench/README.md, "Output") with
                                           made-up figures; FAULT: wrong | error | none
  device_check_report.py fake-ctest LOG    writes a ctest log of a few gpu tests
  device_check_report.py fake-sanitizer LOG TOOL FILTER [FAULT]
                                           appends compute-sanitizer's output for one run of a gpu
                                           test to LOG; FAULT: race (one racecheck hazard) | none;
                                           exit status as --error-exitcode 1 would make it

Definitions used by the table (the same as nccl-tests'/accl-perf's where they exist):
  busbw / algbw: accl-perf's, out-of-place, at the largest size of the run;
  latency: out-of-place time per call at the smallest size with a non-zero count;
  % of copy: ranks x busbw / copy bandwidth, where copy bandwidth is the best of cudaMemcpy and a
    copy kernel (bytes copied per second) measured in the same run: every rank here shares the one
    GPU's memory, so ranks x busbw is the device's total bus traffic. At 1 rank, where the bus
    factor is 0 for all_reduce, all_gather, reduce_scatter and alltoall, algbw is used instead (the
    call is then a local copy or nothing).
"""
import json
import math
import os
import re
import sys

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "sendrecv")
MODES = (("t1", "1 thread"), ("t2", "2 threads"), ("t4", "4 threads"), ("t8", "8 threads"), ("p2", "2 procs"))
RING_TARGET_PCT = 70.0
MIB = 1 << 20


# ---------------------------------------------------------------------------------------------
# inputs

def read_steps(work):
    steps = {}
    path = os.path.join(work, "steps.tsv")
    if os.path.exists(path):
        with open(path, errors="replace") as f:
            for line in f:
                key, _, value = line.rstrip("\n").partition("\t")
                if key:
                    steps[key] = value
    return steps


def tsv_rows(path, width, header):
    """The rows of a table the device check writes: `width` tab-separated fields each, without the
    header row (first field `header`) or a short line; nothing when the file is missing."""
    if not os.path.exists(path):
        return
    with open(path, errors="replace") as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if len(fields) >= width and fields[0] != header:
                yield fields[:width]


def exit_code(text):
    """A recorded exit status, or None where none was recorded."""
    return int(text) if text.lstrip("-").isdigit() else None


def read_runs(work):
    runs = {}
    for fields in tsv_rows(os.path.join(work, "runs.tsv"), 10, "name"):
        name, coll, ranks, mode, variant, rc, seconds, jpath, lpath, note = fields
        run = {"name": name, "collective": coll, "ranks": int(ranks), "mode": mode, "variant": variant,
               "rc": exit_code(rc),
               "seconds": float(seconds) if seconds else None, "json": jpath, "log": lpath, "note": note}
        run.update(perf_figures(jpath))
        runs[name] = run
    return runs


def perf_figures(jpath):
    """Figures of one accl-perf JSON file: latency, algbw/busbw at the largest size, wrong count."""
    out = {"results": 0, "wrong": 0, "library_version": None, "errors": [], "backend": None}
    if not jpath or not os.path.exists(jpath):
        return out
    try:
        with open(jpath) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        out["errors"] = ["unreadable JSON %s: %s" % (jpath, e)]
        return out
    rows = [r for r in doc.get("results", []) if isinstance(r, dict)]
    oop = [r for r in rows if not r.get("inplace")]
    out["results"] = len(rows)
    out["wrong"] = sum(int(r["wrong"]) for r in rows if isinstance(r.get("wrong"), (int, float)))
    out["library_version"] = doc.get("nccl_version")
    out["backend"] = doc.get("backend")
    out["errors"] = [str(e) for e in doc.get("errors", [])]
    out["exit_code"] = doc.get("exit_code")
    if oop:
        big = max(oop, key=lambda r: r.get("size", 0))
        small_rows = [r for r in oop if r.get("count", 0) > 0 and r.get("size", 0) > 0]
        small = min(small_rows, key=lambda r: r["size"]) if small_rows else None
        out.update(max_size=big.get("size"), busbw=big.get("busbw"), algbw=big.get("algbw"),
                   max_time_us=big.get("time_us"))
        if small:
            out.update(min_size=small["size"], latency_us=small.get("time_us"))
        sizes = {r.get("size"): r for r in oop}
        out["by_size"] = {int(k): {"time_us": v.get("time_us"), "algbw": v.get("algbw"), "busbw": v.get("busbw")}
                          for k, v in sizes.items() if k is not None}
    return out


def read_copy(work):
    path = os.path.join(work, "copy.log")
    if not os.path.exists(path):
        return {}
    text = open(path, errors="replace").read()
    m = re.search(r"copy_bandwidth: bytes=(\d+) iters=(\d+) memcpy_gbps=([\d.]+) kernel_gbps=([\d.]+) "
                  r"best_gbps=([\d.]+) device=\"([^\"]*)\"", text)
    if not m:
        line = next((ln for ln in text.splitlines() if ln.startswith("copy_bandwidth:")), text.strip()[-200:])
        return {"error": line}
    return {"bytes": int(m.group(1)), "iters": int(m.group(2)), "memcpy_gbps": float(m.group(3)),
            "kernel_gbps": float(m.group(4)), "best_gbps": float(m.group(5)), "device": m.group(6)}


CTEST_LINE = re.compile(r"Test\s+#\d+:\s+(\S+)\s+\.*\s*(\*\*\*)?(Passed|Failed|Skipped|Not Run|Timeout|Exception[^\d]*"
                        r"|Subprocess aborted|SegFault|Child aborted|\S+)")


def read_ctest(work):
    path = os.path.join(work, "ctest.log")
    res = {"passed": 0, "failed": 0, "skipped": 0, "not_run": 0, "failed_names": [], "found": False}
    if not os.path.exists(path):
        return res
    text = open(path, errors="replace").read()
    for m in CTEST_LINE.finditer(text):
        res["found"] = True
        name, word = m.group(1), m.group(3)
        if word == "Passed":
            res["passed"] += 1
        elif word.startswith("Skipped"):
            res["skipped"] += 1
        elif word.startswith("Not Run"):
            res["not_run"] += 1
            res["failed_names"].append(name + " (not run)")
        else:
            res["failed"] += 1
            res["failed_names"].append("%s (%s)" % (name, word.strip().lower()))
    res["no_tests"] = "No tests were found" in text
    m = re.search(r"(\d+)% tests passed, (\d+) tests? failed out of (\d+)", text)
    if m:
        res["total"] = int(m.group(3))
    return res


def read_torch(work):
    path = os.path.join(work, "torch.log")
    if not os.path.exists(path):
        return {}
    lines = open(path, errors="replace").read().splitlines()
    final = next((ln for ln in reversed(lines) if ln.startswith("collectives_2proc:")), "")
    libs = sorted({m.group(1) for ln in lines for m in [re.search(r"libnccl (\S+) \(version (\S+)\)", ln)] if m})
    mism = [ln for ln in lines if "MISMATCH" in ln or ": FAIL" in ln]
    return {"line": final, "status": final.split()[1] if final.count(" ") else "", "libs": libs,
            "problems": mism[:4], "tail": lines[-3:]}


SANITIZER_TOOLS = ("memcheck", "synccheck", "racecheck")
SAN_RUN_MARK = re.compile(r"^#### run (\S+): ")
SAN_ERRORS = re.compile(r"ERROR SUMMARY: (\d+) errors?")
SAN_RACE = re.compile(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)")
SAN_API = re.compile(r"^=+ Program hit \S+ .*on CUDA API call")
# The first line of one report (continuation lines are indented): counted when a run stopped
# before its summary line.
SAN_REPORT = re.compile(r"^=+ (Invalid |Misaligned |Out-of-range |Illegal |Hardware exception|Malloc|Program hit |"
                        r"Error: Race |Barrier error|Divergent thread|Warning: Race )")
GTEST_RAN = re.compile(r"^\[=+\] (\d+) tests? from .* ran")
GTEST_FAILED = re.compile(r"^\[  FAILED  \] ([^\s,]+\.[^\s,]+)")


def sanitizer_output(lines):
    """What one run's compute-sanitizer output says: errors, hazards, tests, the first report."""
    out = {"errors": None, "race_errors": None, "race_warnings": None, "api_errors": 0, "reports": 0,
           "tests_ran": None, "failed_tests": [], "first_report": ""}
    for ln in lines:
        m = SAN_ERRORS.search(ln)
        if m:
            out["errors"] = int(m.group(1))
        m = SAN_RACE.search(ln)
        if m:
            out["race_errors"], out["race_warnings"] = int(m.group(2)), int(m.group(3))
        if SAN_API.search(ln):
            out["api_errors"] += 1
        m = SAN_REPORT.search(ln)
        if m and not m.group(1).startswith("Warning"):
            out["reports"] += 1
        m = GTEST_RAN.search(ln)
        if m:
            out["tests_ran"] = int(m.group(1))
        m = GTEST_FAILED.search(ln)
        if m and m.group(1) not in out["failed_tests"]:
            out["failed_tests"].append(m.group(1))
        body = ln[ln.index(" ") + 1:].strip() if ln.startswith("=========") and " " in ln else ""
        if (body and not out["first_report"] and not ln.startswith("=========  ") and
                not re.match(r"(COMPUTE-SANITIZER|ERROR SUMMARY|RACECHECK SUMMARY)", body)):
            out["first_report"] = body[:200]
    if out["race_errors"] is not None:
        out["errors"] = out["race_errors"]  # racecheck: its warnings are not errors
    elif out["errors"] is None and out["reports"]:
        out["errors"] = out["reports"]  # stopped before its summary (killed at its limit)
    return out


def read_sanitizer(work):
    """compute-sanitizer per tool: the runs of sanitizer.tsv with what their part of the log says."""
    res = {}
    path = os.path.join(work, "sanitizer.tsv")
    if not os.path.exists(path):
        return res
    logs = {}
    for tool in SANITIZER_TOOLS:
        parts, current = {}, None
        lpath = os.path.join(work, "sanitizer-%s.log" % tool)
        if os.path.exists(lpath):
            for ln in open(lpath, errors="replace").read().splitlines():
                m = SAN_RUN_MARK.match(ln)
                if m:
                    current = parts.setdefault(m.group(1), [])
                elif current is not None:
                    current.append(ln)
        logs[tool] = parts
    for fields in tsv_rows(path, 8, "tool"):
        tool, run, binary, filt, rc, seconds, limit, note = fields
        r = {"run": run, "binary": binary, "filter": filt, "rc": exit_code(rc),
             "seconds": int(seconds) if seconds.isdigit() else 0, "limit": limit, "note": note,
             "ran": not note.startswith("skipped")}
        r.update(sanitizer_output(logs.get(tool, {}).get(run, [])) if r["ran"] else {})
        res.setdefault(tool, {"runs": []})["runs"].append(r)
    for tool, t in res.items():
        ran = [r for r in t["runs"] if r["ran"]]
        t["log"] = os.path.join(work, "sanitizer-%s.log" % tool)
        t["ran"] = len(ran)
        t["errors"] = sum(r.get("errors") or 0 for r in ran)
        t["api_errors"] = sum(r.get("api_errors") or 0 for r in ran)
        t["race_warnings"] = sum(r.get("race_warnings") or 0 for r in ran)
        t["tests_ran"] = sum(r.get("tests_ran") or 0 for r in ran)
        t["seconds"] = sum(r["seconds"] for r in ran)
    return res


# ---------------------------------------------------------------------------------------------
# formatting

def fmt_bw(v):
    if v is None:
        return "?"
    return "%.0f" % v if v >= 100 else ("%.1f" % v if v >= 1 else "%.3f" % v)


def fmt_us(v):
    if v is None:
        return "?"
    return "%.0f" % v if v >= 1000 else ("%.1f" % v)


def fmt_size(b):
    if b is None:
        return "?"
    for unit, scale in (("GiB", 1 << 30), ("MiB", MIB), ("KiB", 1024)):
        if b >= scale and b % scale == 0:
            return "%d %s" % (b // scale, unit)
    return "%d B" % b


def version_text(v):
    if not isinstance(v, int) or v <= 0:
        return "?"
    return "%d.%d.%d" % (v // 10000, (v // 100) % 100, v % 100) if v >= 20000 else "%d.%d.%d" % (v // 1000, (v // 100) % 10, v % 100)


def run_problem(run):
    """None when the run is usable, else a short word for the table cell."""
    if run is None:
        return "-"
    if run["note"].startswith("skipped"):
        return "skip"
    if run["rc"] in (124, 137) or (run["rc"] == 4):
        return "timeout"
    if run["wrong"]:
        return "WRONG"
    if run["results"] == 0 or run.get("busbw") is None:
        return "err%s" % (run["rc"] if run["rc"] is not None else "")
    if run["rc"] not in (0, None):
        return None  # figures exist; the failure is listed below the table
    return None


def effective_bw(run):
    """busbw, or algbw at 1 rank where the bus factor makes busbw 0."""
    if run.get("busbw") is None:
        return None
    if run["ranks"] == 1 and not run["busbw"]:
        return run.get("algbw")
    return run["busbw"]


def pct_of_copy(run, copy):
    bw = effective_bw(run)
    if bw is None or not copy.get("best_gbps"):
        return None
    return 100.0 * (run["ranks"] * bw if run["ranks"] > 1 else bw) / copy["best_gbps"]


def cell_bw(run, copy):
    p = run_problem(run)
    if p:
        return p
    pct = pct_of_copy(run, copy)
    mark = "!" if run["rc"] not in (0, None) else ""
    return "%s%s" % (fmt_bw(effective_bw(run)), " %3.0f%%" % pct if pct is not None else "") + mark


def cell_lat(run):
    p = run_problem(run)
    if p:
        return p
    return fmt_us(run.get("latency_us")) + ("!" if run["rc"] not in (0, None) else "")


def matrix_run(runs, coll, mode):
    """The run that stands for (collective, mode): the plain matrix run, else a key run."""
    ranks = int(mode[1:])
    kind = "threads" if mode[0] == "t" else "procs"
    for variant in ("default", "key"):
        for r in runs.values():
            if r["collective"] == coll and r["ranks"] == ranks and r["mode"] == kind and r["variant"] == variant:
                return r
    return None


# ---------------------------------------------------------------------------------------------
# summary

def summarize(work):
    steps, runs, copy = read_steps(work), read_runs(work), read_copy(work)
    ctest, torch, sanitizer = read_ctest(work), read_torch(work), read_sanitizer(work)
    lines, verdicts, failures = [], [], []
    add = lines.append
    title = "accl device check: summary"
    if steps.get("dry_run") == "1":
        title += " (DRY RUN: canned inputs, nothing ran on a GPU)"
    elif steps.get("host_perf") == "1":
        title += " (accl-perf on the HOST backend: no GPU figures)"
    add("=" * 100)
    add(title)
    add("machine   : %s; %s cores; %s; %s of %s s used" % (
        copy.get("device") or steps.get("gpu_name") or "no GPU seen", steps.get("cores", "?"),
        steps.get("date", ""), steps.get("elapsed", "?"), steps.get("deadline", "?")))

    # build
    b_rc = steps.get("build_rc")
    if b_rc is None:
        add("build     : not run (%s)" % steps.get("build_note", "?"))
        if steps.get("dry_run") != "1":
            verdicts.append(False)
    else:
        add("build     : %s, %s s (%s)%s" % ("ok" if b_rc == "0" else "FAILED rc=%s" % b_rc, steps.get("build_seconds", "?"),
                                           steps.get("build_what", ""),
                                           "; first error: " + steps["build_error"] if b_rc != "0" and steps.get("build_error") else ""))
        verdicts.append(b_rc == "0")

    # gpu tests
    if steps.get("ctest_rc") is None:
        add("gpu tests : not run (%s)" % steps.get("ctest_note", "?"))
        verdicts.append(False)
    elif not ctest["found"]:
        add("gpu tests : none ran (%s)" % (
            "no gpu-labelled test is registered: their binaries were not built, or GoogleTest is missing"
            if ctest.get("no_tests") else "rc=%s; see ctest.log" % steps.get("ctest_rc")))
        verdicts.append(False)
    else:
        extra = "" if steps.get("ctest_rc") not in ("124", "137") else "; stopped at its time limit"
        add("gpu tests : %d passed, %d failed, %d skipped, %d not run (ctest -L gpu, %s s%s)" % (
            ctest["passed"], ctest["failed"], ctest["skipped"], ctest["not_run"], steps.get("ctest_seconds", "?"), extra))
        for name in ctest["failed_names"][:6]:
            failures.append("gpu test %s" % name)
        if len(ctest["failed_names"]) > 6:
            failures.append("... and %d more gpu tests (ctest.log)" % (len(ctest["failed_names"]) - 6))
        verdicts.append(ctest["failed"] == 0 and ctest["not_run"] == 0 and ctest["passed"] > 0)

    # compute-sanitizer: errors fail the check; a tool not run (absent, no GPU, deadline) is a note
    for tool in SANITIZER_TOOLS:
        t = sanitizer.get(tool)
        label = "sanitizer %-9s: " % tool
        if not t or not t["ran"]:
            why = steps.get("sanitizer_note") or "; ".join(sorted({r["note"] for r in (t or {}).get("runs", [])})) or "?"
            add(label + "not run (%s)" % why)
            continue
        notes, tool_ok = [], True
        for r in t["runs"]:
            where = "%s (%s)" % (r["run"], r["binary"])
            if not r["ran"]:
                notes.append("%s %s" % (r["run"], r["note"]))
                continue
            if r["rc"] in (124, 137):
                notes.append("%s timed out at %s s" % (r["run"], r["limit"]))
            if r.get("errors"):
                tool_ok = False
                failures.append("compute-sanitizer %s: %d error%s in %s%s" % (
                    tool, r["errors"], "" if r["errors"] == 1 else "s", where,
                    ": " + r["first_report"] if r["first_report"] else ""))
            for name in r["failed_tests"][:3]:
                tool_ok = False
                failures.append("compute-sanitizer %s: gpu test %s failed under it" % (tool, name))
            only_warnings = tool == "racecheck" and r.get("race_warnings") and not r.get("errors")
            if (r["rc"] not in (0, 124, 137) and not r.get("errors") and not r["failed_tests"] and not only_warnings):
                tool_ok = False
                failures.append("compute-sanitizer %s: %s exit %s%s" % (
                    tool, where, r["rc"], ": " + r["first_report"] if r["first_report"] else " (see the log)"))
            if r["rc"] == 0 and r.get("errors") is None:
                notes.append("%s printed no ERROR SUMMARY" % r["run"])
            if r.get("tests_ran") == 0:
                notes.append("%s: no test matched its filter" % r["run"])
        detail = []
        if t["api_errors"]:
            detail.append("%d on CUDA API calls" % t["api_errors"])
        if t["race_warnings"]:
            detail.append("%d racecheck warning%s" % (t["race_warnings"], "" if t["race_warnings"] == 1 else "s"))
        add(label + "%d error%s%s; %d of %d runs, %d tests, %d s%s" % (
            t["errors"], "" if t["errors"] == 1 else "s", " (%s)" % ", ".join(detail) if detail else "",
            t["ran"], len(t["runs"]), t["tests_ran"], t["seconds"], "; " + "; ".join(notes) if notes else ""))
        verdicts.append(tool_ok)

    # copy bandwidth
    if copy.get("best_gbps"):
        add("copy bw   : %.0f GB/s (cudaMemcpy %.0f, copy kernel %.0f; %s, best of %d, bytes copied per second)" % (
            copy["best_gbps"], copy["memcpy_gbps"], copy["kernel_gbps"], fmt_size(copy["bytes"]), copy["iters"]))
    else:
        add("copy bw   : not measured (%s)" % (copy.get("error") or steps.get("copy_note", "not run")))

    # the matrix
    present = [r for r in runs.values() if r["variant"] in ("default", "key")]
    def most_common(key):
        values = [r.get(key) for r in present if r.get(key)]
        return max(set(values), key=values.count) if values else None
    big_size, small_size = most_common("max_size"), most_common("min_size")
    if present:
        add("")
        add("busbw at the largest size (%s), GB/s, and ranks x busbw as %% of copy bw (1 rank: algbw)" %
            fmt_size(big_size))
        head = "%-15s" % "collective" + "".join("%15s" % label for _, label in MODES)
        add(head)
        for coll in COLLECTIVES:
            add("%-15s" % coll + "".join("%15s" % cell_bw(matrix_run(runs, coll, m), copy) for m, _ in MODES))
        add("latency at the smallest size (%s; more where a collective's count rounds it to 0), us per call, "
            "out of place" % fmt_size(small_size))
        add(head)
        for coll in COLLECTIVES:
            add("%-15s" % coll + "".join("%15s" % cell_lat(matrix_run(runs, coll, m)) for m, _ in MODES))
        checked = [r for r in runs.values() if r["results"]]
        wrong_runs = [r for r in runs.values() if r["wrong"]]
        add("data check (-c 1): %d runs with results, %d wrong elements in all; cells: skip = deadline, "
            "timeout, errN = exit N, WRONG = wrong data, ! = figures but a non-zero exit" % (
                len(checked), sum(r["wrong"] for r in wrong_runs)))
        for r in sorted(runs.values(), key=lambda r: r["name"]):
            p = run_problem(r)
            if (p and p not in ("-", "skip")) or (r["rc"] not in (0, None) and not r["note"].startswith("skipped")):
                why = (r["errors"][:1] or [r["note"]] or [""])[0]
                failures.append("accl-perf %s: %s (exit %s)%s" % (r["name"], p or "failed", r["rc"], ": " + why[:160] if why else ""))
        if steps.get("host_perf") != "1" and steps.get("dry_run") != "1":
            on_host = sorted(r["name"] for r in runs.values() if r.get("backend") == "host")
            if on_host:
                failures.append("accl-perf ran on the HOST backend, not the GPU, in %d runs: %s" % (
                    len(on_host), ", ".join(on_host[:6]) + (" ..." if len(on_host) > 6 else "")))
        verdicts.append(not any(r["rc"] not in (0, None) and not r["note"].startswith("skipped")
                                for r in runs.values() if r["variant"] != "nccl"))
    else:
        add("accl-perf : no run (%s)" % steps.get("perf_note", "?"))
        verdicts.append(False)

    # NCCL side by side
    add("")
    accl1, nccl1, ring = runs.get("all_reduce-t1"), runs.get("all_reduce-t1-nccl"), runs.get("all_reduce-t4-ring")
    lib_line = steps.get("nccl_lib", "not found")
    if nccl1 and nccl1["results"] and accl1 and accl1["results"]:
        add("accl %s vs NVIDIA NCCL %s (%s), all_reduce float sum, 1 rank, out of place:" % (
            version_text(accl1["library_version"]), version_text(nccl1["library_version"]), lib_line))
        for size in sorted(set(accl1.get("by_size", {})) & set(nccl1.get("by_size", {}))):
            if size in (8, 256 * MIB) or size == max(accl1["by_size"]) or size == min(accl1["by_size"]):
                a, n = accl1["by_size"][size], nccl1["by_size"][size]
                add("  %-9s time %9s us vs %9s us   algbw %7s vs %7s GB/s" % (
                    fmt_size(size), fmt_us(a["time_us"]), fmt_us(n["time_us"]), fmt_bw(a["algbw"]), fmt_bw(n["algbw"])))
    else:
        why = ("not run: %s" % (steps.get("perf_note") or steps.get("nccl_note") or "?")) if not nccl1 else \
              ("NCCL run failed (exit %s): %s" % (nccl1["rc"], (nccl1["errors"][:1] or [nccl1["note"]])[0]) if not nccl1["results"]
               else "accl 1-rank run failed")
        add("accl vs NVIDIA NCCL: %s" % why)

    # torch
    if torch.get("line"):
        add("torch job : %s%s" % (torch["line"].split(":", 1)[1].strip(),
                                  ("; libnccl " + ", ".join(torch["libs"])) if torch["libs"] else ""))
        for p in torch["problems"]:
            failures.append("torch: " + p[:200])
        verdicts.append(torch["status"] == "PASS")
    else:
        add("torch job : not run (%s)" % steps.get("torch_note", "?"))
        verdicts.append(False)

    # targets
    add("")
    add("targets of issue 10:")
    ring_ok = None
    if ring and ring["results"] and copy.get("best_gbps"):
        row = ring.get("by_size", {}).get(256 * MIB) or {"busbw": ring.get("busbw")}
        at = fmt_size(256 * MIB) if ring.get("by_size", {}).get(256 * MIB) else fmt_size(ring.get("max_size"))
        traffic = 4 * (row["busbw"] or 0)
        pct = 100.0 * traffic / copy["best_gbps"]
        ring_ok = pct >= RING_TARGET_PCT and not ring["wrong"] and ring["rc"] == 0
        add("  [%s] 4-rank ring all_reduce (NCCL_ALGO=Ring) at %s: busbw %s GB/s, 4 x busbw = %s GB/s = %.0f%% of copy bw "
            "(need >= %.0f%%)%s" % ("PASS" if ring_ok else "FAIL", at, fmt_bw(row["busbw"]), fmt_bw(traffic), pct,
                                    RING_TARGET_PCT, "" if ring["rc"] == 0 else "; run exit %s" % ring["rc"]))
    else:
        add("  [----] 4-rank ring all_reduce at 256 MiB vs copy bw: not measured (%s)" % (
            "no copy bandwidth" if not copy.get("best_gbps") else
            "ring run: %s" % (run_problem(ring) if ring else "not run")))
    verdicts.append(bool(ring_ok))
    nccl_ok = None
    if accl1 and nccl1 and accl1["results"] and nccl1["results"]:
        bs_a, bs_n = accl1.get("by_size", {}), nccl1.get("by_size", {})
        lat_size = 8 if 8 in bs_a and 8 in bs_n else min(set(bs_a) & set(bs_n) or {0})
        bw_size = 256 * MIB if 256 * MIB in bs_a and 256 * MIB in bs_n else max(set(bs_a) & set(bs_n) or {0})
        if lat_size in bs_a and bw_size in bs_a:
            la, ln = bs_a[lat_size]["time_us"], bs_n[lat_size]["time_us"]
            ba, bn = bs_a[bw_size]["algbw"], bs_n[bw_size]["algbw"]
            nccl_ok = la <= ln and ba >= bn and accl1["rc"] == 0 and not accl1["wrong"]
            add("  [%s] 1-rank all_reduce vs NCCL: latency at %s %s vs %s us (%.2fx NCCL's time), algbw at %s %s vs %s GB/s "
                "(%.2fx; busbw is 0 at 1 rank)" % ("PASS" if nccl_ok else "FAIL", fmt_size(lat_size), fmt_us(la), fmt_us(ln),
                                                   la / ln if ln else float("nan"), fmt_size(bw_size), fmt_bw(ba), fmt_bw(bn),
                                                   ba / bn if bn else float("nan")))
    if nccl_ok is None:
        add("  [----] 1-rank latency and bandwidth vs NCCL: not measured (see the NCCL line above)")
    verdicts.append(bool(nccl_ok))
    add("  [%s] PyTorch 2-process job with accl preloaded" % (
        "PASS" if torch.get("status") == "PASS" else ("----" if not torch.get("line") or torch.get("status") == "SKIP" else "FAIL")))

    if failures:
        add("")
        add("failures:")
        for f in failures[:14]:
            add("  " + f)
        if len(failures) > 14:
            add("  ... %d more (see the logs)" % (len(failures) - 14))
    ok = all(verdicts) and not failures
    add("")
    add("result: %s; logs and JSON in %s%s" % ("ALL PASSED" if ok else "NOT ALL PASSED", steps.get("work", work),
                                               "; copied to $OUT" if steps.get("out") else ""))
    add("=" * 100)
    text = "\n".join(lines) + "\n"
    with open(os.path.join(work, "summary.txt"), "w") as f:
        f.write(text)
    doc = {"steps": steps, "copy": copy, "ctest": ctest, "torch": torch, "sanitizer": sanitizer, "ok": ok,
           "runs": {k: {kk: vv for kk, vv in v.items()} for k, v in runs.items()},
           "targets": {"ring_4rank_pct_of_copy_ok": ring_ok, "one_rank_vs_nccl_ok": nccl_ok}}
    with open(os.path.join(work, "summary.json"), "w") as f:
        json.dump(doc, f, indent=1, default=str)
    sys.stdout.write(text)
    return 0 if ok else 1


# ---------------------------------------------------------------------------------------------
# canned inputs for the dry run

def fake_perf(jpath, coll, ranks, minbytes, maxbytes, factor, version, fault="none"):
    """accl-perf's JSON layout with plausible made-up H200 figures."""
    ranks, minbytes, maxbytes, factor, version = int(ranks), int(minbytes), int(maxbytes), int(factor), int(version)
    bus = {"all_reduce": 2.0 * (ranks - 1) / ranks, "broadcast": 1.0, "reduce": 1.0, "sendrecv": 1.0}.get(
        coll, (ranks - 1) / float(ranks))
    rows, size = [], minbytes
    while size <= maxbytes:
        per_rank = coll in ("all_gather", "reduce_scatter", "alltoall")
        count = (size // 4 // ranks // 4 * 4) if per_rank else size // 4
        nbytes = count * 4 * (ranks if per_rank else 1)
        # ranks x busbw at about 80% of the canned 2150 GB/s copy bandwidth (algbw at 1 rank)
        peak = 1720.0 / ranks / (bus if ranks > 1 else 1.0)
        t = 6.0 + 2.0 * math.log2(ranks + 1) + nbytes / (peak * 1e3)
        algbw = nbytes / t / 1e3
        for inplace in (False, True):
            wrong = 0 if coll not in ("alltoall", "sendrecv") or not inplace else None
            if fault == "wrong" and size == maxbytes and not inplace:
                wrong = 12
            rows.append({"collective": coll, "size": nbytes, "count": count, "type": "float", "redop": "sum",
                         "root": 0 if coll in ("broadcast", "reduce") else -1, "inplace": inplace, "time_us": t,
                         "cputime_us": t, "algbw": algbw, "busbw": algbw * bus, "wrong": wrong})
        nxt = size * factor if factor > 1 else size + (1 << 20)
        if nxt <= size:
            break
        size = nxt
    errors = []
    code = 0
    if fault == "error":
        rows, code = rows[: len(rows) // 2], 3
        errors = ["rank 1: ncclAllReduce failed: unhandled cuda error (canned)"]
    elif fault == "wrong":
        code = 7
    doc = {"tool": "accl-perf", "format_version": 1, "collective": coll, "nranks": ranks, "backend": "cuda",
           "launch": "canned", "nccl_version": version, "config": {}, "results": rows,
           "out_of_bounds": {"count": 1 if fault == "wrong" else 0, "okay": fault != "wrong"},
           "average_bus_bandwidth": 0, "exit_code": code, "errors": errors}
    with open(jpath, "w") as f:
        json.dump(doc, f, indent=1)
    return code


FAKE_CTEST = """Test project /build-device
    Start  1: CudaPrims.RingAllReduce
1/5 Test  #1: CudaPrims.RingAllReduce ..........................   Passed    0.41 sec
    Start  2: GpuMatrix.AllReduceFloatSum/4ranks
2/5 Test  #2: GpuMatrix.AllReduceFloatSum/4ranks ...............   Passed    1.20 sec
    Start  3: GpuGraph.CaptureReplay
3/5 Test  #3: GpuGraph.CaptureReplay ...........................***Failed    2.02 sec
    Start  4: GpuAbort.RunningKernel
4/5 Test  #4: GpuAbort.RunningKernel ...........................***Skipped   0.01 sec
    Start  5: GpuMemory.IpcFd
5/5 Test  #5: GpuMemory.IpcFd ..................................   Passed    0.30 sec

80% tests passed, 1 tests failed out of 5
"""


def fake_sanitizer(lpath, tool, gtest_filter, fault="none"):
    """compute-sanitizer's output for one run of a gpu test, appended to LPATH; its exit status."""
    tests = [t for t in gtest_filter.split(":") if t]
    lines = ["========= COMPUTE-SANITIZER", "Running main() from gtest_main.cc (canned)",
             "Note: Google Test filter = %s" % gtest_filter,
             "[==========] Running %d tests from %d test suites." % (len(tests), len(tests))]
    for t in tests:
        lines += ["[ RUN      ] %s" % t, "[       OK ] %s (%d ms)" % (t, 900)]
    if fault == "race":
        lines += ["========= Error: Race reported between Write access at 0x1f30 in "
                  "accl::device::ringAllReduce<float, Sum, Simple>(...) (canned)",
                  "=========     and Read access at 0x2a80 in accl::device::ringAllReduce<float, Sum, Simple>(...) "
                  "[128 hazards]"]
    lines += ["[==========] %d tests from %d test suites ran. (%d ms total)" % (len(tests), len(tests), 900 * len(tests)),
              "[  PASSED  ] %d tests." % len(tests)]
    errors = 1 if fault == "race" else 0
    if tool == "racecheck":
        lines.append("========= RACECHECK SUMMARY: %d hazard%s displayed (%d error%s, 0 warnings)" % (
            errors, "" if errors == 1 else "s", errors, "" if errors == 1 else "s"))
    else:
        lines.append("========= ERROR SUMMARY: %d error%s" % (errors, "" if errors == 1 else "s"))
    with open(lpath, "a") as f:
        f.write("\n".join(lines) + "\n")
    return 1 if errors else 0


def main(argv):
    if len(argv) >= 2 and argv[0] == "summary":
        return summarize(argv[1])
    if len(argv) >= 8 and argv[0] == "fake-perf":
        return fake_perf(*argv[1:9])
    if len(argv) in (4, 5) and argv[0] == "fake-sanitizer":
        return fake_sanitizer(*argv[1:5])
    if len(argv) == 2 and argv[0] == "fake-ctest":
        with open(argv[1], "w") as f:
            f.write(FAKE_CTEST)
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
