#!/usr/bin/env python3
"""Checks JSON files against the Chrome / Perfetto trace-event format, and accl-trace's own rules.

  scripts/trace-check.py [--expect NAME:MIN ...] FILE...

The format (the "JSON Object Format" of the trace-event spec): an object whose traceEvents is a
list of events; each event an object with a phase ph of the spec, a name, integer pid and tid, a
numeric ts in microseconds (not for metadata), a non-negative dur for complete events ("X"),
args an object when present; metadata ("M") naming processes and threads with args.name;
displayTimeUnit "ms" or "ns" when present. Duration events "B"/"E" must pair up per thread;
async events "b"/"e" carry an id and pair up by category and id, the end not before the begin.

accl-trace's rules on top: every complete event and async begin carries args.id, unique in the file; args.parent is 0 or
the id of another event of the file, which started no later than it; every event was stopped.
--expect NAME:MIN fails unless at least MIN complete events or async begins are called NAME (e.g. AllReduce:3,
"ch 0:1").
Exit status: 0 when every file passes, 1 otherwise (each problem printed), 2 on bad usage.
"""
import json
import sys

PHASES = set("BEXiICbnestfPONDMRcTp(){}") | {"I"}
METADATA = {"process_name", "thread_name", "process_sort_index", "thread_sort_index", "process_labels"}


def check_file(path, expects):
    problems = []

    def bad(msg):
        problems.append(f"{path}: {msg}")

    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        return [f"{path}: not JSON: {e}"]
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        return [f"{path}: not a trace object (no traceEvents list)"]
    if doc.get("displayTimeUnit", "ms") not in ("ms", "ns"):
        bad(f"displayTimeUnit {doc['displayTimeUnit']!r} is not ms or ns")
    open_b = {}
    open_async = {}
    ids = {}
    names = {}
    for i, e in enumerate(doc["traceEvents"]):
        where = f"event {i}"
        if not isinstance(e, dict):
            bad(f"{where} is not an object")
            continue
        ph = e.get("ph")
        if ph not in PHASES:
            bad(f"{where}: phase {ph!r} is not a trace-event phase")
            continue
        if not isinstance(e.get("name"), str):
            bad(f"{where}: no name")
        for key in ("pid", "tid"):
            if not isinstance(e.get(key), int):
                bad(f"{where}: {key} is not an integer")
        if "args" in e and not isinstance(e["args"], dict):
            bad(f"{where}: args is not an object")
        if "cat" in e and not isinstance(e["cat"], str):
            bad(f"{where}: cat is not a string")
        if ph == "M":
            if e.get("name") not in METADATA:
                bad(f"{where}: unknown metadata {e.get('name')!r}")
            elif e["name"].endswith("_name") and not isinstance(e.get("args", {}).get("name"), str):
                bad(f"{where}: {e['name']} without args.name")
            continue
        ts = e.get("ts")
        if not isinstance(ts, (int, float)) or isinstance(ts, bool) or ts < 0:
            bad(f"{where}: ts {ts!r} is not a non-negative number")
            continue
        if ph in ("b", "e") and not isinstance(e.get("id"), (int, str)):
            bad(f"{where}: async event without an id")
            continue
        if ph == "e":
            begin = open_async.pop((e.get("cat"), e.get("id")), None)
            if begin is None:
                bad(f"{where}: async end without a begin (cat {e.get('cat')!r}, id {e.get('id')!r})")
            elif begin["ts"] > ts:
                bad(f"{where}: async end before its begin")
            continue
        if ph == "b":
            key = (e.get("cat"), e.get("id"))
            if key in open_async:
                bad(f"{where}: async begin (cat {key[0]!r}, id {key[1]!r}) already open")
            open_async[key] = e
        if ph == "X" and (not isinstance(e.get("dur"), (int, float)) or e["dur"] < 0):
            bad(f"{where}: complete event with dur {e.get('dur')!r}")
        if ph in ("X", "b"):
            names[e.get("name")] = names.get(e.get("name"), 0) + 1
            args = e.get("args", {})
            eid = args.get("id")
            if not isinstance(eid, int) or eid <= 0:
                bad(f"{where}: no args.id (accl-trace)")
            elif eid in ids:
                bad(f"{where}: args.id {eid} repeats")
            else:
                ids[eid] = e
            if args.get("stopped") is not True:
                bad(f"{where}: {e.get('name')} was never stopped")
        elif ph == "B":
            open_b.setdefault((e.get("pid"), e.get("tid")), []).append(e)
        elif ph == "E":
            stack = open_b.get((e.get("pid"), e.get("tid")), [])
            if not stack:
                bad(f"{where}: E without B")
            else:
                stack.pop()
    for key in open_async:
        bad(f"async begin (cat {key[0]!r}, id {key[1]!r}) never ends")
    for key, stack in open_b.items():
        if stack:
            bad(f"{len(stack)} B event(s) on pid/tid {key} never end")
    for eid, e in ids.items():
        parent = e.get("args", {}).get("parent", 0)
        if parent == 0:
            continue
        p = ids.get(parent)
        if p is None:
            bad(f"event id {eid} ({e.get('name')}): parent {parent} is not an event of the file")
        elif p["ts"] > e["ts"] + 1e-3:
            bad(f"event id {eid} ({e.get('name')}) starts before its parent {parent} ({p.get('name')})")
    for name, least in expects:
        if names.get(name, 0) < least:
            bad(f"{names.get(name, 0)} event(s) called {name!r}, want at least {least}")
    return problems


def main(argv):
    expects, files = [], []
    args = argv[1:]
    while args:
        a = args.pop(0)
        if a == "--expect" and args:
            name, _, least = args.pop(0).rpartition(":")
            if not name or not least.isdigit():
                print("trace-check: --expect takes NAME:MIN", file=sys.stderr)
                return 2
            expects.append((name, int(least)))
        elif a.startswith("-"):
            print(f"trace-check: unknown option {a}", file=sys.stderr)
            return 2
        else:
            files.append(a)
    if not files:
        print(__doc__, file=sys.stderr)
        return 2
    problems = []
    for f in files:
        problems += check_file(f, expects)
    for p in problems:
        print(p)
    print(f"trace-check: {len(files)} file(s), {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
