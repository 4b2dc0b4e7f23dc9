#!/usr/bin/env python3
"""Per-function register, stack, spill and local-memory report for accl's CUDA kernels, side by side
with NVIDIA's NCCL for the same collective function (docs/kernel_report.md).

For one architecture (default sm_90) of accl's libnccl.so it prints, per SASS function (the kernels
and every device function the linker kept out of line: one devRun<Id> per built instance, see
src/backend/cuda/kernels/dev_run.h):
  regs      kernels: the register count of the linked image (cuobjdump -res-usage); device
            functions: highest register the SASS names, plus one (marked ~, a lower bound)
  frame     ptxas's stack frame in bytes (ptxas -v on the PTX kept in libaccl_kernels.a, or a log
            given with --ptxas-log); without ptxas figures, the frame the SASS reserves on entry (~)
  link_stk  kernels: the stack the linked kernel reserves, its frame plus its deepest callee's
  spill_st, spill_ld  ptxas's spill store / load bytes
  LDL, STL  local-memory load / store instructions in the SASS (cuobjdump -sass), and their sum
  in_loops  of those, how many sit inside a loop (natural loops of the SASS control-flow graph)
  meta64    plain 64-bit loads (LD/LDG .64, not strong or volatile) inside step loops, the loops with
            a barrier: in a float function, connection metadata (pointers, sizes) read per step;
            data moves in 128-bit packets or 32-bit elements, FIFO counters and flags with strong
            loads
  instrs    SASS instructions
Then, with --nccl, the same figures for NVIDIA's function of the same (collective, op, type,
algorithm, protocol) — ncclDevFunc_AllReduce_Sum_f32_RING_SIMPLE and the like; accl's devRun serves
all three protocols of a key with one instance today, so its row repeats per protocol — and the
totals and extremes over accl's functions.

  scripts/kernel-report.py --accl build/lib/libnccl.so [--nccl /usr/local/cuda/lib/libnccl.so.2]
      [--arch sm_90] [--cuobjdump PATH] [--nvdisasm PATH] [--ptxas PATH]
      [--ptx-from build/lib/libaccl_kernels.a | --ptxas-log LOG | --no-ptxas]
      [--nccl-all] [--json out.json] [--check]

--check exits 1 when, for ring all-reduce float32 sum and any protocol, accl's function has a
local-memory instruction inside a loop, a plain 64-bit load inside a step loop, or more LDL+STL
than NVIDIA's function (2 when a figure is missing). Tools: cuobjdump and nvdisasm (the CUDA
wheels nvidia-cuda-cuobjdump / nvidia-cuda-nvdisasm; scripts/fetch-cuobjdump.sh puts cuobjdump in
~/.cache/accl/cuobjdump-cu<major>/bin, where this script also looks for nvdisasm), ptxas from the
toolkit, c++filt or cu++filt for names. Python 3 standard library only.
"""
import argparse
import concurrent.futures
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# ---------------------------------------------------------------------------------------------
# accl's function ids (src/backend/cuda/dev_func.h, src/device/common/ids.h). The numbers are read
# from the headers when this checkout has them; these are the values at the time of writing.
COLLS = ["Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce", "SendRecv"]
OPS = ["Sum", "Prod", "Max", "Min", "PreMulSum", "SumPostDiv"]
TYPES = ["i8", "u8", "i32", "u32", "i64", "u64", "f16", "f32", "f64", "bf16", "f8e4m3", "f8e5m2"]
ALGOS = ["Tree", "Ring"]
PROTOS = ["LL", "LL128", "Simple"]  # ProtoId order
COPY_COLLS = {"Broadcast", "AllGather", "SendRecv"}


def read_constants():
    vals = {}
    for rel in ("src/backend/cuda/dev_func.h", "src/device/common/ids.h"):
        try:
            with open(os.path.join(ROOT, rel)) as f:
                for m in re.finditer(r"\b(k[A-Za-z0-9]+)\s*=\s*(\d+)\s*[;,]", f.read()):
                    vals.setdefault(m.group(1), int(m.group(2)))
        except OSError:
            pass
    return vals


_C = read_constants()
N_OPS = _C.get("kDevNumOps", len(OPS))
N_TYPES = _C.get("kDevNumTypes", len(TYPES))
N_ALGOS = _C.get("kDevNumAlgos", len(ALGOS))
N_PROTOS = _C.get("kNumProtos", len(PROTOS))
if (N_OPS, N_TYPES, N_ALGOS, N_PROTOS) != (len(OPS), len(TYPES), len(ALGOS), len(PROTOS)) or \
        [_C.get("kProtoLL", 0), _C.get("kProtoLL128", 1), _C.get("kProtoSimple", 2)] != [0, 1, 2]:
    sys.stderr.write("kernel-report: warning: dev_func.h/ids.h changed their numbering; the id names "
                     "below may be wrong (update COLLS/OPS/TYPES/ALGOS/PROTOS)\n")


