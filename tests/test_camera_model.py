"""The camera model (tools/camera_model.py): shipped weights, its heads' response to camera
damage on a photo it was not trained on, and the fitting routine."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from agentiqa_cli.bench.camera import camera_damage
from agentiqa_cli.bench.synth import sample_photos
from agentiqa_cli.imaging.distort import item_rng
from agentiqa_cli.imaging.load import load_image
from agentiqa_cli.tools.camera_features import FEATURES, features
from agentiqa_cli.tools.camera_model import (
    HEADS,
    HELD_OUT_PHOTO,
    CameraModel,
    fit_network,
    shipped,
)
from agentiqa_cli.tools.detectors import DETECTORS


@pytest.fixture(scope="module")
def photo(tmp_path_factory: pytest.TempPathFactory) -> np.ndarray:
    # the scikit-image photo the model was not trained on
    (p,) = sample_photos(tmp_path_factory.mktemp("clean"), 512, [HELD_OUT_PHOTO])
    with Image.open(p) as im:
        return np.asarray(im.convert("RGB")).astype(np.float32) / 255.0


def _camera(x: np.ndarray, path: Path) -> dict[str, float]:
    Image.fromarray((np.clip(x, 0, 1) * 255 + 0.5).astype(np.uint8)).save(path, quality=90)
    return shipped().scores(load_image(path))


def test_shipped_weights_load_and_every_head_is_a_detector() -> None:
    model = CameraModel.load()
    assert model.features == FEATURES and model.source
    assert set(HEADS) == {"blur", "noise", "compression", "under", "over"}
    for h in HEADS:
        assert f"camera_{h}" in DETECTORS


def test_heads_fall_with_their_damage_on_an_unseen_photo(photo: np.ndarray, tmp_path: Path) -> None:
    clean = _camera(photo, tmp_path / "clean.jpg")
    assert min(clean.values()) >= 4.0, clean
    for kind, head in (
        ("defocus", "blur"),
        ("sensor_noise", "noise"),
        ("underexpose", "under"),
        ("overexpose", "over"),
        ("resolution", "blur"),
    ):
        seq = [clean[head]] + [
            _camera(
                camera_damage(photo, kind, lv, item_rng(0, HELD_OUT_PHOTO, kind)),
                tmp_path / f"{kind}{lv}.jpg",
            )[head]
            for lv in (2, 5)
        ]
        assert seq[0] > seq[1] > seq[2], (kind, seq)
        assert seq[2] < seq[0] - 1.0, (kind, seq)  # level 5: a clear drop


def test_a_tiny_image_still_gets_a_reading(tmp_path: Path) -> None:
    p = tmp_path / "tiny.png"
    Image.fromarray(np.full((16, 20, 3), 128, np.uint8)).save(p)
    v = features(load_image(p))
    assert v.shape == (len(FEATURES),) and np.isfinite(v).all()
    assert all(1.0 <= s <= 5.0 for s in shipped().scores(load_image(p)).values())


def test_fit_network_learns_a_monotone_target() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 3))
    y = np.stack([5 - 2 * (1 + np.tanh(x[:, 0])), 3 + np.tanh(x[:, 1])], axis=1)
    net = fit_network(x, y, np.ones(400), hidden=8, l2=1e-4)
    err = np.sqrt(np.mean((net.predict(x) - y) ** 2))
    assert err < 0.15
    grid = np.zeros((5, 3))
    grid[:, 0] = np.linspace(-2, 2, 5)
    assert np.all(np.diff(net.predict(grid)[:, 0]) < 0)
