"""The camera model (tools/camera_model.py): shipped weights, its heads' response to camera
damage on a photo it was not trained on, and the fitting routine."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from agentiqa_cli.bench.camera import camera_damage
from agentiqa_cli.bench.synth import sample_photos
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.imaging import distort
from agentiqa_cli.imaging.distort import item_rng
from agentiqa_cli.imaging.load import load_image
from agentiqa_cli.resources import default_cards_dir
from agentiqa_cli.tools.builtin import DETECTORS
from agentiqa_cli.tools.camera_features import (
    DIRECTION_FEATURES,
    FEATURES,
    NSS_FEATURES,
    directions,
    features,
    scene_statistics,
)
from agentiqa_cli.tools.camera_fit import fit_network
from agentiqa_cli.tools.camera_model import (
    HEADS,
    HELD_OUT_PHOTO,
    CameraModel,
    Network,
    shipped,
)
from agentiqa_cli.tools.cards import load_cards
from agentiqa_cli.tools.detectors import jpeg_quality


@pytest.fixture(scope="module")
def photo(tmp_path_factory: pytest.TempPathFactory) -> np.ndarray:
    # the scikit-image photo the model was not trained on
    (p,) = sample_photos(tmp_path_factory.mktemp("clean"), 512, [HELD_OUT_PHOTO])
    with Image.open(p) as im:
        return np.asarray(im.convert("RGB")).astype(np.float32) / 255.0


def _camera(x: np.ndarray, path: Path) -> dict[str, float]:
    """Each head's score on the 1-5 scale of its card, as findings read it."""
    Image.fromarray((np.clip(x, 0, 1) * 255 + 0.5).astype(np.uint8)).save(path, quality=90)
    cards = load_cards(default_cards_dir())
    raw = shipped().scores(load_image(path))
    return {h: cards.get(f"camera_{h}").normalize(v) for h, v in raw.items()}


def test_shipped_weights_load_and_every_head_is_a_detector() -> None:
    model = CameraModel.load()
    assert model.features == FEATURES and model.source
    assert set(HEADS) == {"blur", "noise", "compression", "under", "over"}
    for h in HEADS:
        assert f"camera_{h}" in DETECTORS


def test_only_the_blur_head_reads_a_blur_direction(photo: np.ndarray, tmp_path: Path) -> None:
    Image.fromarray((photo * 255 + 0.5).astype(np.uint8)).save(tmp_path / "p.png")
    x = features(load_image(tmp_path / "p.png"))
    moved = x.copy()
    fall, spread = (FEATURES.index(f) for f in DIRECTION_FEATURES)
    moved[fall] -= 1.6  # as a 15 px shake moves them on a fit photo
    moved[spread] += 0.6
    before, after = shipped().predict(x[None])[0], shipped().predict(moved[None])[0]
    blur = HEADS.index("blur")
    assert after[blur] < before[blur] - 0.05, (before, after)
    others = [j for j in range(len(HEADS)) if j != blur]
    assert np.array_equal(after[others], before[others])


def test_heads_fall_with_their_damage_on_an_unseen_photo(photo: np.ndarray, tmp_path: Path) -> None:
    clean = _camera(photo, tmp_path / "clean.jpg")
    assert min(clean.values()) >= 4.4, clean  # no head finds more than "slight" damage
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


def test_scene_statistics_read_how_pixels_relate_to_their_neighbours(
    photo: np.ndarray, tmp_path: Path
) -> None:
    # MSCN coefficients: a photo's are peaky (shape below 2), white noise's are not (above:
    # a spread read over a few pixels bounds them) and are barely correlated with their
    # neighbours; a blur correlates a photo's, noise decorrelates them, and contrast (the
    # local normalization's whole point) changes none of it
    rng = np.random.default_rng(0)

    def nss(rgb: np.ndarray, name: str) -> dict[str, float]:
        Image.fromarray((np.clip(rgb, 0, 1) * 255 + 0.5).astype(np.uint8)).save(tmp_path / name)
        v = scene_statistics(load_image(tmp_path / name))
        assert len(v) == len(NSS_FEATURES) and np.isfinite(v).all()
        return dict(zip(NSS_FEATURES, v, strict=True))

    white = nss(0.5 + rng.normal(0, 0.08, (384, 512, 1)).repeat(3, axis=2), "white.png")
    assert all(abs(white[f"nss0_{d}"]) < 0.2 for d in ("h", "v", "d1", "d2")), white
    clean = nss(photo, "clean.png")
    assert clean["nss0_shape"] < 2.0 < white["nss0_shape"], (clean, white)
    soft = nss(distort.blur(photo, 3, rng), "soft.png")
    noisy = nss(photo + rng.normal(0, 0.05, photo.shape).astype(np.float32), "noisy.png")
    flat = nss(0.25 + 0.5 * photo, "flat.png")  # half the contrast
    for d in ("h", "v", "d1", "d2"):
        assert soft[f"nss0_{d}"] > clean[f"nss0_{d}"] + 0.1, (d, soft, clean)
        assert clean[f"nss0_{d}"] > noisy[f"nss0_{d}"] + 0.1, (d, clean, noisy)
        assert flat[f"nss0_{d}"] == pytest.approx(clean[f"nss0_{d}"], abs=0.1), d


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