def func_key(fid):
    """DevFuncId -> (coll, op, type, algo, proto) names (devFuncKey of dev_func.h)."""
    proto = fid % N_PROTOS
    fid //= N_PROTOS
    algo = fid % N_ALGOS
    fid //= N_ALGOS
    typ = fid % N_TYPES
    fid //= N_TYPES
    op = fid % N_OPS
    coll = fid // N_OPS
    name = lambda lst, i: lst[i] if 0 <= i < len(lst) else str(i)
    return (name(COLLS, coll), name(OPS, op), name(TYPES, typ), name(ALGOS, algo), name(PROTOS, proto))


def func_id(coll, op, typ, algo, proto):
    return ((((COLLS.index(coll) * N_OPS + OPS.index(op)) * N_TYPES + TYPES.index(typ)) * N_ALGOS +
             ALGOS.index(algo)) * N_PROTOS + PROTOS.index(proto))


def key_label(coll, op, typ, algo):
    if coll in COPY_COLLS:
        return "%s %s (bytes)" % (coll, algo)
    return "%s %s %s %s" % (coll, op, typ, algo)


def nvidia_candidates(coll, op, typ, algo, proto):
    """NVIDIA device-function names (the plain name inside _Z<len><name>v) for one accl key."""
    A = algo.upper()
    P = proto.upper()
    if coll == "SendRecv":
        return ["ncclDevFunc_SendRecv"]
    if coll in COPY_COLLS:
        return ["ncclDevFunc_%s_%s_%s" % (coll, A, P)]
    nop = "MinMax" if op in ("Max", "Min") else op
    return ["ncclDevFunc_%s_%s_%s_%s_%s" % (coll, nop, typ, A, P),   # NCCL 2.2x order
            "ncclDevFunc_%s_%s_%s_%s_%s" % (coll, A, P, nop, typ)]   # the other order seen in releases


# ---------------------------------------------------------------------------------------------
# Tools.

def cache_bins():
    return sorted(glob.glob(os.path.expanduser("~/.cache/accl/*/bin")), reverse=True)


def find_tool(name, explicit=None, extra=()):
    if explicit:
        if os.path.isfile(explicit) and os.access(explicit, os.X_OK):
            return os.path.abspath(explicit)
        sys.exit("kernel-report: %s not found at %s" % (name, explicit))
    env = os.environ.get("ACCL_" + name.upper().replace("+", "X"))
    if env and os.access(env, os.X_OK):
        return env
    hit = shutil.which(name)
    if hit:
        return hit
    for d in list(extra) + ["/usr/local/cuda/bin"] + cache_bins():
        p = os.path.join(d, name)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


def missing(args, why):
    """A tool or library the report needs is absent: with --skip-without-tools (the ctest check on a
    machine that could not fetch them) a skip, else an error."""
    if args.skip_without_tools:
        print("SKIPPED: " + why.splitlines()[0])
        sys.exit(0)
    sys.exit(why)


class Tools:
    def __init__(self, args):
        self.cuobjdump = find_tool("cuobjdump", args.cuobjdump)
        if not self.cuobjdump:
            missing(args, "kernel-report: no cuobjdump (scripts/fetch-cuobjdump.sh fetches one into ~/.cache/accl, "
                     "or pass --cuobjdump)")
        self.nvdisasm = find_tool("nvdisasm", args.nvdisasm, [os.path.dirname(self.cuobjdump)])
        if not self.nvdisasm:
            missing(args, "kernel-report: cuobjdump -sass needs nvdisasm, none found. For example:\n"
                     "  pip download --no-deps --only-binary=:all: -d /tmp/w 'nvidia-cuda-nvdisasm==13.*'\n"
                     "  unzip -j /tmp/w/nvidia_cuda_nvdisasm-*.whl '*/bin/nvdisasm' -d %s && chmod +x %s/nvdisasm\n"
                     "(or pass --nvdisasm)" % (os.path.dirname(self.cuobjdump), os.path.dirname(self.cuobjdump)))
        self.ptxas = find_tool("ptxas", args.ptxas)
        self.demangler = find_tool("cu++filt") or find_tool("c++filt")
        self.env = dict(os.environ)
        self.env["PATH"] = os.path.dirname(self.nvdisasm) + os.pathsep + self.env.get("PATH", "")

    def run(self, argv, cwd=None):
        p = subprocess.run([self.cuobjdump] + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, env=self.env, cwd=cwd)
        return p.returncode, p.stdout, p.stderr

    def stream(self, argv):
        """cuobjdump's stdout line by line (NVIDIA's full SASS is over a gigabyte: never held)."""
        # stderr to a file: -fun warns once per ELF and name, enough to fill a pipe nobody reads yet.
        with tempfile.TemporaryFile(mode="w+") as errf:
            p = subprocess.Popen([self.cuobjdump] + argv, stdout=subprocess.PIPE, stderr=errf,
                                 universal_newlines=True, env=self.env, bufsize=1 << 20)
            for line in p.stdout:
                yield line
            if p.wait() != 0:
                errf.seek(0)
                sys.exit("kernel-report: cuobjdump %s failed: %s" % (" ".join(argv[:3]), errf.read().strip()[-2000:]))

    def demangle(self, names):
        out = {}
        plain = [strip_static(n) for n in names]
        if self.demangler and plain:
            p = subprocess.run([self.demangler], input="\n".join(plain) + "\n", stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, universal_newlines=True)
            lines = p.stdout.splitlines()
            if p.returncode == 0 and len(lines) == len(plain):
                for n, d in zip(names, lines):
                    out[n] = d
        for n, pl in zip(names, plain):
            out.setdefault(n, pl)
        return out


