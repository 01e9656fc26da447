"""The Python package's overhead: a Python ``llm.complete(...)`` against the same call
made from Rust, on the same handle, against the same in-process mock.

    python crates/switchyard-py/bench/overhead.py [--calls 4000] [--rounds 20]

Both sides call ``mock/echo`` with the prompt ``"hello"`` and ``max_tokens=16`` one call
after another. The Rust side is ``_bench_rust_complete`` (src/bench.rs): the library's
``Llm::complete`` in a loop on the module's runtime, each request built inside the timed
span. The two sides alternate in rounds so that a neighbour's load falls on both alike.
Prints each side's median and percentiles and the difference of the medians.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import switchyard
from switchyard import _switchyard


def percentile(sorted_values: list[int], p: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(p * len(sorted_values)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=4000, help="calls per side")
    parser.add_argument("--rounds", type=int, default=20, help="alternations")
    parser.add_argument("--warmup", type=int, default=300, help="untimed calls per side")
    args = parser.parse_args()
    os.environ.pop("SWITCHYARD_MODEL", None)
    per_round = max(1, args.calls // args.rounds)

    with switchyard.mock():
        llm = switchyard.llm("mock/echo")
        complete = llm.complete
        perf = time.perf_counter_ns
        for _ in range(args.warmup):
            complete("hello", max_tokens=16)
        _switchyard._bench_rust_complete(llm, "hello", args.warmup, 16)

        py_times: list[int] = []
        rust_times: list[int] = []
        for _ in range(args.rounds):
            for _ in range(per_round):
                start = perf()
                reply = complete("hello", max_tokens=16)
                py_times.append(perf() - start)
            assert reply.text == "hello", reply
            rust_times.extend(_switchyard._bench_rust_complete(llm, "hello", per_round, 16))

    py_times.sort()
    rust_times.sort()
    rows = [("python", py_times), ("rust", rust_times)]
    print(f"{len(py_times)} calls per side, mock/echo, in-process mock")
    print(f"{'side':8} {'p10':>9} {'median':>9} {'p90':>9}  (µs)")
    for name, values in rows:
        print(
            f"{name:8} {percentile(values, 0.1) / 1000:9.1f} "
            f"{statistics.median(values) / 1000:9.1f} {percentile(values, 0.9) / 1000:9.1f}"
        )
    overhead = (statistics.median(py_times) - statistics.median(rust_times)) / 1000
    print(f"overhead at the median: {overhead:.1f} µs (target: at most 20 µs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