def test_monotone_pairs_make_a_head_fall_along_its_series() -> None:
    """Targets that rise and fall along a series (a sine) are fitted as they are without
    pairs; with each sample paired to the one 20 further on as "more damaged" (chains of six,
    as a clean image and its five levels), the head falls along every pair."""
    x = np.linspace(-1.5, 1.5, 120)[:, None]
    y = np.column_stack([3.0 + np.sin(3 * x[:, 0]), np.full(120, 4.0)])
    w = np.ones(120)
    pairs = np.array([(i, i + 20, 0) for i in range(100)], dtype=np.intp)

    def rises(net: Network) -> int:
        out = net.predict(x)[:, 0]
        return int(np.sum(out[pairs[:, 1]] > out[pairs[:, 0]]))

    assert rises(fit_network(x, y, w, hidden=8, l2=1e-4)) > 30
    assert rises(fit_network(x, y, w, hidden=8, l2=1e-4, pairs=pairs, mono=10.0)) == 0


def test_a_model_is_the_mean_of_its_members_and_saves_them_all(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    d, k = len(FEATURES), len(HEADS)
    x = rng.normal(size=(300, d))
    y = np.clip(3 + x[:, :k], 1, 5)
    nets = [fit_network(x, y, np.ones(300), hidden=10, l2=1e-3, seed=s) for s in (0, 1)]
    model = CameraModel.from_networks(nets, "test")
    a, b = (n.predict(x[:5]) for n in nets)
    assert not np.allclose(a, b)  # two starts, two fits
    assert np.allclose(model.predict(x[:5]), (a + b) / 2)
    model.save(tmp_path / "m.json")
    back = CameraModel.load(tmp_path / "m.json")
    assert len(back.members) == 2
    assert np.allclose(back.predict(x[:5]), model.predict(x[:5]), atol=1e-4)
    (tmp_path / "none.json").write_text(
        (tmp_path / "m.json").read_text().split('"members"')[0] + '"members": []}'
    )
    with pytest.raises(ConfigError, match="no networks"):
        CameraModel.load(tmp_path / "none.json")


def test_a_blur_along_one_direction_reads_in_that_direction(
    photo: np.ndarray, tmp_path: Path
) -> None:
    # a shake smears detail along its path only: the gradient energy's fall from the coarse
    # plane to the fine one is steepest along it (direction_fall), far steeper than across it
    # (direction_spread); a defocus blurs every direction alike
    def read(x: np.ndarray, name: str) -> list[float]:
        Image.fromarray((np.clip(x, 0, 1) * 255 + 0.5).astype(np.uint8)).save(tmp_path / name)
        return directions(load_image(tmp_path / name))

    def smear(x: np.ndarray, along: int) -> np.ndarray:
        return np.mean([np.roll(x, s, axis=along) for s in range(-7, 8)], axis=0)

    fall, spread = read(photo, "clean.png")
    across = [read(smear(photo, a), f"shake{a}.png") for a in (0, 1)]
    defocus = read(distort.blur(photo, 3, np.random.default_rng(0)), "defocus.png")
    for f, s in across:
        assert f < fall - 1.0 and s > spread + 0.4, (f, s, fall, spread)
    assert defocus[0] < fall - 1.0 and defocus[1] < min(s for _, s in across) - 0.4, defocus


def test_separate_heads_read_only_their_own_units() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 3))
    y = np.stack([5 - 2 * (1 + np.tanh(x[:, 0])), 3 + np.tanh(x[:, 1])], axis=1)
    net = fit_network(x, y, np.ones(300), hidden=8, l2=1e-4, separate=True)
    assert np.sqrt(np.mean((net.predict(x) - y) ** 2)) < 0.2
    # each hidden unit feeds one head: four units each
    assert ((net.w2 != 0).sum(axis=1) <= 1).all() and ((net.w2 != 0).sum(axis=0) == 4).all()
    # a change in what head 1 reads (x[:, 1]) moves head 0 only through shared inputs: none
    a, b = np.zeros((1, 3)), np.array([[0.0, 2.0, 0.0]])
    assert abs(net.predict(a)[0, 0] - net.predict(b)[0, 0]) < 0.3


