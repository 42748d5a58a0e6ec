"""Settings precedence: flags > environment > project config file > user config file >
defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentiqa_cli.config import DEFAULT_QUERY, load_settings, user_config_path
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


def _user_file(home: Path, text: str) -> Path:
    f = home / "agentiqa" / "config.yaml"
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(text)
    return f


def test_user_config_path_follows_xdg() -> None:
    assert user_config_path({"XDG_CONFIG_HOME": "/x", "HOME": "/h"}) == Path(
        "/x/agentiqa/config.yaml"
    )
    assert user_config_path({"HOME": "/h"}) == Path("/h/.config/agentiqa/config.yaml")
    # the XDG Base Directory Specification: a relative path is invalid and ignored
    assert user_config_path({"XDG_CONFIG_HOME": "rel", "HOME": "/h"}) == Path(
        "/h/.config/agentiqa/config.yaml"
    )
    assert user_config_path({"XDG_CONFIG_HOME": ""}) is None
    assert user_config_path({}) is None


def test_precedence_at_every_layer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """defaults < user file < project file < environment < flags, one setting per step."""
    monkeypatch.chdir(tmp_path)
    xdg = tmp_path / "xdg"
    _user_file(xdg, "concurrency: 2\ntimeout: 7\ndevice: cpu\nretries: 5\n")
    project = tmp_path / "agentiqa.yaml"
    project.write_text("timeout: 8\ndevice: cuda\nretries: 6\n")
    env = {"XDG_CONFIG_HOME": str(xdg), "AGENTIQA_DEVICE": "mps", "AGENTIQA_RETRIES": "7"}
    s = load_settings({"retries": 8, "zoom_turns": None}, None, environ=env)
    assert s.query == DEFAULT_QUERY and s.zoom_turns == 6  # defaults (a flag left unset)
    assert s.concurrency == 2  # only the user file sets it
    assert s.timeout == 8.0  # the project file (./agentiqa.yaml) beats the user file
    assert s.device == "mps"  # the environment beats both files
    assert s.retries == 8  # the flag beats everything
    # without the project file the user file's value shows through
    project.unlink()
    assert load_settings({}, None, environ={"XDG_CONFIG_HOME": str(xdg)}).timeout == 7.0


def test_user_config_from_home_when_xdg_unset(tmp_path: Path) -> None:
    _user_file(tmp_path / "home" / ".config", "concurrency: 3\n")
    assert load_settings({}, None, environ={"HOME": str(tmp_path / "home")}).concurrency == 3


def test_user_file_layers_under_an_explicit_config(tmp_path: Path) -> None:
    """--config (and AGENTIQA_CONFIG) replace ./agentiqa.yaml, not the user file."""
    xdg = tmp_path / "xdg"
    _user_file(xdg, "concurrency: 3\nmodel: user-model\n")
    cfg = tmp_path / "ci.yaml"
    cfg.write_text("model: ci-model\n")
    for env, path in (({}, cfg), ({"AGENTIQA_CONFIG": str(cfg)}, None)):
        s = load_settings({}, path, environ={"XDG_CONFIG_HOME": str(xdg), **env})
        assert (s.concurrency, s.model) == (3, "ci-model")


def test_absent_user_config_is_fine(tmp_path: Path) -> None:
    s = load_settings({}, None, environ={"XDG_CONFIG_HOME": str(tmp_path / "nowhere")})
    assert s.concurrency == 4


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("concurrency: [1, 2\n", "invalid YAML"),
        ("- a\n- b\n", "mapping"),
        ("bogus_key: 1\n", "bogus_key"),
        ("concurrency: 0\n", "concurrency"),
        ("api_key: sk-secret\n", "AGENTIQA_API_KEY"),
    ],
)
def test_bad_user_config_names_the_file(tmp_path: Path, text: str, match: str) -> None:
    f = _user_file(tmp_path, text)
    with pytest.raises(ConfigError, match=match) as e:
        load_settings({}, None, environ={"XDG_CONFIG_HOME": str(tmp_path)})
    assert f"user config file {f}" in str(e.value)


def test_a_bad_value_names_the_layer_that_gave_it(tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    _user_file(xdg, "concurrency: 0\n")
    cfg = tmp_path / "p.yaml"
    cfg.write_text("concurrency: 2\ntimeout: -1\n")
    env = {"XDG_CONFIG_HOME": str(xdg)}
    with pytest.raises(ConfigError, match=f"timeout.*from config file {cfg}"):
        load_settings({}, cfg, environ=env)
    cfg.write_text("concurrency: 2\n")  # the project file's good value hides the user's
    assert load_settings({}, cfg, environ=env).concurrency == 2
    with pytest.raises(ConfigError, match="from environment AGENTIQA_RETRIES"):
        load_settings({}, cfg, environ={**env, "AGENTIQA_RETRIES": "99"})
    with pytest.raises(ConfigError, match="from command line"):
        load_settings({"retries": 99}, cfg, environ=env)


def test_a_folder_at_the_user_config_path_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "agentiqa" / "config.yaml").mkdir(parents=True)
    with pytest.raises(ConfigError, match="user config file"):
        load_settings({}, None, environ={"XDG_CONFIG_HOME": str(tmp_path)})


def test_cli_exits_2_naming_a_bad_user_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.test_cli_score import invoke

    f = _user_file(tmp_path / "xdg", "concurrency: many\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    code, _ = invoke("tools", "list", "--json")
    assert code == 2
    err = " ".join(capsys.readouterr().err.split())  # rich may wrap the line
    assert str(f) in err and "concurrency" in err


def test_user_file_paths_are_read_from_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relative path in the user file means a file beside it, from any working folder."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    xdg = tmp_path / "xdg"
    _user_file(xdg, f"calibration: cal.yaml\nexperience: {tmp_path / 'pool.db'}\n")
    s = load_settings({}, None, environ={"XDG_CONFIG_HOME": str(xdg)})
    assert s.calibration == xdg / "agentiqa" / "cal.yaml"
    assert s.experience == tmp_path / "pool.db"  # an absolute path stays
    cfg = work / "p.yaml"  # the project file's paths are as written (the working folder's)
    cfg.write_text("calibration: mine.yaml\n")
    assert load_settings({}, cfg, environ={"XDG_CONFIG_HOME": str(xdg)}).calibration == Path(
        "mine.yaml"
    )