def strip_static(name):
    """__nv_static_<n>__<hash>_<file>_<hash>__ZN... (a function with internal linkage) -> _ZN..."""
    m = re.match(r"__nv_static_\d+__\w*?_(_Z\w+)$", name)
    return m.group(1) if m else name


def without_params(demangled):
    """accl::devRun<11>(accl::DevWorkItem const&, ...) -> accl::devRun<11>."""
    s = demangled.rstrip()
    if not s.endswith(")"):
        return s
    depth = 0
    for i in range(len(s) - 1, -1, -1):
        if s[i] == ")":
            depth += 1
        elif s[i] == "(":
            depth -= 1
            if depth == 0:
                return s[:i]
    return s


def without_return_type(name):
    """bool accl::devRun<11> -> accl::devRun<11> (c++filt prints a template's return type)."""
    depth = 0
    cut = 0
    for i, ch in enumerate(name):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == " " and depth == 0 and i + 1 < len(name) and name[i + 1] != "(":
            cut = i + 1
    return name[cut:] if "<" in name[cut:] or cut == 0 else name


def plain_z_name(mangled):
    """_Z41ncclDevFunc_AllReduce_Sum_f32_RING_SIMPLEv -> ncclDevFunc_AllReduce_Sum_f32_RING_SIMPLE."""
    m = re.match(r"_Z(\d+)", mangled)
    if not m:
        return mangled
    n = int(m.group(1))
    return mangled[m.end():m.end() + n]


# ---------------------------------------------------------------------------------------------
# cuobjdump output.

def list_arches(tools, lib):
    rc, out, err = tools.run(["--list-elf", lib])
    if rc != 0:
        sys.exit("kernel-report: cuobjdump --list-elf %s failed: %s" % (lib, err.strip()))
    return sorted(set(re.findall(r"\.(sm_\d+[af]?)\.cubin", out)))


def res_usage(tools, lib, arch):
    """{function: {REG, STACK, SHARED, LOCAL}} of the linked image (duplicates across ELFs: the max)."""
    rc, out, err = tools.run(["-res-usage", "-arch", arch, lib])
    if rc != 0:
        sys.exit("kernel-report: cuobjdump -res-usage %s failed: %s" % (lib, err.strip()))
    res = {}
    name = None
    for line in out.splitlines():
        m = re.match(r"\s*Function (\S+):\s*$", line)
        if m:
            name = m.group(1)
            continue
        if name and "REG:" in line:
            vals = {k: int(v) for k, v in re.findall(r"\b([A-Z]+)(?:\[\d+\])?:(\d+)", line)}
            prev = res.get(name)
            if prev is None or vals.get("REG", 0) > prev.get("REG", 0):
                res[name] = vals
            name = None
    return res


INSTR = re.compile(r"^\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P[0-9T]\s+)?([A-Z][A-Z0-9_]*)((?:\.[A-Z0-9_]+)*)\s*([^;]*);")
FRAME = re.compile(r"\bR1, R1, -0x([0-9a-f]+)\b")
REG = re.compile(r"\bR(\d+)\b")


ADDR = re.compile(r"^\s*/\*([0-9a-f]+)\*/\s+(@!?U?P[0-9T]\s+)?")
TARGET = re.compile(r"\b0x([0-9a-f]+)\b")
# Instructions that end a basic block; BRA/BRX/JMP/JMX jump, EXIT/RET/KILL leave (unless predicated).
JUMPS = ("BRA", "BRX", "JMP", "JMX")
LEAVES = ("EXIT", "RET", "KILL")
# A load of metadata (pointers, 64-bit sizes and counters) in a float function: a plain 64-bit
# generic or global load. Data moves as 128-bit packets or 32-bit elements, and the FIFO's
# counters and flags are read with strong (volatile/acquire) loads. (1- and 2-byte functions also
# move 8-byte-aligned user data as 64-bit words: the figure is exact for float only.)
WEAK_LOAD_OPS = ("LD", "LDG")
STRONG_MODS = (".STRONG", ".VOLATILE", ".CONSTANT", ".MMIO")


