.DEFAULT_GOAL := help
.PHONY: help setup run test lint lifecycle truth bench bench-compare bench-million load faults restarts cluster-sim fuzz injection clean

help: ## Show the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-13s %s\n", $$1, $$2}'

setup: ## Install Python (.venv) and npm (node_modules) packages
	bin/setup

run: ## Set up and run the product (SurrealDB, worker, web) with a demo tenant
	bin/run

test: ## Set up and run the whole test suite (lint, contracts, types, pytest)
	bin/test

lint: setup ## ruff (lint and format), eslint, import-linter and mypy only
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	npx --no-install eslint frontend/static/js surreal
	.venv/bin/lint-imports
	.venv/bin/mypy

lifecycle: setup ## Lifecycle properties, long run: 200 random upload/re-upload/delete/fact/merge sequences, their export round trip, and the search index's writes/passes/deaths (LIFECYCLE_EXAMPLES=n)
	KG_LIFECYCLE_EXAMPLES=$(or $(LIFECYCLE_EXAMPLES),200) KG_TAIL_EXAMPLES=$(or $(LIFECYCLE_EXAMPLES),200) \
	  .venv/bin/python -m pytest \
	  tests/graph/ingest/test_lifecycle_property.py tests/graph/export/test_export_property.py \
	  tests/graph/index/test_tail.py -q -p no:cacheprovider --timeout 0

truth: setup ## Graph truth: the graph scored against the gold set and Re-DocRED (TRUTH_ARGS="--half dev --show")
	.venv/bin/python bench/truth.py $(TRUTH_ARGS)

bench: setup ## Run the benchmarks in bench/ and print their figures (not the load test)
	@for script in bench/*.py; do \
	  case "$$script" in bench/load.py|bench/locustfile.py|bench/faults.py|bench/restarts.py|bench/cluster_sim.py|bench/conftest.py|bench/scratch.py|bench/truth_gold.py|bench/truth_redocred.py|bench/million.py) continue;; esac; \
	  echo "== $$script"; .venv/bin/python $$script || exit 1; done

bench-compare: setup ## kgapp vs Graphiti vs LightRAG, same corpus and model: writes docs/benchmarks.md
	bench/compare/setup
	var/compare/venv/bin/python -m bench.compare $(COMPARE_ARGS)

bench-million: setup ## 1,000,000 generated facts loaded through the tenant import into RocksDB, then search (MILLION_FACTS=n)
	.venv/bin/python bench/million.py --facts $(or $(MILLION_FACTS),1000000) --runs 30

load: setup ## Load test: paced mixed search/query/graph steps (LOAD_ARGS="--rates 5 10")
	.venv/bin/python bench/load.py $(LOAD_ARGS)

faults: setup ## Faults, long run: the worker SIGKILLed at 20 points of a 100-episode ingest
	.venv/bin/python -m pytest bench/faults.py -s -q -p no:cacheprovider

restarts: setup ## Restarts, long run: SurrealDB and Redis restarted 5 times each mid-ingest
	.venv/bin/python -m pytest bench/restarts.py -s -q -p no:cacheprovider

cluster-sim: setup ## Two machines' processes (2 web, 2 workers, 2 indexers) on one SurrealDB; each kind SIGKILLed twice mid-ingest
	.venv/bin/python -m pytest bench/cluster_sim.py -s -q -p no:cacheprovider --timeout 900

fuzz: setup ## API fuzz, long run: 10,000 schemathesis cases by 4 loops at once, authenticated (FUZZ_CASES=n FUZZ_WORKERS=n)
	KG_VAR_DIR=var/fuzz KG_FUZZ_CASES=$(or $(FUZZ_CASES),10000) KG_FUZZ_WORKERS=$(or $(FUZZ_WORKERS),4) .venv/bin/python -m pytest \
	  tests/security/test_api_fuzz.py -k fuzzing -q -p no:cacheprovider --timeout 0

injection: setup ## SurrealQL injection, long run: every payload in every text field and id
	KG_VAR_DIR=var/injection KG_INJECTION_FULL=1 .venv/bin/python -m pytest \
	  tests/security/test_injection.py -q -p no:cacheprovider --timeout 0

clean: ## Remove installed packages and local data (var/)
	rm -rf .venv node_modules var
