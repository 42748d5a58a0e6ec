"""The camera model: a small learned no-reference network over the camera readings.

Hand-built detectors learned the lossless synthetic kinds; a camera's pipeline (demosaicing,
noise reduction, the JPEG save) changes what they read. This network maps the readings of
``tools/camera_features.py`` (every built-in detector's raw value plus band, chroma and
exposure statistics) to one quality score in [1, 5] per distortion it names (``HEADS``),
each a built-in detector of its own (``camera_<head>``, a tool card each). It is trained by
``scripts/train_camera_model.py`` (``make camera-model``) on the project's fit set only, on
the CPU in about a minute; its weights ship as JSON beside the cards (about 130 kB).

One hidden layer of tanh units, outputs ``1 + 4 · sigmoid``; inputs standardized with the
training set's mean and spread, clipped to ±3 spreads. The model is the mean of a few such
networks fitted from different starting weights. Fitting lives in ``tools/camera_fit.py``,
so scoring never imports the optimiser.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from agentiqa_cli.errors import ConfigError
from agentiqa_cli.imaging.load import LoadedImage
from agentiqa_cli.tools.camera_features import FEATURES, features
from agentiqa_cli.tools.detectors import CAMERA_HEADS, _cached

F64 = NDArray[np.float64]

HEADS: tuple[str, ...] = CAMERA_HEADS
# the scikit-image photo the model is not trained on (tests/test_camera_model.py reads it)
HELD_OUT_PHOTO = "chelsea"
MODEL_PATH = Path(__file__).resolve().parent.parent / "data" / "tool_cards" / "camera_model.json"
# what resolution loss is worth (the blur head's training target) by the factor the image
# was enlarged by, 1.5, 2, 3, 4 and 6 (bench.camera's levels): a 2x upscale viewed at
# fit-to-screen is still good
RESOLUTION_TARGETS = (4.8, 4.5, 3.4, 2.6, 1.6)


# standardized inputs are clipped to this many spreads: a reading far outside the training
# range (a photo on a black background) must not swing a head on its own
CLIP = 3.0


def _standard(x: F64, mean: F64, scale: F64) -> F64:
    return np.clip((x - mean) / scale, -CLIP, CLIP)


@dataclass(frozen=True)
class Network:
    mean: F64
    scale: F64
    w1: F64
    b1: F64
    w2: F64
    b2: F64

    def predict(self, x: F64) -> F64:
        z = np.tanh(_standard(x, self.mean, self.scale) @ self.w1 + self.b1)
        return 1.0 + 4.0 / (1.0 + np.exp(-(z @ self.w2 + self.b2)))


NETWORK_FIELDS = ("mean", "scale", "w1", "b1", "w2", "b2")


@dataclass(frozen=True)
class CameraModel:
    """``members``: networks fitted alike from different starting weights; the model's
    output is their mean, which a single fit's wobble in a corner of the feature space
    cannot swing."""

    members: tuple[Network, ...]
    features: tuple[str, ...]
    source: str

    @classmethod
    def from_networks(cls, nets: Sequence[Network], source: str) -> CameraModel:
        return cls(tuple(nets), FEATURES, source)

    def predict(self, x: F64) -> F64:
        return np.mean([n.predict(x) for n in self.members], axis=0)

    def save(self, path: Path) -> None:
        data = {
            "heads": list(HEADS),
            "features": list(self.features),
            "source": self.source,
            "members": [
                {f: np.round(getattr(n, f), 7).tolist() for f in NETWORK_FIELDS}
                for n in self.members
            ],
        }
        Path(path).write_text(json.dumps(data, indent=0) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: Path = MODEL_PATH) -> CameraModel:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            if data["heads"] != list(HEADS) or data["features"] != list(FEATURES):
                raise ValueError("its heads or features are not this version's")
            nets = tuple(
                Network(*(np.asarray(m[f], np.float64) for f in NETWORK_FIELDS))
                for m in data["members"]
            )
            if not nets:
                raise ValueError("it has no networks")
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ConfigError(f"camera model {path}: {e} (retrain it: make camera-model)") from None
        return cls(nets, FEATURES, str(data.get("source", "")))

    def scores(self, image: LoadedImage) -> dict[str, float]:
        """Each head's score in [1, 5] for ``image`` (cached on it)."""

        def make() -> dict[str, float]:
            y = self.predict(features(image)[None, :])[0]
            return {h: float(v) for h, v in zip(HEADS, y, strict=True)}

        return _cached(image, "cam:scores", make)


@lru_cache(maxsize=1)
def shipped() -> CameraModel:
    return CameraModel.load()
