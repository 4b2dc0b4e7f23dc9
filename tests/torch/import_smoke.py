"""PyTorch smoke test: `import torch` with accl's libnccl.so.2 preloaded, as a user would run
`LD_PRELOAD=.../libnccl.so.2 python train.py`.

Run by ctest (tests/torch/CMakeLists.txt) with the torch 2.15.0 environment that
scripts/torch-venv.sh makes. Checks, each of which fails the test:
  1. the import succeeds: Python loads torch's extension with RTLD_NOW, so every NCCL function
     libtorch_cuda.so references must bind, and one missing export is an ImportError;
  2. every NCCL function libtorch_cuda.so imports is bound to accl's library (read from the dynamic
     linker's own LD_DEBUG=bindings trace). torch 2.15 also dlopens the nvidia-nccl wheel's copy by
     path (RTLD_LOCAL, torch/__init__.py _preload_cuda_deps), so that copy is mapped, but nothing
     may bind to it;
  3. ncclGetVersion, looked up in the global scope, reports the version of accl's nccl.h.
Exit code 77 (ctest: skipped) when torch is not installed in this Python.
"""
import ctypes
import glob
import importlib.util
import os
import re
import subprocess
import sys
import tempfile

ACCL_LIB = os.path.realpath(sys.argv[1])
NCCL_H = sys.argv[2]


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def header_version_code():
    with open(NCCL_H) as f:
        return int(re.search(r"^#define NCCL_VERSION_CODE (\d+)", f.read(), re.M).group(1))


def import_torch_child():
    """In the child: import torch and check the version seen through the global scope."""
    import torch  # noqa: F401  (the point of the test)

    version = ctypes.c_int(0)
    if ctypes.CDLL(None).ncclGetVersion(ctypes.byref(version)) != 0:
        fail("ncclGetVersion failed")
    if version.value != header_version_code():
        fail("ncclGetVersion = %d, accl's nccl.h says %d" % (version.value, header_version_code()))
    print("import torch %s: ok; ncclGetVersion = %d" % (torch.__version__, version.value))


def main():
    if importlib.util.find_spec("torch") is None:
        print("torch is not installed in %s" % sys.executable)
        sys.exit(77)
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, LD_PRELOAD=ACCL_LIB, LD_DEBUG="bindings",
                   LD_DEBUG_OUTPUT=os.path.join(tmp, "ld"), ACCL_TORCH_SMOKE_CHILD="1")
        child = subprocess.run([sys.executable, __file__] + sys.argv[1:], env=env, capture_output=True, text=True)
        sys.stdout.write(child.stdout)
        if child.returncode != 0:
            fail("import torch with accl preloaded (exit %d):\n%s" % (child.returncode, child.stderr[-3000:]))
        # "binding file <from> [0] to <to> [0]: normal symbol `name' [VERSION]"
        pattern = re.compile(r"binding file (\S+) \[\d+\] to (\S+) \[\d+\]: \w+ symbol `(p?nccl\w+)'")
        bound = {}
        for path in glob.glob(os.path.join(tmp, "ld.*")):
            with open(path, errors="replace") as f:
                for line in f:
                    m = pattern.search(line)
                    if m and os.path.basename(m.group(1)).startswith("libtorch_cuda.so"):
                        bound[m.group(3)] = os.path.realpath(m.group(2))
    if not bound:
        fail("the dynamic linker reported no NCCL binding of libtorch_cuda.so")
    elsewhere = {name: lib for name, lib in bound.items() if lib != ACCL_LIB}
    if elsewhere:
        fail("bound outside accl: %s" % ", ".join("%s -> %s" % kv for kv in sorted(elsewhere.items())))
    print("all %d NCCL functions libtorch_cuda.so imports are bound to %s" % (len(bound), ACCL_LIB))


if __name__ == "__main__":
    if os.environ.get("ACCL_TORCH_SMOKE_CHILD") == "1":
        import_torch_child()
    else:
        main()
