"""Benchmarks of tritonwise against torch. Run each from the repository root as
`python -m benchmarks.NAME`; harness.py holds what they share (the check against torch, timers,
ceilings, reports) and payloads.py the functions they time."""
