"""Imperfections before assessment (V-QPP-Bench): checks, fixes, the benchmark."""
