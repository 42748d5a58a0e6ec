"""Score fusion (AgenticIQA §3.3, Eqs. 4–5) and reading level probabilities off a reply.

The paper's final score ``q = Σ_c α_c p_c c`` is not on the 1–5 scale (α and p both sum
to one, so their product sums to less); we normalise by ``Σ_c α_c p_c``, which keeps the
paper's weighting and yields a proper expectation over levels. The paper's q̄ is the mean of
the tools' scores; here it is the tools' joint score as ``score`` fuses them
(``scoring.fuse_tools``: the mean reproduces the paper). No tool scores → the VLM's
expectation ``Σ p_c c``. Never a random score.

The agent is never below its tools: without log-probabilities (the rules backend, or a
server that returns none) the level probabilities carry no information, and Eq. 4 with a
uniform ``p`` would only pull q̄ towards the middle of the scale; the score is then q̄
itself, exactly what ``score`` reports for the same tools. Findings of moderate or worse
cap the score (``capped``) so that a "severe blur" is never called "good".

Non-finite log-probabilities (NaN, ±inf from a broken server) are missing values, never
numbers: a level position holding one gives no ``p`` at all, so the score is the tools'
own, inside 1–5, and never a confident "bad" made of NaN.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from agentiqa_cli.records import LEVELS, Finding, ToolScore
from agentiqa_cli.tools.severity import cap_for
from agentiqa_cli.vlm.base import VLMReply

# a finding this bad or worse is a visible distortion: it caps the score
VISIBLE = ("moderate", "severe", "extreme")

# probability given to a level missing from the top log-probabilities: below anything listed
LEVEL_FLOOR = 1e-6


def gaussian_weights(qbar: float, eta: float = 1.0) -> list[float]:
    """α_c ∝ exp(-η (q̄ - c)²) over c = 1..5 (Eq. 4)."""
    w = [math.exp(-eta * (qbar - c) ** 2) for c in range(1, 6)]
    s = sum(w)
    return [x / s for x in w]


def fuse(qbar: float | None, p: Sequence[float] | None, eta: float = 1.0) -> float:
    """Final 1–5 score from the tools' joint score ``qbar`` (Eq. 4's q̄; None when no tool
    ran) and the five level probabilities (ordered bad … excellent); q̄ itself when there
    are no probabilities."""
    if qbar is not None and not math.isfinite(qbar):
        raise ValueError(f"the tools' joint score must be finite, got {qbar}")
    if p is None and qbar is not None:
        return _clip(qbar)
    probs = list(p) if p is not None else [0.2] * 5
    if len(probs) != 5:
        raise ValueError("need five level probabilities")
    if not all(math.isfinite(x) and x >= 0.0 for x in probs) or sum(probs) <= 0.0:
        probs = [0.2] * 5  # not a distribution: no information, as without log-probabilities
    if qbar is None:
        return _clip(sum(pc * c for pc, c in zip(probs, range(1, 6), strict=True)))
    alpha = gaussian_weights(qbar, eta)
    num = sum(a * pc * c for a, pc, c in zip(alpha, probs, range(1, 6), strict=True))
    den = sum(a * pc for a, pc in zip(alpha, probs, strict=True))
    if den <= 0.0:  # p puts no mass where the tools are: fall back to the tools alone
        return _clip(sum(a * c for a, c in zip(alpha, range(1, 6), strict=True)))
    return _clip(num / den)


def capped(score: float, findings: Sequence[Finding], evidence: Sequence[ToolScore]) -> float:
    """``score`` lowered, if need be, to the cap of every visible finding (moderate or
    worse; ``tools.severity.cap_for``): the score of the detector that measured the
    distortion, within the severity's band. Findings of "none" or "slight" change nothing:
    the score then rests on the tools' evidence alone."""
    norms = {s.tool: s.norm for s in evidence if s.ok and s.norm is not None}
    caps = [cap_for(f, norms) for f in findings if f.severity in VISIBLE]
    return min([score, *caps])


def _clip(q: float) -> float:
    return min(5.0, max(1.0, q))  # rounding can step a hair outside the scale


def softmax_levels(logprobs: dict[str, float]) -> list[float]:
    """p_c from log-probabilities keyed by level name (Eq. 5), floor for missing levels
    (a non-finite value counts as missing)."""
    # a log-probability is at most 0: larger values are clamped (and cannot overflow)
    finite = {lv: min(lp, 0.0) for lv, lp in logprobs.items() if math.isfinite(lp)}
    raw = [math.exp(finite[lv]) if lv in finite else LEVEL_FLOOR for lv in LEVELS]
    s = sum(raw)
    return [x / s for x in raw]


def _level_for_token(token: str) -> str | None:
    """The single level a generated token can begin (``"exc"`` → excellent), if unambiguous."""
    t = token.strip().lstrip(":{").strip().strip('"').strip().lower()
    if not t:
        return None
    hits = [lv for lv in LEVELS if lv.startswith(t) or t.startswith(lv)]
    return hits[0] if len(hits) == 1 else None


def level_logprobs(reply: VLMReply, prefix: str = "") -> dict[str, float] | None:
    """Log-probabilities of the five levels at the position where the level is generated.

    ``prefix`` is the text generated before the level (``'{"level":"'`` for the summarizer's
    JSON, empty for a bare choice). Tokens at that position that begin exactly one level
    add their probability to it. None when the reply carries no log-probabilities, or
    when any value at that position is not finite (``nonfinite_note`` says so).
    """
    top = _level_position(reply, prefix)
    if top is None or not all(math.isfinite(lp) for lp in top.values()):
        return None
    mass: dict[str, float] = {}
    for tok, lp in top.items():
        lv = _level_for_token(tok)
        if lv is not None:
            mass[lv] = mass.get(lv, 0.0) + math.exp(lp)
    mass = {lv: m for lv, m in mass.items() if m > 0.0}  # exp underflows to 0 far below
    if not mass:
        return None
    return {lv: math.log(m) for lv, m in mass.items()}


def nonfinite_note(reply: VLMReply, prefix: str = "") -> str | None:
    """For the trace: what was wrong with the level position's log-probabilities, if any."""
    top = _level_position(reply, prefix)
    bad = sorted(tok for tok, lp in (top or {}).items() if not math.isfinite(lp))
    if not bad:
        return None
    return (
        f"non-finite log-probabilities for {', '.join(map(repr, bad))} treated as missing "
        "(p uniform: the score is the tools')"
    )


def _level_position(reply: VLMReply, prefix: str) -> dict[str, float] | None:
    """The {token: logprob} of the position where the level is generated."""
    if not reply.top_logprobs:
        return None
    pos = 0
    if prefix:
        if reply.tokens is None:
            return None
        # the level starts at the first token that carries text beyond the prefix (a token
        # may straddle the boundary, e.g. '"ex'; quotes are stripped when matching below)
        want = prefix.replace(" ", "")
        text = ""
        for i, tok in enumerate(reply.tokens):
            text += tok.replace(" ", "")
            if len(text) > len(want) and text.startswith(want):
                pos = i
                break
        else:
            return None
    if pos >= len(reply.top_logprobs):
        return None
    return reply.top_logprobs[pos]
