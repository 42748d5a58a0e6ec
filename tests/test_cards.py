"""Tool cards: they load, agree with pyiqa and AgenticIQA, normalize as printed, and really run."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy.ndimage import gaussian_filter

from agentiqa_cli.errors import ConfigError, UnknownToolError
from agentiqa_cli.imaging.load import LoadedImage, load_image
from agentiqa_cli.tools.cards import CardSet, ToolCard, load_card, load_cards
from agentiqa_cli.tools.runner import ToolRunner
from tests.conftest import save_rgb

CARDS_DIR = Path(__file__).resolve().parents[1] / "tool_cards"

SEED_FR = "topiq_fr ahiq fsim lpips dists wadiqam_fr pieapp ms_ssim gmsd ssim ckdn vif psnr vsi"
SEED_NR = "qalign clipiqa unique hyperiqa tres musiq wadiqam_nr dbcnn arniqa nima brisque niqe maniqa liqe"

# AgenticIQA Table 5, typed in again here (row name -> tool) so a card edit cannot drift silently.
TABLE5 = {
    "topiq_fr": (21.73, 0.1147, 0.4721, 3.5654, 1.0094),
    "ahiq": (0.4280, -592.6356, -2.4819, 3.7677, 1.6143),
    "fsim": (265.7031, 23.2940, 1.2003, 1.9193, 133.0061),
    "lpips": (-2.0915, 3.7543, -28.0133, -4.7251, 4.9710),
    "dists": (-6.3380, -7.0362, -147.7936, -8.4514, 1.0753),
    "wadiqam_fr": (41.8259, 0.0997, -0.3064, 23.1826, 3.5943),
    "gmsd": (-5.9925, -23.3876, -59.6895, -13.8274, 1.0789),
    "ssim": (94.4202, 64.9155, 1.0664, 2.8744, 47.6819),
    "ckdn": (21.6375, 3.1301, 0.3708, -12.3232, 6.7834),
    "vif": (0.4119, 49.7978, 0.2237, 2.4370, 1.3850),
    "qalign": (28.8204, 0.1469, 6.1941, -0.1906, 6.7863),
    "clipiqa": (21.7287, 0.1147, 0.4721, 3.5654, 1.0094),
    "unique": (52.5605, 0.2967, 0.8558, -2.9510, 5.6368),
    "hyperiqa": (0.4071, 39.0359, 0.3155, 3.1472, 0.9815),
    "tres": (-0.0550, 6559.4161, 48.9070, 0.0255, 1.1176),
    "musiq": (2.4078, -0.1123, 32.0686, 0.0734, -0.7363),
    "wadiqam_nr": (106.9844, 1.2931, -0.3321, -31.9917, -8.0786),
    "dbcnn": (38.5349, 0.0851, 0.5159, 3.4921, 0.8607),
    "arniqa": (2.2932, -13.4107, 0.2884, 7.5144, -0.6274),
    "nima": (1.0129, 5.3579, 4.6475, 0.3207, 1.0601),
    "brisque": (-2.2106, 0.0684, 54.3418, 0.0050, 2.2728),
    "niqe": (-1.4174, 0.8785, 6.9416, -0.0059, 2.7374),
    "maniqa": (0.6818, 27.4817, 0.2621, 2.5196, 1.5758),
    "liqe": (0.1494, 7.1114, 3.2801, 0.6936, 0.8655),
}

# Table 5 sets that are not monotone over the card's raw range, with the largest step in the
# wrong direction (on the 1-5 scale). They are kept as printed and flagged in the cards' notes.
KNOWN_NON_MONOTONE = {
    "ckdn": 0.67,
    "wadiqam_nr": 0.35,
    "brisque": 0.16,
    "tres": 0.055,
    "arniqa": 0.005,
}

# Cards that must build and run here with no download (niqe/brisque after the prefill scripts).
WEIGHT_FREE = [
    *("psnr", "psnry", "ssim", "ssimc", "ms_ssim", "cw_ssim", "fsim"),
    *("vif", "gmsd", "vsi", "nlpd", "mad", "piqe"),
]
PREFILLED = {"niqe": "niqe_modelparameters.mat", "brisque": "brisque_svm_weights.pth"}


@pytest.fixture(scope="module")
def cards() -> CardSet:
    """The pyiqa cards (the built-in detectors' cards are tested in test_detectors.py)."""
    every = load_cards(CARDS_DIR)
    return CardSet((c for c in every if c.backend == "pyiqa"), every.hashes)


def _hand_5pl(x: float, b1: float, b2: float, b3: float, b4: float, b5: float) -> float:
    q = b1 * (0.5 - 1.0 / (1.0 + math.exp(b2 * (x - b3)))) + b4 * x + b5
    return min(5.0, max(1.0, q))


def _wrong_way_step(card: ToolCard, n: int = 4001) -> float:
    """Largest drop in quality as raw moves towards 'better' across raw_range."""
    lo, hi = card.raw_range
    xs = np.linspace(lo, hi, n)
    if card.lower_better:
        xs = xs[::-1]
    q = np.array([card.normalize(float(x)) for x in xs])
    return float(np.max(np.maximum.accumulate(q) - q))


# -- loading and registry -----------------------------------------------------------------
def test_every_card_loads_with_unique_lowercase_names() -> None:
    every = load_cards(CARDS_DIR)
    stems = [p.stem for p in sorted(CARDS_DIR.glob("*.yaml"))]
    assert len(stems) == len(set(stems)) == len(every)
    assert sorted(every.names()) == stems
    assert all(n == n.lower() for n in stems)


def test_the_28_seed_tools_are_there_and_flagged(cards: CardSet) -> None:
    seed = {c.name for c in cards if c.in_seed}
    assert seed == set(SEED_FR.split()) | set(SEED_NR.split())
    assert {cards.get(n).mode for n in SEED_FR.split()} == {"FR"}
    assert {cards.get(n).mode for n in SEED_NR.split()} == {"NR"}
    assert {"cw_ssim", "nlpd", "mad", "piqe"} <= set(cards.names()) - seed


def test_cards_agree_with_pyiqa_default_configs(cards: CardSet) -> None:
    from pyiqa.default_model_configs import DEFAULT_CONFIGS

    for card in cards:
        assert card.backend == "pyiqa"
        assert card.metric in DEFAULT_CONFIGS, f"{card.name}: no pyiqa metric {card.metric!r}"
        cfg = DEFAULT_CONFIGS[card.metric]
        assert card.mode == cfg["metric_mode"], card.name
        # pyiqa's default when the key is absent is "higher is better"
        assert card.lower_better == bool(cfg.get("lower_better", False)), card.name


def test_raw_range_is_pyiqas_score_range_where_stated(cards: CardSet) -> None:
    from pyiqa.default_model_configs import DEFAULT_CONFIGS

    for card in cards:
        # free text such as "~0, ~40" or "0, ~" (no upper bound stated: mad)
        ends = [
            e.strip().lstrip("~") for e in DEFAULT_CONFIGS[card.metric]["score_range"].split(",")
        ]
        for stated, ours in zip(ends, card.raw_range, strict=True):
            if stated:
                assert float(stated) == ours, f"{card.name}: pyiqa states {ends}"


def test_unknown_key_is_rejected_naming_file_and_field(tmp_path: Path) -> None:
    text = (CARDS_DIR / "ssim.yaml").read_text(encoding="utf-8") + "colour: red\n"
    bad = tmp_path / "ssim.yaml"
    bad.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as e:
        load_card(bad)
    assert str(bad) in str(e.value) and "colour" in str(e.value)


def test_card_name_must_match_file_name(tmp_path: Path) -> None:
    bad = tmp_path / "ssim2.yaml"
    bad.write_text((CARDS_DIR / "ssim.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(ConfigError, match="must match the file name"):
        load_card(bad)


def test_wrong_tool_name_gets_did_you_mean(cards: CardSet) -> None:
    with pytest.raises(UnknownToolError, match=r"did you mean .*\bssim\b"):
        cards.get("ssmi")
    with pytest.raises(UnknownToolError, match=r"did you mean .*topiq_fr"):
        cards.get("topiq-fr")
    assert cards.get("NIQE").name == "niqe"


# -- normalization --------------------------------------------------------------------------
def test_calibrated_cards_carry_table5_exactly(cards: CardSet) -> None:
    from_table5 = {c.name for c in cards if c.logistic and "Table 5" in c.logistic.source}
    assert from_table5 == set(TABLE5)
    # every other calibrated card says how and on what it was fitted
    for c in cards:
        if c.calibrated and c.name not in TABLE5:
            assert c.logistic is not None and "calibrate_cards.py" in c.logistic.source, c.name
            assert not c.weights, c.name
    for name, params in TABLE5.items():
        logistic = cards.get(name).logistic
        assert logistic is not None
        assert logistic.params == pytest.approx(params, abs=0)
        assert logistic.source == "AgenticIQA Table 5 (fitted on KADID-10k)"


@pytest.mark.parametrize(
    ("name", "raw", "expected"),
    [
        ("ssim", 0.8, 2.77),
        ("ssim", 1.0, 4.60),
        ("niqe", 3.0, 3.39),
        ("niqe", 10.0, 2.06),
        ("lpips", 0.1, 3.45),
        ("vif", 0.5, 2.81),
        ("dists", 0.5, 1.0),  # below 1 before clipping
    ],
)
def test_table5_normalization_matches_hand_computation(
    cards: CardSet, name: str, raw: float, expected: float
) -> None:
    by_hand = _hand_5pl(raw, *TABLE5[name])
    assert by_hand == pytest.approx(expected, abs=0.005)
    card = cards.get(name)
    if card.identical is not None:  # FR: Table 5's curve stretched so identical pairs are 5
        top = _hand_5pl(card.identical, *TABLE5[name])
        by_hand = min(5.0, max(1.0, 1.0 + (by_hand - 1.0) * 4.0 / (top - 1.0)))
        assert card.normalize(card.identical) == pytest.approx(5.0)
    assert card.normalize(raw) == pytest.approx(by_hand, abs=1e-9)


def test_every_calibrated_card_is_monotone_in_its_direction(cards: CardSet) -> None:
    for card in cards:
        lo, hi = card.raw_range
        best, worst = (lo, hi) if card.lower_better else (hi, lo)
        assert card.normalize(best) > card.normalize(worst), card.name
        for q in (card.normalize(lo), card.normalize(hi), card.normalize((lo + hi) / 2)):
            assert 1.0 <= q <= 5.0
        step = _wrong_way_step(card)
        if card.name in KNOWN_NON_MONOTONE:
            # stays listed only while it is true, and the card must say so
            assert step == pytest.approx(KNOWN_NON_MONOTONE[card.name], rel=0.1), card.name
            assert "non-monotone" in card.notes.lower(), card.name
        else:
            assert step < 1e-9, f"{card.name}: quality drops by {step:.3g} as raw improves"


def test_uncalibrated_cards_map_their_raw_range_linearly(cards: CardSet) -> None:
    for card in cards:
        if card.calibrated:
            continue
        lo, hi = card.raw_range
        best, worst = (lo, hi) if card.lower_better else (hi, lo)
        assert card.normalize(best) == 5.0 and card.normalize(worst) == 1.0
        assert card.normalize((lo + hi) / 2) == pytest.approx(3.0)


# -- real runs of the weight-free metrics -----------------------------------------------------
def _scene(n: int, seed: int = 0) -> np.ndarray:
    """A photo-like RGB image: 1/f texture plus a disc and a rectangle, in [0, 1]."""
    rng = np.random.default_rng(seed)
    f = np.hypot(*np.meshgrid(np.fft.fftfreq(n), np.fft.fftfreq(n), indexing="ij"))
    amp = 1.0 / np.maximum(f, 1.0 / n)

    def texture() -> np.ndarray:
        return np.real(np.fft.ifft2(amp * np.exp(2j * np.pi * rng.random((n, n)))))

    yy, xx = np.mgrid[0:n, 0:n] / n
    disc = ((xx - 0.35) ** 2 + (yy - 0.4) ** 2 < 0.05) * 0.35
    box = ((np.abs(xx - 0.7) < 0.15) & (np.abs(yy - 0.65) < 0.2)) * 0.3
    base = texture()
    chans = []
    for c in range(3):
        ch = 0.6 * base + 0.4 * texture()
        ch = (ch - ch.mean()) / ch.std() * 0.12 + 0.5 + disc - box
        chans.append(ch + 0.05 * np.sin(2 * np.pi * (c + 1) * xx))
    return np.clip(np.stack(chans, axis=2), 0, 1)


def _blur(img: np.ndarray, sigma: float) -> np.ndarray:
    return np.stack([gaussian_filter(img[..., c], sigma) for c in range(3)], axis=2)


@pytest.fixture(scope="module")
def scenes(tmp_path_factory: pytest.TempPathFactory) -> dict[int, dict[str, LoadedImage]]:
    """Per size: the clean scene, mild/strong blur and mild/strong noise, decoded from PNG."""
    out: dict[int, dict[str, LoadedImage]] = {}
    rng = np.random.default_rng(1)
    for n in (96, 192):  # pyiqa's ms_ssim needs sides >= 176
        folder = tmp_path_factory.mktemp(f"scene{n}")
        img = _scene(n)
        variants = {
            "clean": img,
            "blur_mild": _blur(img, 1.0),
            "blur_strong": _blur(img, 2.5),
            "noise_mild": img + rng.normal(0, 0.03, img.shape),
            "noise_strong": img + rng.normal(0, 0.12, img.shape),
        }
        out[n] = {k: load_image(save_rgb(folder / f"{k}.png", v)) for k, v in variants.items()}
    return out


@pytest.fixture(scope="module")
def runner(cards: CardSet) -> ToolRunner:
    return ToolRunner(cards, device="cpu")


def test_weight_free_list_is_every_card_without_weights(cards: CardSet) -> None:
    assert {c.name for c in cards if not c.weights} == set(WEIGHT_FREE)
    assert all(cards.get(n).weights for n in PREFILLED)


@pytest.mark.parametrize("name", WEIGHT_FREE + sorted(PREFILLED))
def test_stronger_distortion_scores_lower(
    name: str, cards: CardSet, runner: ToolRunner, scenes: dict[int, dict[str, LoadedImage]]
) -> None:
    if name in PREFILLED:
        from pyiqa.utils.download_util import DEFAULT_CACHE_DIR

        if not (Path(DEFAULT_CACHE_DIR) / PREFILLED[name]).exists():
            pytest.skip(
                f"{PREFILLED[name]} not in {DEFAULT_CACHE_DIR}: run scripts/prefill_{name}.py"
            )
    card = cards.get(name)
    imgs = scenes[192 if name == "ms_ssim" else 96]
    ref = imgs["clean"] if card.mode == "FR" else None
    for family in ("blur", "noise"):
        mild = runner.run(card, imgs[f"{family}_mild"], ref)
        strong = runner.run(card, imgs[f"{family}_strong"], ref)
        assert mild.error is None and strong.error is None, (mild.error, strong.error)
        assert mild.norm is not None and strong.norm is not None
        assert strong.norm < mild.norm, f"{name} {family}: raw {mild.raw:.4g} vs {strong.raw:.4g}"
