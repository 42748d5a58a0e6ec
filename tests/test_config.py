"""Settings precedence: flags > environment > config file > defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentiqa_cli.config import DEFAULT_QUERY, load_settings
from agentiqa_cli.errors import ConfigError


def test_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    s = load_settings({}, None, environ={})
    assert s.vlm == "rules" and s.query == DEFAULT_QUERY and s.concurrency == 4


def test_precedence(tmp_path: Path) -> None:
    cfg = tmp_path / "agentiqa.yaml"
    cfg.write_text("concurrency: 2\nmodel: from-file\ndevice: cpu\nquery: file query\n")
    env = {
        "AGENTIQA_MODEL": "from-env",
        "AGENTIQA_VLM_URL": "http://127.0.0.1:9/v1",
        "AGENTIQA_QUERY": "env query",
    }
    s = load_settings({"query": "flag query", "device": None}, cfg, environ=env)
    assert s.concurrency == 2  # file
    assert s.model == "from-env"  # env beats file
    assert s.vlm == "http://127.0.0.1:9/v1"  # AGENTIQA_VLM_URL alias
    assert s.query == "flag query"  # flag beats env
    assert s.device == "cpu"  # a flag left unset does not override


def test_api_key_redacted_and_not_in_files(tmp_path: Path) -> None:
    s = load_settings({}, None, environ={"AGENTIQA_API_KEY": "sk-secret"})
    assert s.api_key is not None and s.api_key.get_secret_value() == "sk-secret"
    assert "sk-secret" not in str(s.redacted())
    cfg = tmp_path / "c.yaml"
    cfg.write_text("api_key: sk-secret\n")
    with pytest.raises(ConfigError, match="AGENTIQA_API_KEY"):
        load_settings({}, cfg, environ={})


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("concurrency: [1, 2\n", "invalid YAML"),
        ("- a\n- b\n", "mapping"),
        ("bogus_key: 1\n", "bogus_key"),
    ],
)
def test_bad_config_file(tmp_path: Path, text: str, match: str) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(text)
    with pytest.raises(ConfigError, match=match):
        load_settings({}, cfg, environ={})


def test_yaml_cannot_construct_objects(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("query: !!python/object/apply:os.system ['echo pwned']\n")
    with pytest.raises(ConfigError, match="invalid YAML"):
        load_settings({}, cfg, environ={})
