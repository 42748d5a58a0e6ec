"""The experience pool: file safety, evolution, measurement, the advisor in the agent, CLI."""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from agentiqa_cli import categories
from agentiqa_cli.bench.synth import bundled_photos
from agentiqa_cli.config import Settings
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.experience.advisor import PoolAdvisor
from agentiqa_cli.experience.measure import build_records, metrics
from agentiqa_cli.experience.pool import (
    Meta,
    Record,
    add_records,
    check_cards,
    read_pool,
    set_key,
    write_pool,
)
from agentiqa_cli.experience.vote import vote
from agentiqa_cli.records import ToolScore
from agentiqa_cli.resources import default_cards_dir
from agentiqa_cli.tools.builtin import DETECTORS
from agentiqa_cli.tools.cards import load_cards
from agentiqa_cli.tools.runner import ToolRunner
from agentiqa_cli.vlm.fake import ScriptedVLM
from tests.conftest import natural_like, save_rgb
from tests.test_agent import PLAN_GLOBAL, pairs, run_agent, summary_reply
from tests.test_cli_score import invoke

CARDS = load_cards(default_cards_dir())
TOOLS = ["noise", "sharpness", "contrast"]
EXAMINE_NOISE = {"distortion_analysis": {"Global": [
    {"type": "Noise", "severity": "moderate", "explanation": "grain"}]}}  # fmt: skip


def noise_script() -> dict[str, object]:
    """A scripted VLM's replies: a global plan, noise found, contrast selected for it."""
    return {"planner": PLAN_GLOBAL, "examine": EXAMINE_NOISE,
            "select": {"selected_tools": {"Global": {"Noise": "contrast"}}},
            "summarize": lambda r: summary_reply()}  # fmt: skip


def meta() -> Meta:
    names = [*TOOLS, *DETECTORS]
    return Meta(
        cards={n: CARDS.hashes[n] for n in names},
        detectors=list(DETECTORS),
        standardize={d: (0.0, 1.0) for d in DETECTORS},
        source="test",
    )


