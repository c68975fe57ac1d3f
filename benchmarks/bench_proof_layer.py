"""CPU seconds of the proof layer's everyday commands (docs/benchmarks.md, "Proof layer").

Each command runs in a fresh interpreter from the checkout root; the figure is the CPU time (user + system) of
that process and its children (``resource.getrusage(RUSAGE_CHILDREN)``), which a busy machine does not inflate
the way it inflates wall time.  Run: ``python benchmarks/bench_proof_layer.py``; ``--certificates`` prints, in
one process (like ``derive check`` of all of them), the CPU seconds of checking each library certificate from its
file (read, parse, kernel, cited certificates included) and the kernel's work units.
"""

from __future__ import annotations

import glob
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FIT = ("import numpy as np, derive.sklearn as s; r = np.random.default_rng(0); X = r.standard_normal((50, 3)); "
       "s.OLSAttentionRegressor().fit(X, X @ [1.0, 2.0, 3.0])")

COMMANDS = {
    "derive list": [sys.executable, "-m", "derive", "list"],
    "derive prove (the library, replayed)": [sys.executable, "-m", "derive", "prove"],
    "derive check proofs/certificates/*.json": [sys.executable, "-m", "derive", "check", "--time-limit", "120",
                                                *sorted(glob.glob(str(ROOT / "proofs/certificates/*.json")))],
    "import derive.sklearn and a first fit": [sys.executable, "-c", FIT],
}


def cpu_seconds(argv: list[str]) -> tuple[float, float, int]:
    """CPU seconds, wall seconds and exit status of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode:
        print(done.stderr[-2000:], file=sys.stderr)
    return cpu, wall, done.returncode


def certificate_seconds() -> None:
    """CPU seconds of ``verify_certificate`` per library certificate, in the order ``derive check`` takes them."""
    sys.path.insert(0, str(ROOT))
    from derive.certificates import read_certificate, verify_certificate
    from derive.cli import _builtin_library

    library = _builtin_library()
    total = 0.0
    for path in sorted(glob.glob(str(ROOT / "proofs/certificates/*.json"))):
        started = time.process_time()
        theorem = verify_certificate(read_certificate(path), library, time_limit=120)
        spent = time.process_time() - started
        total += spent
        print(f"{theorem.id:30} {theorem.steps:4d} steps {spent:6.3f} s CPU", flush=True)
    print(f"{'all':30} {'':10} {total:6.3f} s CPU")


def main() -> int:
    if "--certificates" in sys.argv[1:]:
        certificate_seconds()
        return 0
    for name, argv in COMMANDS.items():
        cpu, wall, code = cpu_seconds(argv)
        print(f"{name:45} {cpu:6.2f} s CPU {wall:7.2f} s wall  exit {code}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
