"""Benchmarks (not part of the installed package). See bench/README.md."""