def test_a_head_reads_only_the_inputs_it_is_given() -> None:
    # head 0 depends on input 0 and head 1 on input 1; head 1 is not given input 0, so a
    # change in input 0 cannot move it at all, while head 0 follows it
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 3))
    y = np.stack([5 - 2 * (1 + np.tanh(x[:, 0])), 3 + np.tanh(x[:, 1])], axis=1)
    reads = np.array([[True, False], [True, True], [True, True]])
    net = fit_network(x, y, np.ones(300), hidden=8, l2=1e-4, separate=True, reads=reads)
    a, b = np.zeros((1, 3)), np.array([[2.0, 0.0, 0.0]])
    assert net.predict(a)[0, 1] == net.predict(b)[0, 1]
    assert net.predict(a)[0, 0] - net.predict(b)[0, 0] > 1.0
    assert (net.w1[0, 4:] == 0).all()  # head 1's units (the last four) hold no weight on it


def test_a_photo_twice_the_size_reads_as_its_view(photo: np.ndarray, tmp_path: Path) -> None:
    # noise and the camera readings read a large image at viewing scale (area-averaged to at
    # most 1024 px, as sharpness does): a noisy photo at 2048 px reads as its 2x2 block mean
    # at 1024 px, not as its per-pixel noise (which would be twice as strong)
    rng = np.random.default_rng(1)
    big = np.kron(photo, np.ones((4, 4, 1), np.float32))[:, :2048]  # 2048 px long side
    big = np.clip(big + rng.normal(0, 0.06, big.shape).astype(np.float32), 0, 1)
    big8 = (big * 255 + 0.5).astype(np.uint8)
    h, w = big8.shape[0] // 2 * 2, big8.shape[1] // 2 * 2
    half = big8[:h, :w].astype(np.float32).reshape(h // 2, 2, w // 2, 2, 3).mean(axis=(1, 3))
    Image.fromarray(big8).save(tmp_path / "big.png")
    Image.fromarray((half + 0.5).astype(np.uint8)).save(tmp_path / "view.png")
    a, b = load_image(tmp_path / "big.png"), load_image(tmp_path / "view.png")
    assert max(a.shape) == 2048 and max(b.shape) == 1024
    na, nb = DETECTORS["noise"](a), DETECTORS["noise"](b)
    assert na == pytest.approx(nb, rel=0.05), (na, nb)
    fa, fb = features(a), features(b)
    band = [FEATURES.index(n) for n in ("fine0_p90", "flat_y0", "flat_c0")]
    assert fa[band] == pytest.approx(fb[band], abs=0.1), (fa[band], fb[band])


def test_jpeg_quality_reads_the_coarsest_save_from_the_pixels(
    photo: np.ndarray, tmp_path: Path
) -> None:
    rgb = Image.fromarray((photo * 255 + 0.5).astype(np.uint8))

    def read(im: Image.Image, name: str, **save: int) -> float:
        im.save(tmp_path / name, **save)
        return jpeg_quality(load_image(tmp_path / name))

    assert read(rgb, "lossless.png") == 100.0
    assert read(rgb, "q90.jpg", quality=90) >= 80.0  # a camera's save: steps too fine to tell
    assert abs(read(rgb, "q75.jpg", quality=75) - 75.0) <= 3.0
    rgb.save(tmp_path / "q30.jpg", quality=30)
    with Image.open(tmp_path / "q30.jpg") as early:
        early = early.convert("RGB")
        # the earlier, coarser save shows through a later fine one ...
        assert abs(read(early, "q30_q90.jpg", quality=90) - 30.0) <= 4.0
        # ... and a crop, whose grid is found where the blocks' edges stand out ...
        cropped = early.crop((5, 3, early.width, early.height))
        assert abs(read(cropped, "q30_cropped.png") - 30.0) <= 4.0
        # ... and an enlargement by 2 or 3 saved again, whose grid grew with it ...
        for k in (2, 3):
            big = early.resize((early.width * k, early.height * k), Image.Resampling.BICUBIC)
            assert abs(read(big, f"q30_x{k}_q90.jpg", quality=90) - 30.0) <= 5.0, k
        # ... but not through a reduction, which breaks the grid
        half = early.resize((early.width // 2, early.height // 2), Image.Resampling.LANCZOS)
        assert read(half, "q30_half.png") >= 80.0
    # an enlarged photo without an earlier save reads as one
    big = rgb.resize((rgb.width * 2, rgb.height * 2), Image.Resampling.BICUBIC)
    assert read(big, "x2_q90.jpg", quality=90) >= 80.0
