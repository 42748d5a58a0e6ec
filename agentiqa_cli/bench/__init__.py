"""Benchmarks and calibration: labelled datasets, correlation metrics, multiple-choice
questions, synthetic-distortion checks and per-tool logistic fits.

Pure functions and typed records only; the CLI renders and prints.
"""
