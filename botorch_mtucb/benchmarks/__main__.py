"""``python -m botorch_mtucb.benchmarks``: see :mod:`botorch_mtucb.benchmarks.cli`."""

from botorch_mtucb.benchmarks.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