def records(n: int, category: str = "Noise", seed: int = 0, mode: str = "NR") -> list[Record]:
    """``n`` votes where noise usually beats sharpness, which beats contrast."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        m = [{"a": rng.normal(2.0, 1.0)}, {"a": rng.normal(1.0, 1.0)}, {"a": rng.normal(0, 1.0)}]
        c = vote(m, {"a": "higher"})
        prof = [float(i % 2)] + [0.0] * (len(DETECTORS) - 1)
        out.append(
            Record(
                mode=mode,
                degradations=category,
                source=f"img{i}",
                kind="noise",
                tools=TOOLS,  # type: ignore[arg-type]
                wins=c.wins.tolist(),
                ties=c.ties.tolist(),
                profile=prof,
                best=TOOLS[0],
            )
        )
    return out


def test_roundtrip_and_significance(tmp_path: Path) -> None:
    pool = write_pool(tmp_path / "p.db", meta(), records(200) + records(3, "Blurs"))
    noise, blurs = pool.entry("NR", "Noise"), pool.entry("NR", "Blurs")
    assert noise is not None and blurs is not None
    assert noise.records == 200 and noise.significant and noise.best == "noise"
    assert noise.d is not None and noise.se is not None and noise.d - 1.96 * noise.se >= 0
    assert blurs.records == 3 and not blurs.significant
    assert sum(r.degradations == "Noise" for r in pool.records) == 200
    # the insight level: which tool wins, by how much, on how many records (Eq. 8 → text)
    text = noise.insight()
    assert text.startswith("NR Noise: over 200 records noise measured it best")
    assert "significant at the one-sided Wald test" in text and "not significant" not in text
    assert "P(noise beats sharpness) 0.6" in text or "P(noise beats sharpness) 0.7" in text
    assert text.endswith("Order: noise > sharpness > contrast.")
    assert "not significant" in blurs.insight()
    again = read_pool(tmp_path / "p.db")
    assert again.entries == pool.entries and again.meta == pool.meta


def _set_meta(path: Path, name: str, value: object) -> None:
    con = sqlite3.connect(path)
    with con:
        con.execute("UPDATE meta SET value = ? WHERE name = ?", (json.dumps(value), name))
    con.close()


def test_bad_pools_are_refused_whole(tmp_path: Path) -> None:
    good = tmp_path / "p.db"
    write_pool(good, meta(), records(30))
    with pytest.raises(ConfigError, match="no such file"):
        read_pool(tmp_path / "missing.db")
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all" * 100)
    with pytest.raises(ConfigError, match="not a readable pool"):
        read_pool(junk)
    truncated = tmp_path / "cut.db"
    truncated.write_bytes(good.read_bytes()[:3000])
    with pytest.raises(ConfigError, match="experience pool"):
        read_pool(truncated)
    other = tmp_path / "other.db"
    sqlite3.connect(other).executescript("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
    with pytest.raises(ConfigError, match="not an agentiqa experience pool"):
        read_pool(other)
    old = tmp_path / "old.db"
    old.write_bytes(good.read_bytes())
    _set_meta(old, "version", 99)
    with pytest.raises(ConfigError, match="version 99"):
        read_pool(old)
    bad = tmp_path / "bad.db"
    bad.write_bytes(good.read_bytes())
    con = sqlite3.connect(bad)
    with con:
        con.execute("UPDATE entries SET theta = '[1, 2]'")  # wrong shape
    con.close()
    with pytest.raises(ConfigError, match="invalid content"):
        read_pool(bad)
    pool = read_pool(good)
    check_cards(pool, CARDS.hashes, None)
    with pytest.raises(ConfigError, match=r"other tool cards .*noise"):
        check_cards(pool, {**CARDS.hashes, "noise": "0" * 16}, None)
    with pytest.raises(ConfigError, match="calibration"):
        check_cards(pool, CARDS.hashes, "abc")


def test_evolution_refits_every_25_records(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    write_pool(path, meta(), records(3))
    assert add_records(path, records(24, seed=1)) == []  # 24 new: no refit yet
    assert read_pool(path).entries["NR|Noise"].records == 3
    assert add_records(path, records(1, seed=2)) == [("NR", "Noise")]
    entry = read_pool(path).entries["NR|Noise"]
    assert entry.records == 28 and entry.significant
    assert len(read_pool(path).records) == 28


def _add_many(path: str, seed: int) -> None:
    for k in range(6):
        add_records(Path(path), records(5, seed=seed * 100 + k))


def test_concurrent_writers_never_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    write_pool(path, meta(), records(3))
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_add_many, args=(str(path), s)) for s in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert all(p.exitcode == 0 for p in procs)
    pool = read_pool(path)
    assert len(pool.records) == 3 + 4 * 6 * 5
    entry = pool.entries["NR|Noise"]
    # refits happened at 25-record steps; whatever is pending is below one batch
    assert 3 + 4 * 6 * 5 - entry.records < 25


def test_metrics_directions() -> None:
    good = metrics([5.0, 4.5, 4.0, 3.0, 2.0, 1.0], None)
    flat = metrics([5.0] * 6, None)
    assert good["monotonicity"] == pytest.approx(1.0) and flat["monotonicity"] == 0.0
    assert good["margin"] == 2.0 and good["shortfall"] == 0.0
    assert metrics([4.0, 3, 2, 1, 1, 1], None)["shortfall"] == pytest.approx(0.6)
    assert metrics([None, 1, 1, 1, 1, 1], None)["margin"] is None


def test_measured_records_pick_the_matching_detector() -> None:
    """Real measurement (small): the noise detector wins the noise record, sharpness blur."""
    runner = ToolRunner(CARDS, "cpu")
    tools = CARDS.resolve(["noise", "sharpness", "contrast"])
    names = ["astronaut", "chelsea"]
    images = list(zip(names, bundled_photos(names), strict=True))
    m, recs = build_records(images, runner, {"NR": tools}, cards_hashes=CARDS.hashes,
                            calibration=None, categories=["Noise", "Blurs"], size=192)  # fmt: skip
    by_kind = {(r.source, r.kind): r for r in recs}
    for name in names:
        assert by_kind[(name, "noise")].best == "noise"
        assert by_kind[(name, "blur")].best == "sharpness"
    assert set(m.cards) >= {"noise", "sharpness", "contrast", *DETECTORS}


def _profile(*values: float) -> list[float]:
    return [*values] + [0.0] * (len(DETECTORS) - len(values))


def test_fine_level_retrieves_learnt_pattern_profiles(tmp_path: Path) -> None:
    tie = {"wins": np.zeros((3, 3)).tolist(), "ties": (1 - np.eye(3)).tolist()}
    rng = np.random.default_rng(3)
    # ties only: the coarse level cannot tell the tools apart and abstains; two patterns
    # (high first reading: noise wins; high second reading: sharpness wins) and one outlier
    recs = [r.model_copy(update={**tie, "profile": _profile(3 + rng.normal(0, 0.2), 0.0)})
            for r in records(6)]  # fmt: skip
    recs += [r.model_copy(update={**tie, "best": "sharpness",
                                  "profile": _profile(0.0, 3 + rng.normal(0, 0.2))})
             for r in records(5, seed=5)]  # fmt: skip
    recs += [r.model_copy(update={**tie, "profile": _profile(-9.0, -9.0)}) for r in records(1)]
    pool = write_pool(tmp_path / "p.db", meta(), recs)
    entry = pool.entries["NR|Noise"]
    assert not entry.significant
    got = {(p.best, p.members) for p in entry.profiles}
    assert got == {("noise", 6), ("sharpness", 5)}  # the outlier joins no profile (MAD rule)
    advisor = PoolAdvisor(pool, TOOLS)

    def at(*values: float) -> list[ToolScore]:
        prof = _profile(*values)
        return [ToolScore(tool=d, raw=v) for d, v in zip(DETECTORS, prof, strict=True)]

    advice = advisor.advise(["Noise"], False, at(0.0, 3.0))
    assert advice["Noise"].level == "fine" and advice["Noise"].tool == "sharpness"
    assert advisor.advise(["Noise"], False, at(3.0, 0.0))["Noise"].tool == "noise"
    assert advisor.advise(["Noise"], False, at(-9.0, -9.0)) == {}  # held by no profile
    assert advisor.advise(["Blurs"], False, at(0.0, 3.0)) == {}  # no entry for Blurs
    assert PoolAdvisor(pool, ["noise", "contrast"]).advise(["Noise"], False, at(0.0, 3.0)) == {}


def test_profiles_mad_rule_and_conflicts() -> None:
    from agentiqa_cli.experience import profiles

    rng = np.random.default_rng(0)
    near = [profiles.Candidate(profile=[float(v), 0.0], best="a") for v in rng.normal(0, 0.1, 9)]
    far = profiles.Candidate(profile=[5.0, 0.0], best="a")
    (only,) = profiles.learn([*near, far], ["x", "y"])
    assert only.members == 9 and only.scale[0] == profiles.MIN_SCALE  # 5.0: far outside
    assert profiles.match([0.05, 0.0], [only]) == only
    assert profiles.match([5.0, 0.0], [only]) is None
    # two profiles that both hold the image but name different tools: no advice
    other = only.model_copy(update={"best": "b"})
    assert profiles.match([0.05, 0.0], [only, other]) is None
    assert profiles.learn(near[:2], ["x", "y"]) == []  # fewer than three records


def test_set_keys_and_coupled_records(tmp_path: Path) -> None:
    assert set_key(["Noise", "Blurs"]) == "Blurs+Noise" == set_key(["Blurs", "Noise", "Noise"])
    with pytest.raises(ValueError):
        set_key(["Noise", "Haze"])
    both = [r.model_copy(update={"degradations": "Blurs+Noise", "kind": "blur+noise"})
            for r in records(200)]  # fmt: skip
    single = [r.model_copy(update={"degradations": "Blurs"}) for r in records(3, seed=2)]
    pool = write_pool(tmp_path / "p.db", meta(), both + single)
    assert set(pool.entries) == {"NR|Blurs+Noise", "NR|Blurs"}
    advisor = PoolAdvisor(pool, TOOLS)
    # the whole set's key is significant: one tool for both categories, no model call
    advice = advisor.advise(["Noise", "Blurs"], False, [])
    assert {c: a.tool for c, a in advice.items()} == {"Noise": "noise", "Blurs": "noise"}
    assert advice["Blurs"].detail["key"] == "Blurs+Noise"
    # one category of the set alone: its own key (not significant with 3 records)
    assert advisor.advise(["Blurs"], False, []) == {}
    (insight,) = advisor.insights(["Blurs"], False)
    assert insight.best == pool.entries["NR|Blurs"].best and "over 3 records" in insight.text
    with pytest.raises(ConfigError, match="invalid content"):
        bad = tmp_path / "bad.db"
        bad.write_bytes((tmp_path / "p.db").read_bytes())
        con = sqlite3.connect(bad)
        with con:
            con.execute("UPDATE records SET degradations = 'Noise+Blurs'")  # not canonical
        con.close()
        read_pool(bad)


DETECTORS_LIST = list(DETECTORS)


def test_agent_skips_select_where_the_pool_is_significant(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    write_pool(path, meta(), records(200))
    script = noise_script()
    base = Settings(tools=["contrast"], concurrency=2)
    without = ScriptedVLM(script)
    res0 = run_agent(base, without, pairs(tmp_path, 3, base))
    assert len(without.calls("select")) == 1
    # the model named a built-in detector: the category's reading that measured it is used
    assert all({t.distortion for t in r.tools} == {"Noise", None} for r in res0)

    with_pool = base.model_copy(update={"experience": path})
    vlm = ScriptedVLM(script)
    trace = tmp_path / "t.jsonl"
    res = run_agent(with_pool, vlm, pairs(tmp_path, 3, with_pool), trace=trace)
    assert len(vlm.calls("select")) == 0
    # the pool named the tool of every distortion found: its tool alone, no default set; it
    # named a built-in detector, so the Noise reading that measured the finding is used
    assert all("contrast" in {t.tool for t in r.tools} for r in res0)
    for r in res:
        (only,) = r.tools
        assert only.distortion == "Noise" == categories.category_of_detector(only.tool)
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    sel = [e for e in events if e["step"] == "select"]
    assert len(sel) == 3 and all("experience" in (e["note"] or "") for e in sel)
    assert all(e["parsed"]["Noise"]["level"] == "coarse" and e["parsed"]["Noise"]["se"] > 0
               for e in sel)  # fmt: skip


def test_evolve_adds_records_from_assessed_images(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    write_pool(path, meta(), records(3))
    pool = read_pool(path)
    runner = ToolRunner(CARDS, "cpu")
    from agentiqa_cli.imaging.load import load_image

    img = load_image(save_rgb(tmp_path / "a.png", natural_like(96, 128)))
    advisor = PoolAdvisor(pool, TOOLS, CARDS, runner, evolve=True, batch=1)
    learnt = advisor.learn(img, ["Noise", "Contrast"], False)  # Contrast has no entry
    assert learnt == {"records": 1, "categories": ["Noise"], "refitted": ["NR/Noise"]}
    after = read_pool(path)
    assert after.entries["NR|Noise"].records == 4 and after.records[-1].kind == "noise"
    assert PoolAdvisor(pool, TOOLS).learn(img, ["Noise"], False) is None  # not evolving
    # a pool that keeps the pair as a set learns the coupled series too
    both = [r.model_copy(update={"degradations": "Blurs+Noise", "kind": "noise+blur"})
            for r in records(3)]  # fmt: skip
    write_pool(path, meta(), records(3) + both)
    advisor = PoolAdvisor(read_pool(path), TOOLS, CARDS, runner, evolve=True, batch=1)
    learnt = advisor.learn(img, ["Noise", "Blurs"], False)
    assert learnt is not None and learnt["categories"] == ["Noise", "Blurs+Noise"]
    kinds = {(r.kind, r.degradations) for r in read_pool(path).records[-2:]}
    assert kinds == {("noise", "Noise"), ("noise+blur", "Blurs+Noise")}


def test_cli_build_show_and_refusal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "clean"
    for i in range(2):
        save_rgb(data / f"c{i}.png", natural_like(96, 128, seed=i))
    (data / "broken.png").write_bytes(b"nope")
    pool = tmp_path / "pool.db"
    code, out = invoke("experience", "build", data, "--out", pool, "--tools", "noise,sharpness",
                       "--categories", "Noise,Blurs", "--size", "128", "--json", "-q")  # fmt: skip
    assert code == 3, capsys.readouterr().err  # broken.png was skipped: some inputs failed
    doc = json.loads(out)
    assert {(e["mode"], e["degradations"]) for e in doc["entries"]} == {
        ("NR", "Noise"),
        ("NR", "Blurs"),
    }
    assert "broken.png" in capsys.readouterr().err
    code, out = invoke("experience", "show", pool)
    assert code == 0 and "Noise" in out and "significant" in out
    junk = tmp_path / "junk.db"
    junk.write_text("garbage")
    img = save_rgb(tmp_path / "x.png", natural_like())
    code, _ = invoke("assess", img, "--experience", junk, "-o", tmp_path / "r.csv", "-q")
    assert code == 2 and "experience pool" in capsys.readouterr().err
    assert not (tmp_path / "r.csv").exists()  # refused before any output
    code, _ = invoke("assess", img, "--evolve", "-o", tmp_path / "r.csv", "-q")
    assert code == 2 and "--evolve needs --experience" in capsys.readouterr().err


def test_build_from_a_mos_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A CSV with image, mos, reference, distortion: one series per (reference, type)."""
    from agentiqa_cli.imaging.distort import distort, resize_long_side

    lines = ["image,mos,reference,distortion"]
    for name, x in zip(["astronaut", "chelsea"], bundled_photos(["astronaut", "chelsea"]),
                       strict=True):  # fmt: skip
        x = resize_long_side(x, 160)
        save_rgb(tmp_path / f"{name}.png", x)
        for kind, label in (("noise", "white_noise"), ("blur", "gaussian_blur")):
            for level in (1, 3, 5):
                y = distort(x, kind, level, np.random.default_rng(level))
                save_rgb(tmp_path / f"{name}_{kind}{level}.png", y)
                lines.append(f"{name}_{kind}{level}.png,{5 - 0.8 * level},{name}.png,{label}")
    lines.append("astronaut.png,4.9,,unknown_kind")  # no category: left out, with a note
    (tmp_path / "mos.csv").write_text("\n".join(lines) + "\n")
    pool = tmp_path / "pool.db"
    code, _ = invoke("experience", "build", tmp_path / "mos.csv", "--out", pool, "--tools",
                     "noise,sharpness,contrast", "--json")  # fmt: skip
    assert code == 0, capsys.readouterr().err
    assert "1 rows without a distortion type of the categories" in capsys.readouterr().err
    p = read_pool(pool)
    assert {k for k in p.entries} == {"NR|Noise", "NR|Blurs"}
    assert p.entries["NR|Noise"].records == 2
    best = {(r.source, r.kind): r.best for r in p.records}
    assert best[("astronaut", "white_noise")] == "noise"
    assert best[("astronaut", "gaussian_blur")] == "sharpness"