def dominators(succ, pred_of):
    """Immediate dominator of every block of a graph entered at block 0 (Cooper, Harvey and
    Kennedy's iteration over reverse postorder); None for blocks not reachable from 0."""
    n = len(succ)
    order, seen, stack = [], [False] * n, [(0, 0)]
    seen[0] = True
    while stack:  # iterative depth-first postorder
        b, k = stack.pop()
        if k < len(succ[b]):
            stack.append((b, k + 1))
            t = succ[b][k]
            if not seen[t]:
                seen[t] = True
                stack.append((t, 0))
        else:
            order.append(b)
    rpo = list(reversed(order))
    pos = {b: i for i, b in enumerate(rpo)}
    idom = [None] * n
    idom[0] = 0
    changed = True
    while changed:
        changed = False
        for b in rpo[1:]:
            new = None
            for p in pred_of[b]:
                if idom[p] is None:
                    continue
                if new is None:
                    new = p
                    continue
                x, y = p, new
                while x != y:
                    while pos[x] > pos[y]:
                        x = idom[x]
                    while pos[y] > pos[x]:
                        y = idom[y]
                new = x
            if new is not None and idom[b] != new:
                idom[b] = new
                changed = True
    return idom


def loop_figures(instrs):
    """Local-memory instructions inside loops, and plain 64-bit loads inside step loops.

    instrs: [(addr, predicated, op, mods, operands)] of one function. Loops are the natural loops
    of the control-flow graph: for each edge to a block at a lower address (a back edge), the
    blocks that reach its source without passing its header. Step loops are loops with a BAR
    (a named barrier or __syncthreads): every step of the Prims has one, a packet or spin loop none."""
    if not instrs:
        return {"loop_local": 0, "step_loop_weak64": 0, "loops": 0, "step_loops": 0}
    index = {a: i for i, (a, _, _, _, _) in enumerate(instrs)}
    leaders = {0}
    for i, (a, pred, op, mods, operands) in enumerate(instrs):
        if op in JUMPS:
            t = TARGET.search(operands)
            if t and int(t.group(1), 16) in index:
                leaders.add(index[int(t.group(1), 16)])
            leaders.add(i + 1)
        elif op in LEAVES:
            leaders.add(i + 1)
    starts = sorted(x for x in leaders if x < len(instrs))
    block_of = [0] * len(instrs)
    bounds = []
    for b, st in enumerate(starts):
        end = starts[b + 1] if b + 1 < len(starts) else len(instrs)
        bounds.append((st, end))
        for i in range(st, end):
            block_of[i] = b
    succ = [[] for _ in bounds]
    for b, (st, end) in enumerate(bounds):
        a, pred, op, mods, operands = instrs[end - 1]
        falls = end < len(instrs)
        if op in JUMPS:
            t = TARGET.search(operands)
            if t and int(t.group(1), 16) in index:
                succ[b].append(block_of[index[int(t.group(1), 16)]])
            falls = falls and (pred or op in ("BRX", "JMX") or ".DIV" in mods)
        elif op in LEAVES:
            falls = falls and pred
        if falls:
            succ[b].append(b + 1)
    pred_of = [[] for _ in bounds]
    for b, ss in enumerate(succ):
        for t in ss:
            pred_of[t].append(b)
    idom = dominators(succ, pred_of)

    def dominates(h, x):
        while x is not None and x != h:
            x = idom[x] if idom[x] != x else None
        return x == h

    in_loop = [False] * len(bounds)
    in_step = [False] * len(bounds)
    has_bar = [any(instrs[i][2] == "BAR" for i in range(st, end)) for st, end in bounds]
    loops = steps = 0
    for src, ss in enumerate(succ):
        for head in ss:
            # A back edge: its target dominates its source. (A jump to a lower address from a block
            # the compiler moved to the end of the function, a slow path returning, is not one.)
            if idom[src] is None or not dominates(head, src):
                continue
            body, stack = {head, src}, [src]
            while stack:
                x = stack.pop()
                if x == head:
                    continue
                for p in pred_of[x]:
                    if p not in body:
                        body.add(p)
                        stack.append(p)
            loops += 1
            step = any(has_bar[x] for x in body)
            steps += step
            for x in body:
                in_loop[x] = True
                in_step[x] = in_step[x] or step
    loop_local = weak64 = 0
    for i, (a, pred, op, mods, operands) in enumerate(instrs):
        b = block_of[i]
        if in_loop[b] and op in ("LDL", "STL"):
            loop_local += 1
        if in_step[b] and op in WEAK_LOAD_OPS and ".64" in mods and not any(m in mods for m in STRONG_MODS):
            weak64 += 1
    return {"loop_local": loop_local, "step_loop_weak64": weak64, "loops": loops, "step_loops": steps}


