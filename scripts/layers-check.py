#!/usr/bin/env python3
"""Holds the library's code to the layer order of docs/layers.md.

Every quoted #include of a file under src/ or transports/ is checked against two rules:
  1. upward: a file may include only headers of its own layer or of a layer below it;
  2. private: a header in a private folder (one backend, one transport, one network device) may be
     included only from that folder, its subfolders, or the folder directly above it (which
     registers what the folder provides);
  3. seam: a backend sees core only through core's seam headers (SEAMS below): never the
     communicator (ncclComm) or the engine (CommEngine).
A violation prints the file, the line, the include and the rule it breaks; the exit status is 1
when there is one. tests/, tools/ and bench/ stand above the library and are not checked.

  scripts/layers-check.py [ROOT]        check the tree at ROOT (default: this checkout)
  scripts/layers-check.py --table       print the layer table this script enforces
"""
import os
import re
import sys

# (folder, layer, private): the most specific folder that holds a file gives its layer. Keep in
# step with docs/layers.md, which explains each row.
LAYERS = [
    ("include", 0, False),
    ("src/util", 0, False),
    ("src/profiler", 0, False),
    ("src/device/common", 1, False),
    ("src/device/simt", 1, False),
    ("src/device", 2, False),
    ("src/device/cuda", 2, False),
    ("src/topo", 3, False),
    ("src/algos", 3, False),
    ("transports", 4, False),
    ("transports/p2p", 4, True),
    ("transports/shm", 4, True),
    ("transports/net", 4, True),
    ("transports/net/socket", 4, True),
    ("transports/net/ib", 4, True),
    ("transports/net/plugin", 4, True),
    ("src/tuner", 5, False),
    ("src/activity", 6, False),
    ("src/core", 7, False),
    ("src/backend", 8, False),
    ("src/backend/host", 8, True),
    ("src/backend/cuda", 8, True),
    ("src/backend/cuda/kernels", 8, True),
    ("src/ras", 9, False),
    ("src/api", 10, False),
]
# (folder, the only headers of a lower layer's folder it may include): a narrow seam.
SEAMS = [
    ("src/backend", "src/core", [
        "src/core/engine/backend.h",       # CommBackend, ChannelLinks, createBackend
        "src/core/engine/engine_view.h",   # EngineView, CommFacts
        "src/core/engine/channel_peers.h",
        "src/core/engine/connections.h",   # Connection (a transport end and its peer)
        "src/core/engine/plan.h",
        "src/core/liveness/peer_failure.h",  # CommHealth: the failure record waits report
        "src/core/liveness/liveness.h",      # livenessReport*: a wait that saw a peer go
    ]),
]
LAYER_NAMES = {
    0: "base (public header, util, profiler plugins)",
    1: "device vocabulary (element types, ops, FIFO protocol, SIMT layer)",
    2: "device runtime (GPU memory, device probe, CUDA Prims)",
    3: "topology and schedules",
    4: "transports",
    5: "tuner",
    6: "activity records",
    7: "core",
    8: "backends",
    9: "RAS server",
    10: "API",
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCE_EXT = (".h", ".hpp", ".cc", ".cpp", ".cu", ".cuh")


def folder_of(rel):
    """The LAYERS row of a repository-relative path, or None outside the checked tree."""
    best = None
    for row in LAYERS:
        folder = row[0]
        if rel == folder or rel.startswith(folder + "/"):
            if best is None or len(folder) > len(best[0]):
                best = row
    return best


def resolve(root, includer_rel, name):
    """The repository-relative path an #include "name" names, as the build's include path finds it."""
    candidates = [os.path.join(os.path.dirname(includer_rel), name), os.path.join("src", name), name,
                  os.path.join("include", name)]
    for c in candidates:
        c = os.path.normpath(c)
        if os.path.isfile(os.path.join(root, c)):
            return c
    return None


def private_allowed(includer_dir, header_folder):
    """Whether a file in includer_dir may include a header of the private folder header_folder."""
    if includer_dir == header_folder or includer_dir.startswith(header_folder + "/"):
        return True
    return os.path.dirname(header_folder) == includer_dir


def seam_forbids(rel, target):
    """Why rel may not include target under SEAMS, or None."""
    for folder, lower, allowed in SEAMS:
        if rel.startswith(folder + "/") and target.startswith(lower + "/") and target not in allowed:
            return (f"{folder} sees {lower} only through its seam headers ({', '.join(allowed)}); "
                    f"{target} is not one of them")
    return None


def check(root):
    problems = []
    for top in ("src", "transports"):
        for dirpath, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()  # a stable order for the report
            for fname in sorted(files):
                if not fname.endswith(SOURCE_EXT):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, fname), root)
                mine = folder_of(rel)
                if mine is None:
                    continue
                with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = resolve(root, rel, m.group(1))
                        theirs = folder_of(target) if target else None
                        if theirs is None:
                            continue
                        where = f"{rel}:{lineno}: #include \"{m.group(1)}\""
                        if theirs[1] > mine[1]:
                            problems.append(
                                f"{where}: upward include: {mine[0]} is layer {mine[1]} ({LAYER_NAMES[mine[1]]}), "
                                f"{theirs[0]} is layer {theirs[1]} ({LAYER_NAMES[theirs[1]]})")
                        elif seam_forbids(rel, target):
                            problems.append(
                                f"{where}: seam: {seam_forbids(rel, target)}")
                        elif theirs[2] and not private_allowed(os.path.dirname(rel), theirs[0]):
                            problems.append(
                                f"{where}: private include: {theirs[0]} is private to its folder "
                                f"(and the folder that registers it, {os.path.dirname(theirs[0])})")
    return problems


def main(argv):
    if "--table" in argv:
        for folder, layer, private in sorted(LAYERS, key=lambda r: (r[1], r[0])):
            print(f"{layer:2d}  {folder:28s} {'private' if private else ''}")
        return 0
    args = [a for a in argv[1:] if not a.startswith("--")]
    root = os.path.abspath(args[0] if args else os.path.join(os.path.dirname(__file__), ".."))
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print(f"layers-check: {len(problems)} include(s) break the layer order of docs/layers.md")
        return 1
    print("layers-check: every include follows the layer order of docs/layers.md")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