def test_build_names_a_category_without_a_synthetic_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Contrast loses its one synthetic kind, as a category whose kinds are not written yet
    kept = tuple(d for d in categories.DISTORTIONS if d.category != "Contrast")
    monkeypatch.setattr(categories, "DISTORTIONS", kept)
    data = tmp_path / "clean"
    save_rgb(data / "c0.png", natural_like(96, 128, seed=0))
    pool = tmp_path / "pool.db"
    code, _ = invoke("experience", "build", data, "--out", pool, "--tools", "noise,sharpness",
                     "--categories", "Contrast", "--size", "128", "-q")  # fmt: skip
    assert code == 2 and "no synthetic distortion kind for Contrast" in capsys.readouterr().err
    code, _ = invoke("experience", "build", data, "--out", pool, "--tools", "noise,sharpness",
                     "--categories", "Noise,Contrast", "--size", "128")  # fmt: skip
    assert code == 0
    assert "no synthetic distortion kind for Contrast: left out" in capsys.readouterr().err
    assert set(read_pool(pool).entries) == {"NR|Noise"}


def test_assess_with_evolve_appends_records_and_traces_them(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    write_pool(path, meta(), records(3))
    script = noise_script()
    settings = Settings(tools=["contrast"], concurrency=2, experience=path, evolve=True)
    trace = tmp_path / "t.jsonl"
    res = run_agent(settings, ScriptedVLM(script), pairs(tmp_path, 2, settings), trace=trace)
    assert all(r.status == "ok" for r in res)
    pool = read_pool(path)
    assert len(pool.records) == 3 + 2 and {r.kind for r in pool.records[3:]} == {"noise"}
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    learnt = [e["parsed"] for e in events if e["step"] == "experience"]
    assert learnt == [{"records": 1, "categories": ["Noise"], "refitted": []}] * 2


def test_select_is_shown_the_insight_and_rules_follow_it(tmp_path: Path) -> None:
    from agentiqa_cli.agent.advice import Insight
    from agentiqa_cli.agent.inputs import SelectInput
    from agentiqa_cli.agent.replies import SelectReply
    from agentiqa_cli.asking.rules import RulesVLM

    path = tmp_path / "p.db"
    # 3 records: not significant, so the model decides, shown what the pool learnt
    write_pool(path, meta(), records(3))
    script = noise_script()
    settings = Settings(tools=["contrast"], concurrency=2, experience=path)
    vlm = ScriptedVLM(script)
    run_agent(settings, vlm, pairs(tmp_path, 2, settings))
    (sel,) = vlm.calls("select")
    prompt = " ".join(m.text for m in sel.messages)
    text = read_pool(path).entries["NR|Noise"].insight()
    assert "What past measurements on the user's own images found" in prompt
    assert text in prompt and "over 3 records" in prompt
    without = ScriptedVLM(script)
    run_agent(Settings(tools=["contrast"], concurrency=2), without, pairs(tmp_path, 2, settings))
    assert "past measurements" not in " ".join(m.text for m in without.calls("select")[0].messages)
    # the rules answer the select role declares takes the insight's tool when its card
    # measures the category
    rules = RulesVLM(CARDS)

    def pick(inputs: SelectInput) -> str:
        reply = rules.answer(inputs)
        assert isinstance(reply, SelectReply)
        return reply.selected_tools["Global"]["Noise"]

    cands = [CARDS.get(n) for n in ("noise", "camera_noise", "sharpness")]
    base = SelectInput(query="q", full_reference=False, categories=["Noise"], candidates=cands)
    first = pick(base)
    other = "camera_noise" if first == "noise" else "noise"
    hint = Insight(categories=["Noise"], best=other, text="t")
    assert pick(base.model_copy(update={"insights": [hint]})) == other
    off = Insight(categories=["Noise"], best="sharpness", text="t")  # not a noise tool
    assert pick(base.model_copy(update={"insights": [off]})) == first


def test_coupled_build_measures_pairs_under_their_set_key() -> None:
    from agentiqa_cli.experience.measure import coupled, coupled_kinds
    from agentiqa_cli.imaging.distort import distort, item_rng, resize_long_side

    assert coupled_kinds(["Noise", "Blurs"]) == ["noise+blur"]
    x = resize_long_side(bundled_photos(["astronaut"])[0], 96)
    both = coupled(x, "blur+noise", 3, 0, "a")
    by_hand = distort(distort(x, "blur", 3, item_rng(0, "a", "blur")), "noise", 3,
                      item_rng(0, "a", "noise"))  # fmt: skip
    assert np.array_equal(both, by_hand)  # each part in turn, at the same level
    runner = ToolRunner(CARDS, "cpu")
    tools = CARDS.resolve(["noise", "sharpness"])
    _, recs = build_records([("astronaut", x)], runner, {"NR": tools}, cards_hashes=CARDS.hashes,
                            calibration=None, categories=["Noise", "Blurs"], size=96,
                            coupled=True)  # fmt: skip
    assert {(r.kind, r.degradations) for r in recs} == {
        ("noise", "Noise"), ("blur", "Blurs"), ("motion_blur", "Blurs"),
        ("noise+blur", "Blurs+Noise"),
    }  # fmt: skip
