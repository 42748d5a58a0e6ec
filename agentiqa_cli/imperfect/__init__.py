"""Imperfections before assessment (seed 003, V-QPP-Bench): checks, fixes, the benchmark."""