def parse_sass(lines):
    """Per SASS function: instructions, LDL/STL counts, highest register + 1, entry frame, calls,
    and the loop figures (loop_figures)."""
    funcs = {}
    cur = None
    instrs = []

    def finish():
        if cur is not None:
            cur.update(loop_figures(instrs))

    for line in lines:
        if "Function :" in line:
            finish()
            instrs = []
            name = line.split("Function :", 1)[1].strip()
            base, k = name, 2
            while name in funcs:  # the same name in two ELFs of the arch
                name = "%s#%d" % (base, k)
                k += 1
            cur = funcs[name] = {"instrs": 0, "LDL": 0, "STL": 0, "max_reg": -1, "sass_frame": 0, "calls": 0}
            continue
        if cur is None or "/*" not in line:
            continue
        m = INSTR.match(line)
        if not m:
            continue
        op, mods, operands = m.group(1), m.group(2), m.group(3)
        am = ADDR.match(line)
        instrs.append((int(am.group(1), 16), bool(am.group(2)), op, mods, operands))
        cur["instrs"] += 1
        if op == "LDL" or op == "STL":
            cur[op] += 1
        elif op == "CALL":
            cur["calls"] += 1
        for r in REG.findall(operands):
            if int(r) > cur["max_reg"]:
                cur["max_reg"] = int(r)
        if cur["instrs"] <= 8 and not cur["sass_frame"] and op in ("IADD3", "VIADD", "IADD"):
            f = FRAME.search(operands)
            if f and operands.startswith("R1,"):
                cur["sass_frame"] = int(f.group(1), 16)
    finish()
    for f in funcs.values():
        f["regs_sass"] = f.pop("max_reg") + 1
        f["local"] = f["LDL"] + f["STL"]
    return funcs


# ---------------------------------------------------------------------------------------------
# ptxas -v.

def parse_ptxas_log(text):
    """{function: {frame, spill_st, spill_ld, regs?}} from ptxas -v output (last one wins)."""
    out = {}
    name = None
    for line in text.splitlines():
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            name = m.group(1)
            out.setdefault(name, {})
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and name:
            out[name].update(frame=int(m.group(1)), spill_st=int(m.group(2)), spill_ld=int(m.group(3)))
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m and name:
            out[name]["regs"] = int(m.group(1))
    return out


def ptxas_from_archive(tools, src, arch, jobs):
    """Extracts the PTX kept in `src` (an archive or object of accl's kernels) and runs ptxas -v on
    it with the options recorded beside it: the same compile the build made, with its report."""
    if not tools.ptxas:
        return None, "no ptxas on PATH or in /usr/local/cuda/bin"
    work = tempfile.mkdtemp(prefix="kernel-report-")
    try:
        rc, out, err = tools.run(["-xptx", "all", os.path.abspath(src)], cwd=work)
        if rc != 0:
            return None, "cuobjdump -xptx failed: " + err.strip()
        jobs_in = []
        for m in re.finditer(r"Extracting PTX file and ptxas options\s+\d+:\s+(\S+)\s*(.*)", out):
            ptx, opts = m.group(1), m.group(2).split()
            if not ptx.endswith("." + arch + ".ptx"):
                continue
            opts = [o for o in opts if not o.startswith("-arch")]
            jobs_in.append((ptx, opts))
        if not jobs_in:
            return None, "no %s PTX in %s" % (arch, src)

        def one(item):
            ptx, opts = item
            argv = [tools.ptxas, "-v", "-arch=" + arch] + opts + [ptx, "-o", ptx + ".cubin"]
            p = subprocess.run(argv, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               universal_newlines=True)
            return p.returncode, p.stdout, " ".join(argv[1:])

        with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
            results = list(pool.map(one, jobs_in))
        merged = {}
        for rc, text, cmd in results:
            if rc != 0:
                return None, "ptxas %s failed: %s" % (cmd, text.strip()[-1000:])
            merged.update(parse_ptxas_log(text))
        ver = subprocess.run([tools.ptxas, "--version"], stdout=subprocess.PIPE, universal_newlines=True).stdout
        ver = (re.findall(r"release [^\n]*", ver) or ["?"])[0]
        return merged, "ptxas -v (%s) on %d PTX file(s) from %s" % (ver, len(jobs_in), src)
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# The report.

def nccl_version(lib):
    try:
        with open(lib, "rb") as f:
            data = f.read()
        m = re.search(rb"NCCL version (\d+\.\d+\.\d+[^\s\x00]*)", data)
        return m.group(1).decode() if m else "?"
    except OSError:
        return "?"


def accl_rows(tools, lib, arch, ptxas):
    res = res_usage(tools, lib, arch)
    sass = parse_sass(tools.stream(["-sass", "-arch", arch, lib]))
    if not sass:
        sys.exit("kernel-report: no %s SASS in %s" % (arch, lib))
    names = tools.demangle([n.split("#")[0] for n in sass])
    rows = []
    for name, s in sass.items():
        base = name.split("#")[0]
        r = res.get(base, {})
        p = (ptxas or {}).get(base, {})
        row = dict(s)
        row["name"] = name
        row["demangled"] = names.get(base, base)
        row["short"] = without_return_type(without_params(row["demangled"]).replace("(anonymous namespace)::", ""))
        row["kernel"] = r.get("REG", 0) > 0
        row["regs"] = r["REG"] if row["kernel"] else None
        row["link_stack"] = r.get("STACK") if row["kernel"] else None
        row["frame"] = p.get("frame")
        row["spill_st"] = p.get("spill_st")
        row["spill_ld"] = p.get("spill_ld")
        row["ptxas_regs"] = p.get("regs")
        m = re.search(r"devRunILi(\d+)E", base)
        if m:
            fid = int(m.group(1))
            row["func_id"] = fid
            row["key"] = func_key(fid)
            row["what"] = key_label(*row["key"][:4]) + " " + row["key"][4]
        else:
            row["what"] = ""
        rows.append(row)
    # A key built with only its Simple id (CPU-style instances, or an older build): that one
    # function serves all three protocols.
    keys = {r["key"] for r in rows if "key" in r}
    for r in rows:
        if "key" in r and r["key"][4] == "Simple" and r["key"][:4] + ("LL",) not in keys:
            r["what"] = key_label(*r["key"][:4]) + " (serves LL, LL128, Simple)"
    return rows


