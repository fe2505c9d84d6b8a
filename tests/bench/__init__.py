"""Benchmarks: printed figures, run by `make bench` (pytest -m slow -s), never timed assertions."""
