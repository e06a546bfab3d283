"""plantrail benchmark suite: run with `python -m bench.run`."""