def nvidia_rows(tools, lib, arch, want_plain, everything):
    res = res_usage(tools, lib, arch)
    by_plain = {}
    for n in res:
        by_plain.setdefault(plain_z_name(n), n)
    picked = [by_plain[p] for p in want_plain if p in by_plain]
    if everything:
        argv = ["-sass", "-arch", arch, lib]
    elif picked:
        argv = ["-sass", "-arch", arch, "-fun", ",".join(picked), lib]
    else:
        return {}, res
    sass = parse_sass(tools.stream(argv))
    out = {}
    for name, s in sass.items():
        base = name.split("#")[0]
        r = res.get(base, {})
        row = dict(s)
        row["name"] = name
        row["plain"] = plain_z_name(base)
        row["kernel"] = r.get("REG", 0) > 0
        row["regs"] = r["REG"] if row["kernel"] else None
        row["link_stack"] = r.get("STACK") if row["kernel"] else None
        out.setdefault(row["plain"], row)  # first ELF's copy when a name repeats
        if name != base:
            out[row["plain"] + name[len(base):]] = row
    return out, res


def fmt_regs(row):
    if row.get("regs"):
        return str(row["regs"])
    if row.get("ptxas_regs"):
        return str(row["ptxas_regs"])
    return "~%d" % row["regs_sass"] if row.get("regs_sass", 0) > 0 else "-"


def fmt_frame(row):
    if row.get("frame") is not None:
        return str(row["frame"])
    return "~%d" % row["sass_frame"] if row.get("sass_frame") else "0"


def fmt(v):
    return "-" if v is None else str(v)


