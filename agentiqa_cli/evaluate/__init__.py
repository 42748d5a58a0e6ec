"""``agentiqa evaluate``: a five-tier verdict on a whole folder (or a generator) from a few
samples per round (the Evaluation Agent; its rules version: docs/guides.md).

Modules: ``tiers`` (cut points), ``stats`` (two-phase stratified means and t intervals),
``aspects`` (sub-aspects and what each row measures of them), ``sampling`` (seeded draws),
``planning`` (the ``eval_plan`` role and its rules version), ``generator`` (running a
generator command safely), ``state`` (rounds, rows, estimates, resume), ``loop`` (the rounds).
"""
