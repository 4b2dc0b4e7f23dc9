"""Two-process PyTorch job on one GPU: torch.distributed (backend nccl) with accl's libnccl.so.2.

Both ranks use the same device (cuda:0 by default): NVIDIA's NCCL refuses two ranks of one
communicator on one GPU ("Duplicate GPU detected"), accl allows it, and PyTorch itself does not
check. Each rank runs all_reduce (sum, max), all_gather_into_tensor, reduce_scatter_tensor,
broadcast (root 1) and barrier on CUDA tensors of float32, bfloat16 and int64 and of a few sizes
(1, an odd prime, several chunks), and compares every result with its closed-form value exactly
(all values are small integers, exact in every type). Exits non-zero on any mismatch or error.

  LD_PRELOAD=build/lib/libnccl.so.2 python tests/torch/collectives_2proc.py [--timeout 120]
      spawns the 2 ranks itself (file store in a temporary folder) and waits at most --timeout s;
  LD_PRELOAD=... torchrun --standalone --nproc-per-node=2 tests/torch/collectives_2proc.py
      runs one rank per process with env:// (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT).
Options: --device N (default 0; every rank uses it), --expect-lib PATH (fail unless the process's
ncclAllReduce is the one in PATH), --backend gloo (CPU tensors: checks this script's own logic on
a machine without a GPU; no bfloat16 reduce_scatter there).

Exit 0: every check passed; 1: a mismatch, an error or the timeout; 77: skipped, because torch is
missing, or CUDA is not available (backend nccl needs a GPU), or torch.distributed has no NCCL.
The last line is one of "collectives_2proc: PASS ...", "FAIL ...", "SKIP ...".
"""
import argparse
import ctypes
import os
import sys
import tempfile
import time
import traceback

SIZES = (1, 1031, (1 << 20) + 5)  # one element, an odd prime, several MiB (many chunks)
DTYPES = ("float32", "bfloat16", "int64")


def say(line):
    sys.stdout.write(line + "\n")  # one write: the two ranks share the terminal
    sys.stdout.flush()


def finish(status, detail, code):
    say("collectives_2proc: %s %s" % (status, detail))
    sys.exit(code)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--timeout", type=float, default=120.0, help="seconds for the whole job (spawn mode)")
    p.add_argument("--device", type=int, default=0, help="CUDA device every rank uses")
    p.add_argument("--expect-lib", default="", help="libnccl.so.2 that must serve ncclAllReduce")
    p.add_argument("--backend", default="nccl", choices=("nccl", "gloo"))
    return p.parse_args(argv)


def nccl_provider():
    """(path, version) of the ncclAllReduce / ncclGetVersion this process binds to globally."""
    try:
        glob = ctypes.CDLL(None)
        fn = glob.ncclAllReduce
    except (OSError, AttributeError):
        return None, None
    addr = ctypes.cast(fn, ctypes.c_void_p).value
    path = None
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            if lo <= addr < hi and len(fields) >= 6:
                path = os.path.realpath(fields[5])
                break
    version = ctypes.c_int(0)
    glob.ncclGetVersion(ctypes.byref(version))
    return path, version.value


def values(torch, rank, n, dtype, device, offset=0):
    """Rank r's input as int64: (r + 1) * ((offset + i) % 7 + 1), plus r * 2**40 when dtype is
    int64 (so that the upper 32 bits of every lane matter). Small integers: exact in bfloat16."""
    i = torch.arange(offset, offset + n, device=device, dtype=torch.int64)
    v = (rank + 1) * (i % 7 + 1)
    if dtype == torch.int64:
        v = v + (rank << 40)
    return v


def pattern(torch, rank, n, dtype, device, offset=0):
    return values(torch, rank, n, dtype, device, offset).to(dtype)


def total(torch, world, n, dtype, device, offset=0):
    """Closed-form sum over ranks, computed in int64 and then converted (exact)."""
    return sum(values(torch, r, n, dtype, device, offset) for r in range(world)).to(dtype)


def check(failures, what, got, want):
    if got.dtype != want.dtype or got.shape != want.shape:
        failures.append("%s: got %s %s, want %s %s" % (what, got.dtype, tuple(got.shape), want.dtype, tuple(want.shape)))
        return
    bad = (got != want).nonzero().flatten()
    if len(bad):
        first = int(bad[0])
        failures.append("%s: %d of %d elements differ (first at %d: got %s, want %s)" % (
            what, len(bad), want.numel(), first, got[first].item(), want[first].item()))