def table(header, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)] if rows else [len(h) for h in header]
    line = lambda cells: "  ".join(str(c).ljust(w) if i < 2 else str(c).rjust(w)
                                   for i, (c, w) in enumerate(zip(cells, widths)))
    print(line(header))
    print(line(["-" * w for w in widths]))
    for r in rows:
        print(line(r))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--accl", required=True, help="accl's libnccl.so (a build's lib/libnccl.so)")
    ap.add_argument("--nccl", help="NVIDIA's libnccl.so.2 to compare with")
    ap.add_argument("--arch", help="sm_XX to report (default sm_90 when accl's library has it)")
    ap.add_argument("--cuobjdump")
    ap.add_argument("--nvdisasm")
    ap.add_argument("--ptxas")
    ap.add_argument("--ptx-from", help="archive/object holding accl's kernel PTX "
                    "(default: libaccl_kernels.a beside --accl)")
    ap.add_argument("--ptxas-log", help="a ptxas -v / nvcc -Xptxas -v log to read instead of running ptxas")
    ap.add_argument("--no-ptxas", action="store_true", help="no frame/spill figures from ptxas")
    ap.add_argument("--jobs", type=int, default=1, help="ptxas processes at once (default 1)")
    ap.add_argument("--nccl-all", action="store_true",
                    help="disassemble every NVIDIA function of the arch too (minutes; over 1 GB of SASS "
                         "streamed) for NVIDIA's own totals")
    ap.add_argument("--json", help="write every figure here")
    ap.add_argument("--skip-without-tools", action="store_true",
                    help="print SKIPPED and exit 0 when cuobjdump, nvdisasm or the --nccl library is missing")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 when accl's ring all-reduce f32 sum has LDL/STL inside a loop, a plain 64-bit load "
                         "inside a step loop, or more LDL+STL than NVIDIA's (any protocol)")
    args = ap.parse_args()

    if args.nccl and not os.path.exists(args.nccl):
        missing(args, "kernel-report: NVIDIA's library %s not found (--nccl)" % args.nccl)
    tools = Tools(args)
    arches = list_arches(tools, args.accl)
    arch = args.arch or ("sm_90" if "sm_90" in arches else (arches[0] if arches else None))
    if not arch or arch not in arches:
        sys.exit("kernel-report: %s has no %s ELF (it has: %s)" % (args.accl, arch, ", ".join(arches) or "none"))

    ptxas, ptxas_note = None, "no ptxas figures (--no-ptxas)"
    if args.ptxas_log:
        with open(args.ptxas_log, errors="replace") as f:
            ptxas = parse_ptxas_log(f.read())
        ptxas_note = "ptxas -v log " + args.ptxas_log
    elif not args.no_ptxas:
        src = args.ptx_from or os.path.join(os.path.dirname(os.path.abspath(args.accl)), "libaccl_kernels.a")
        if os.path.exists(src):
            ptxas, ptxas_note = ptxas_from_archive(tools, src, arch, args.jobs)
            if ptxas is None:
                ptxas_note = "no ptxas figures: " + ptxas_note
        else:
            ptxas_note = "no ptxas figures: %s not found (--ptx-from)" % src

    rows = accl_rows(tools, args.accl, arch, ptxas)
    rows.sort(key=lambda r: (not r["kernel"], r.get("func_id", 1 << 30), r["short"]))

    print("accl:   %s  (%s, %d SASS functions)" % (args.accl, arch, len(rows)))
    print("        frame/spills: %s" % ptxas_note)
    print("        cuobjdump %s, nvdisasm %s" % (tools.cuobjdump, tools.nvdisasm))
    print()
    print("== accl, per SASS function (%s) ==" % arch)
    table(["function", "what", "regs", "frame", "link_stk", "spill_st", "spill_ld", "LDL", "STL", "LDL+STL",
           "in_loops", "meta64", "instrs"],
          [[r["short"], r["what"] or ("kernel" if r["kernel"] else ""), fmt_regs(r), fmt_frame(r),
            fmt(r["link_stack"]), fmt(r["spill_st"]), fmt(r["spill_ld"]), r["LDL"], r["STL"], r["local"],
            r["loop_local"], r["step_loop_weak64"], r["instrs"]] for r in rows])
    total = sum(r["local"] for r in rows)
    worst = max(rows, key=lambda r: r["local"])
    dev = [r for r in rows if "func_id" in r]
    print()
    print("accl totals: LDL+STL %d over %d functions (LDL %d, STL %d); most in one function: %d (%s)"
          % (total, len(rows), sum(r["LDL"] for r in rows), sum(r["STL"] for r in rows), worst["local"],
             worst["short"]))
    print("             inside loops: LDL+STL %d; plain 64-bit loads inside step loops: %d"
          % (sum(r["loop_local"] for r in rows), sum(r["step_loop_weak64"] for r in rows)))
    if dev:
        fr = [r for r in dev if r.get("frame") is not None]
        if fr:
            big = max(fr, key=lambda r: r["frame"])
            spl = max(fr, key=lambda r: (r["spill_st"] or 0) + (r["spill_ld"] or 0))
            print("             devRun frames %d..%d bytes (largest %s); most spill bytes: %s (%d st + %d ld)"
                  % (min(r["frame"] for r in fr), big["frame"], big["short"], spl["short"], spl["spill_st"],
                     spl["spill_ld"]))
        print("             devRun registers (SASS) %d..%d" % (min(r["regs_sass"] for r in dev),
                                                               max(r["regs_sass"] for r in dev)))

    report = {"arch": arch, "accl": {"library": args.accl, "ptxas": ptxas_note, "functions": rows,
                                     "total_local": total}}

    # The comparison with NVIDIA.
    by_key = {}
    for r in dev:
        by_key[r["key"]] = r
    pairs = []  # (label, proto, accl row, nvidia plain names)
    keys = sorted({r["key"][:4] for r in dev}, key=lambda k: func_id(*k, "LL"))
    if not any(k == ("AllReduce", "Sum", "f32", "Ring") for k in keys):
        keys.append(("AllReduce", "Sum", "f32", "Ring"))  # the headline row even when not built
    for k in keys:
        for proto in PROTOS:
            a = by_key.get(k + (proto,)) or by_key.get(k + ("Simple",))
            pairs.append((key_label(*k), proto, a, nvidia_candidates(*k, proto)))
    kernel = next((r for r in rows if r["kernel"] and "commKernel" in r["short"]), None)

    check_fail, check_missing = [], []
    if args.nccl:
        want = [n for p in pairs for n in p[3]] + ["ncclDevKernel_Generic"]
        # NVIDIA also builds a few functions into kernels of their own (ncclDevKernel_<same name>).
        want += ["ncclDevKernel_" + n[len("ncclDevFunc_"):] for p in pairs for n in p[3]]
        nv, nv_res = nvidia_rows(tools, args.nccl, arch, want, args.nccl_all)
        print()
        print("NVIDIA: %s  (NCCL %s, %s)" % (args.nccl, nccl_version(args.nccl), arch))
        print()
        print("== per protocol: accl's function beside NVIDIA's (LDL+STL = local-memory instructions) ==")
        body = []
        cmp_rows = []
        for label, proto, a, cands in pairs:
            n = next((nv[c] for c in cands if c in nv), None)
            body.append([label, proto,
                         a["short"].replace("accl::", "") if a else "(not built)",
                         a["local"] if a else "-",
                         "%d/%d" % (a["loop_local"], a["step_loop_weak64"]) if a else "-",
                         fmt_regs(a) if a else "-", fmt_frame(a) if a else "-",
                         "%s/%s" % (fmt(a["spill_st"]), fmt(a["spill_ld"])) if a else "-",
                         n["plain"] if n else "(none: %s)" % cands[0],
                         n["local"] if n else "-",
                         "%d/%d" % (n["loop_local"], n["step_loop_weak64"]) if n else "-",
                         fmt_regs(n) if n else "-", fmt_frame(n) if n else "-"])
            cmp_rows.append({"key": label, "proto": proto, "accl": a["name"] if a else None,
                             "accl_local": a["local"] if a else None,
                             "accl_loop_local": a["loop_local"] if a else None,
                             "accl_step_loop_weak64": a["step_loop_weak64"] if a else None,
                             "nvidia": n["plain"] if n else None,
                             "nvidia_local": n["local"] if n else None,
                             "nvidia_loop_local": n["loop_local"] if n else None,
                             "nvidia_step_loop_weak64": n["step_loop_weak64"] if n else None,
                             "nvidia_regs_sass": n["regs_sass"] if n else None,
                             "nvidia_sass_frame": n["sass_frame"] if n else None})
            if label == key_label("AllReduce", "Sum", "f32", "Ring"):
                if not a or not n:
                    check_missing.append(proto)
                else:
                    if a["loop_local"] > 0:
                        check_fail.append("%s: accl has %d LDL/STL inside loops (must be 0)" % (proto, a["loop_local"]))
                    if a["step_loop_weak64"] > 0:
                        check_fail.append("%s: accl has %d plain 64-bit loads (connection metadata) inside its step "
                                          "loops (must be 0)" % (proto, a["step_loop_weak64"]))
                    if a["local"] > n["local"]:
                        check_fail.append("%s: accl %d LDL+STL > NVIDIA %d" % (proto, a["local"], n["local"]))
        gen = nv.get("ncclDevKernel_Generic")
        if kernel or gen:
            body.append(["kernel", "", kernel["short"].replace("accl::", "") if kernel else "-",
                         kernel["local"] if kernel else "-",
                         "%d/%d" % (kernel["loop_local"], kernel["step_loop_weak64"]) if kernel else "-",
                         fmt_regs(kernel) if kernel else "-",
                         fmt_frame(kernel) if kernel else "-",
                         "%s/%s" % (fmt(kernel["spill_st"]), fmt(kernel["spill_ld"])) if kernel else "-",
                         gen["plain"] if gen else "-", gen["local"] if gen else "-",
                         "%d/%d" % (gen["loop_local"], gen["step_loop_weak64"]) if gen else "-",
                         fmt_regs(gen) if gen else "-", fmt_frame(gen) if gen else "-"])
        table(["key", "proto", "accl function", "LDL+STL", "loop/meta", "regs", "frame", "spill st/ld",
               "NVIDIA function", "LDL+STL", "loop/meta", "regs", "frame"], body)
        if kernel and gen:
            print("link-time kernel stack: accl %s %s bytes (%s regs); NVIDIA %s %s bytes (%s regs)"
                  % (kernel["short"].replace("accl::", ""), kernel["link_stack"], kernel["regs"],
                     gen["plain"], gen["link_stack"], gen["regs"]))
        own = []
        for label, proto, a, cands in pairs:
            for c in cands:
                k = nv.get("ncclDevKernel_" + c[len("ncclDevFunc_"):])
                if k and k not in own:
                    own.append(k)
        for k in own:
            print("NVIDIA kernel with the function built in: %s  LDL+STL %d, %s regs, link stack %s bytes"
                  % (k["plain"], k["local"], k["regs"], k["link_stack"]))
        report["nvidia"] = {"library": args.nccl, "version": nccl_version(args.nccl), "pairs": cmp_rows}
        if args.nccl_all:
            allf = [r for k, r in nv.items() if "#" not in k]
            funcs = [r for r in allf if r["plain"].startswith("ncclDevFunc_")]
            for title, group in (("all functions", allf), ("ncclDevFunc_*", funcs)):
                if group:
                    w = max(group, key=lambda r: r["local"])
                    print("NVIDIA %s: LDL+STL %d over %d functions; most in one: %d (%s)"
                          % (title, sum(r["local"] for r in group), len(group), w["local"], w["plain"]))
            report["nvidia"]["functions"] = allf

    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1, default=list)

    if args.check:
        if not args.nccl:
            print("check: --check needs --nccl", file=sys.stderr)
            return 2
        if check_missing:
            print("check: no figure for ring all-reduce f32 sum, protocol(s) %s" % ", ".join(check_missing))
            return 2
        print()
        for why in check_fail:
            print("check FAILED: ring all-reduce f32 sum %s" % why)
        if check_fail:
            return 1
        print("check passed: ring all-reduce f32 sum has no LDL/STL inside loops, no connection metadata "
              "loaded inside its step loops, and no more LDL+STL than NVIDIA's in any protocol")
    return 0


if __name__ == "__main__":
    sys.exit(main())
