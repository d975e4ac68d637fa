"""Benchmarks: build and publish cost as sites grow (`make bench`; see benchmarks/README.md)."""
