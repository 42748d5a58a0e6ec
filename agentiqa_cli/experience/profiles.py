"""Pattern profiles: the fine level of the pool (EvoIR-Agent §3.3 Eq. 3, §3.4 Eq. 12).

The paper anchors a degradation *pattern* with a profile (supporting images and a text) and
learns the profiles of a key from its records by a multi-agent debate (Eq. 12) that must meet
two requirements: *semantic consistency* (the members are close in the feature space the
retrieval uses) and *ranking consistency* (the members' rankings agree, so one priority
serves the whole profile). Here the feature space is the standardised detector readings
(``measure.profile``) and the debate is replaced by a deterministic rule that enforces both
requirements, so profiles are learnt without a model:

- ranking consistency: records are grouped by their best tool (records without one, a tie,
  support no profile);
- semantic consistency, by the median-absolute-deviation (MAD) outlier rule: in a group,
  starting from the nearer half around its medoid, the members give a centre (the median
  of each reading) and a scale (1.4826 · MAD of each reading, at least ``MIN_SCALE``
  standard deviations of the pool); a record belongs to the profile when every reading's
  robust z, ``|x − median| / scale``, is at most ``K_MAD``. Centre, scale and members are
  recomputed until the members are stable; the rest of the group is peeled the same way;
  a profile needs ``MIN_MEMBERS`` records.

Retrieval (Eq. 4, then the paper's MLLM check of the top-K texts): the K = 3 profiles most
cosine-similar to the image's readings; those that hold the image (the MAD rule) are candidates,
and they must agree on the tool (two profiles that hold the image and name different tools
are a conflict: no advice, the model decides).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

TOP_K = 3  # EvoIR-Agent App. C.2: Top-K recall
K_MAD = 3.0  # robust z a member may lie from the profile's centre
MAD_SCALE = 1.4826  # MAD → standard deviation of a normal
MIN_MEMBERS = 3
MIN_SCALE = 0.5  # a profile's scale per reading, in the pool's standard deviations


class Profile(BaseModel):
    """One learnt degradation pattern of a key: who wins on it and where it lies."""

    model_config = ConfigDict(extra="forbid")

    best: str
    centre: list[float]
    scale: list[float]  # 1.4826 · MAD per reading (at least MIN_SCALE)
    members: int
    text: str = ""  # the readings that set it apart, e.g. "noise +2.1σ, sharpness -1.3σ"

    def holds(self, vec: Sequence[float] | np.ndarray) -> bool:
        """Whether every reading of ``vec`` lies within ``K_MAD`` robust z of the centre."""
        v = np.asarray(vec, dtype=float)
        c = np.asarray(self.centre, dtype=float)
        if v.shape != c.shape:
            return False
        return bool(_robust_z(v, c, np.asarray(self.scale, dtype=float)) <= K_MAD + 1e-9)


class Candidate(BaseModel):
    """A record as profile learning sees it."""

    model_config = ConfigDict(frozen=True)

    profile: list[float]
    best: str


def learn(records: Sequence[Candidate], names: Sequence[str] = ()) -> list[Profile]:
    """The profiles of one key's records; ``names`` label the profile components (for the
    profile's text)."""
    by_best: dict[str, list[list[float]]] = {}
    for r in records:
        by_best.setdefault(r.best, []).append(r.profile)
    out: list[Profile] = []
    for best in sorted(by_best):
        pending = np.asarray(by_best[best], dtype=float)
        while len(pending) >= MIN_MEMBERS:
            taken = _peel(pending)
            if taken is None:
                break
            inside, centre, scale = taken
            out.append(
                Profile(
                    best=best,
                    centre=[round(float(v), 6) for v in centre],
                    scale=[round(float(v), 6) for v in scale],
                    members=int(inside.sum()),
                    text=_describe(centre, names),
                )
            )
            pending = pending[~inside]
    return out


def _peel(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """One profile out of ``x``: (members mask, centre, scale), or None when fewer than
    ``MIN_MEMBERS`` records are consistent with each other. Starts from the medoid's nearer
    half, then alternates centre and scale (the members' median and MAD per reading) and
    membership (every robust z within ``K_MAD``) until the members no longer change."""
    dist = np.linalg.norm(x[:, None, :] - x[None, :, :], axis=2)
    medoid = int(np.argmin(np.median(dist, axis=1)))
    inside = dist[medoid] <= np.median(dist[medoid])
    centre, scale = x[medoid], np.full(x.shape[1], MIN_SCALE)
    for _ in range(10):
        centre = np.median(x[inside], axis=0)
        mad = np.median(np.abs(x[inside] - centre), axis=0)
        scale = np.maximum(MAD_SCALE * mad, MIN_SCALE)
        now = _robust_z(x, centre, scale) <= K_MAD
        if (now == inside).all():
            break
        inside = now
    if int(inside.sum()) < MIN_MEMBERS:
        return None
    return inside, centre, scale


def _robust_z(x: np.ndarray, centre: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """The largest robust z over the readings, per row of ``x`` (one row: a scalar)."""
    return np.asarray(np.max(np.abs(x - centre) / scale, axis=-1))


def _describe(centre: np.ndarray, names: Sequence[str]) -> str:
    if len(names) != len(centre):
        return ""
    order = np.argsort(-np.abs(centre))[:2]
    parts = [f"{names[i]} {centre[i]:+.1f}σ" for i in order if abs(centre[i]) >= 0.5]
    return ", ".join(parts) or "readings near the pool's mean"


def match(vec: Sequence[float], profiles: Sequence[Profile], k: int = TOP_K) -> Profile | None:
    """The profile that holds ``vec`` among the ``k`` most cosine-similar ones, when those
    that hold it agree on the tool; else None."""
    v = np.asarray(vec, dtype=float)
    nv = float(np.linalg.norm(v))
    scored = []
    for p in profiles:
        c = np.asarray(p.centre, dtype=float)
        nc = float(np.linalg.norm(c))
        if c.shape != v.shape:
            continue
        cos = float(v @ c / (nv * nc)) if nv > 0 and nc > 0 else 0.0
        scored.append((cos, p))
    scored.sort(key=lambda t: -t[0])
    holding = [p for _, p in scored[:k] if p.holds(v)]
    if not holding or len({p.best for p in holding}) > 1:
        return None
    return max(holding, key=lambda p: p.members)