def rank_body(rank, world, init_method, args):
    import datetime
    import torch
    import torch.distributed as dist

    if args.backend == "nccl":
        device = torch.device("cuda", args.device)
        torch.cuda.set_device(device)
        # device_id: the communicator is created now (eager init), on this device for both ranks.
        dist.init_process_group("nccl", init_method=init_method, rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=max(10, int(args.timeout) - 10)),
                                device_id=device)
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=max(10, int(args.timeout) - 10)))
    failures, checks = [], 0
    for dname in DTYPES:
        dtype = getattr(torch, dname)
        for n in SIZES:
            tag = "%s n=%d" % (dname, n)
            # all_reduce sum and max
            t = pattern(torch, rank, n, dtype, device)
            dist.all_reduce(t)
            check(failures, "all_reduce sum " + tag, t, total(torch, world, n, dtype, device))
            t = pattern(torch, rank, n, dtype, device)
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            check(failures, "all_reduce max " + tag, t, pattern(torch, world - 1, n, dtype, device))
            # all_gather_into_tensor: rank r's block is rank r's input
            out = torch.empty(world * n, dtype=dtype, device=device)
            dist.all_gather_into_tensor(out, pattern(torch, rank, n, dtype, device))
            want = torch.cat([pattern(torch, r, n, dtype, device) for r in range(world)])
            check(failures, "all_gather_into_tensor " + tag, out, want)
            # reduce_scatter_tensor: rank r gets the sum over ranks of block r
            if not (args.backend == "gloo" and dtype == torch.bfloat16):
                o = torch.empty(n, dtype=dtype, device=device)
                dist.reduce_scatter_tensor(o, pattern(torch, rank, world * n, dtype, device))
                check(failures, "reduce_scatter_tensor " + tag, o, total(torch, world, n, dtype, device, rank * n))
                checks += 1
            # broadcast from root 1
            b = pattern(torch, rank, n, dtype, device)
            dist.broadcast(b, src=1)
            check(failures, "broadcast root 1 " + tag, b, pattern(torch, 1, n, dtype, device))
            checks += 4
    dist.barrier()
    if args.backend == "nccl":
        torch.cuda.synchronize()
    dist.destroy_process_group()
    return checks, failures


def run_rank(rank, world, init_method, args):
    """One rank: prints its result line and returns its exit code."""
    try:
        import torch  # noqa: F401  (loads libtorch_cuda, and with it libnccl.so.2, before the look-up)
        path, version = nccl_provider()
        if args.expect_lib and args.backend == "nccl":
            want = os.path.realpath(args.expect_lib)
            if path != want:
                say("rank %d: FAIL: ncclAllReduce comes from %s, not %s (is it in LD_PRELOAD?)" % (rank, path, want))
                return 1
        checks, failures = rank_body(rank, world, init_method, args)
    except Exception:  # noqa: BLE001 (any error of the job is a failure of this check)
        say("rank %d: FAIL: %s" % (rank, traceback.format_exc().strip().replace("\n", "\n    ")))
        return 1
    for f in failures:
        say("rank %d: MISMATCH %s" % (rank, f))
    say("rank %d: %s, %d checks, %d mismatches; libnccl %s (version %s)" % (
        rank, "ok" if not failures else "FAIL", checks, len(failures), path, version))
    return 0 if not failures else 1


def spawned(rank, world, init_method, args, codes):
    codes[rank] = run_rank(rank, world, init_method, args)


def main(argv):
    args = parse_args(argv)
    try:
        import torch
        import torch.distributed as dist
    except ImportError as e:
        finish("SKIP", "(torch is not importable in %s: %s)" % (sys.executable, e), 77)
    if args.backend == "nccl":
        if not torch.cuda.is_available():
            finish("SKIP", "(torch %s: CUDA is not available, and backend nccl needs a GPU)" % torch.__version__, 77)
        if not dist.is_nccl_available():
            finish("SKIP", "(torch %s was built without NCCL)" % torch.__version__, 77)
        if args.device >= torch.cuda.device_count():
            finish("FAIL", "(--device %d, but %d CUDA devices are visible)" % (args.device, torch.cuda.device_count()), 1)
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:  # torchrun / torch.distributed.run
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        code = run_rank(rank, world, "env://", args)
        finish("PASS" if code == 0 else "FAIL", "(rank %d of %d, torch %s)" % (rank, world, torch.__version__), code)

    import multiprocessing as mp
    world = 2
    ctx = mp.get_context("spawn")
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="accl-torch-") as tmp:
        init_method = "file://" + os.path.join(tmp, "store")
        codes = ctx.Array("i", [-1] * world)
        procs = [ctx.Process(target=spawned, args=(r, world, init_method, args, codes)) for r in range(world)]
        for p in procs:
            p.start()
        deadline = started + args.timeout
        for p in procs:
            p.join(max(0.0, deadline - time.time()))
        hung = [r for r, p in enumerate(procs) if p.is_alive()]
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join(5)
        results = list(codes)
    seconds = time.time() - started
    detail = "(2 ranks on %s, torch %s, %.1f s)" % (
        "cuda:%d" % args.device if args.backend == "nccl" else "cpu/gloo", torch.__version__, seconds)
    if hung:
        finish("FAIL", "timed out after %.0f s: rank(s) %s still running %s" % (args.timeout, hung, detail), 1)
    bad = [(r, c if c >= 0 else procs[r].exitcode) for r, c in enumerate(results) if c != 0]
    if bad:
        finish("FAIL", "rank(s) %s %s" % (", ".join("%d exit %s" % rc for rc in bad), detail), 1)
    finish("PASS", detail, 0)


if __name__ == "__main__":
    main(sys.argv[1:])
