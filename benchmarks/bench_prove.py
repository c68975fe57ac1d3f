"""Cold time of `derive prove` (all six theorems), as a ratio to a bare `import sympy`.

Each sample is a fresh interpreter, so imports and first-use costs are counted.  The baseline
runs in the same process loop, interleaved, so machine noise hits both alike.

    python benchmarks/bench_prove.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = {
    "import sympy (baseline)": [sys.executable, "-c", "import sympy"],
    "derive prove": [sys.executable, "-m", "derive", "prove"],
}


def wall(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    samples: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.repeats):
        for name, command in COMMANDS.items():
            samples[name].append(wall(command))
    base = statistics.median(samples["import sympy (baseline)"])
    print("| command | median wall s | ratio to import sympy |\n| --- | --- | --- |")
    for name, values in samples.items():
        median = statistics.median(values)
        print(f"| {name} | {median:.2f} | {median / base:.2f} |")


if __name__ == "__main__":
    main()
