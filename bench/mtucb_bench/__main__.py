"""``python -m mtucb_bench``: the ``mtucb-bench`` command (see :mod:`mtucb_bench.cli`)."""

from mtucb_bench.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
