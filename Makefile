# chokaq-go. `make test` is what CI runs; it needs Go, and SPIN and a C compiler for `make model`.
SHELL           := /bin/bash
GO              ?= go
STATICCHECK     := honnef.co/go/tools/cmd/staticcheck@v0.8.2
SQLSERVER_IMAGE := mcr.microsoft.com/mssql/server:2022-latest
SQLSERVER_NAME  := chokaq-sqlserver
SQLSERVER_ENV   := .sqlserver.env

FUZZTIME        ?= 30s
FUZZSMOKE       ?= 300x
# Test tooling lives in modules of its own, so the library's go.mod lists
# neither a browser driver, a Docker client nor a peer library (bench).
MODULES         := . dashboard/browsertest sqlserver/sqlservertest/container bench

.PHONY: help test fmt-check tidy-check vet staticcheck race steady-heap model fuzz fuzz-smoke api test-sqlserver sqlserver-up sqlserver-down bench run

## help: list the targets.
help:
	@awk -F': ' '/^## [a-z-]+:/ {sub(/^## /, ""); printf "  %-16s %s\n", $$1, substr($$0, length($$1) + 3)}' $(MAKEFILE_LIST)

## test: formatting, tidy modules, vet, staticcheck, every test with the race detector, the million-job heap run, the model check and a short fuzz of each target.
test: fmt-check tidy-check vet staticcheck race steady-heap model fuzz-smoke

fmt-check:
	@out="$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*'))"; \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

tidy-check:
	@set -e; for m in $(MODULES); do (cd $$m && $(GO) mod tidy -diff) || { echo "go.mod or go.sum of $$m is not tidy: run go mod tidy there"; exit 1; }; done

vet:
	@set -e; for m in $(MODULES); do echo "go vet ($$m)"; (cd $$m && $(GO) vet ./...); done

staticcheck:
	@set -e; for m in $(MODULES); do echo "staticcheck ($$m)"; (cd $$m && $(GO) run $(STATICCHECK) ./...); done

race:
	$(GO) test -race -count=1 ./...
	cd dashboard/browsertest && $(GO) test -race -count=1 ./...

## steady-heap: a million jobs through the in-memory store with retention, heap bounded (the race run does a quarter).
steady-heap:
	@set -o pipefail; $(GO) test -count=1 -run '^TestRetentionHoldsTheHeapSteady$$' -v ./retention/ | grep -E 'heap|^(ok|FAIL|---)'

## model: check the SPIN model of the job protocol (docs/model): invariants, liveness, witnesses, broken variants.
model:
	docs/model/run_checks.sh

# FUZZ_TARGETS is every fuzz function of the module as package:Function;
# TestMakeFuzzListsEveryFuzzTarget fails when one is missing or stale.
FUZZ_TARGETS    := \
	./internal/redact:FuzzDSN \
	./jobs:FuzzCanonicalJSON \
	./config:FuzzParseDuration \
	./config:FuzzLoad \
	./dashboard:FuzzFilterForm \
	./cmd/chokaq:FuzzCommandNeverPrintsPassword

## fuzz: run every fuzz target for FUZZTIME (30s) each; an input that fails is written to the package's testdata/fuzz: commit it with the fix.
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; fn=$${t##*:}; \
	  echo "fuzz $$fn ($$pkg) for $(FUZZTIME)"; \
	  $(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) $$pkg || \
	    { echo "$$fn failed: the failing input is in $$pkg/testdata/fuzz/$$fn/; commit it with the fix so make test replays it"; exit 1; }; \
	done; \
	new="$$(git status --porcelain --untracked-files=all -- '*testdata/fuzz/*' 2>/dev/null)"; \
	if [ -n "$$new" ]; then echo "fuzz inputs not committed (make test replays only committed ones):"; echo "$$new"; exit 1; fi

## fuzz-smoke: every fuzz target for a few hundred inputs (part of make test; the seed corpora also run in race).
fuzz-smoke:
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZSMOKE)

## api: rewrite testdata/api.txt, the exported API snapshot TestExportedAPI compares (commit it with the CHANGELOG line).
api:
	$(GO) test -count=1 -run '^TestExportedAPI$$' -update .

## test-sqlserver: the SQL Server tests; fails when no server is reachable.
# Uses CHOKAQ_TEST_SQLSERVER, else the DSN `make sqlserver-up` wrote, else Docker.
test-sqlserver:
	@set -e; if [ -z "$$CHOKAQ_TEST_SQLSERVER" ] && [ -f $(SQLSERVER_ENV) ]; then . ./$(SQLSERVER_ENV); fi; \
	CHOKAQ_REQUIRE_SQLSERVER=1 $(GO) test -race -count=1 -v -run 'Contract|Invariant|LockFootprint|EnqueueTx|Migrations|Leader|SQLServer' ./sqlserver/... ./schema/... ./processor/... ./cmd/... 2>&1 | \
	  grep -E '^(=== RUN|--- |PASS|FAIL|ok|panic)|skipped|required' ; exit $${PIPESTATUS[0]}

## sqlserver-up: start SQL Server 2022 in Docker on 127.0.0.1:1433 (DSN in .sqlserver.env).
# The SA password is generated and written with the DSN to the git-ignored .sqlserver.env.
sqlserver-up:
	@set -e; pw="Ck1!$$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"; \
	docker run -d --name $(SQLSERVER_NAME) -e ACCEPT_EULA=Y -e "MSSQL_SA_PASSWORD=$$pw" \
	  -p 127.0.0.1:1433:1433 $(SQLSERVER_IMAGE) >/dev/null; \
	echo "export CHOKAQ_TEST_SQLSERVER='sqlserver://sa:$$pw@127.0.0.1:1433?database=master&encrypt=disable'" > $(SQLSERVER_ENV); \
	chmod 600 $(SQLSERVER_ENV); \
	for i in $$(seq 1 60); do \
	  if docker exec $(SQLSERVER_NAME) /opt/mssql-tools18/bin/sqlcmd -C -S localhost -U sa -P "$$pw" -Q "SELECT 1" >/dev/null 2>&1; then \
	    echo "SQL Server is up; DSN in $(SQLSERVER_ENV)"; exit 0; fi; sleep 2; done; \
	echo "SQL Server did not become ready"; exit 1

## sqlserver-down: remove the container sqlserver-up started.
sqlserver-down:
	-docker rm -f $(SQLSERVER_NAME)
	rm -f $(SQLSERVER_ENV)

## bench: every benchmark, 5 runs each, for benchstat.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./... | tee bench.out

## run: the demo on the in-memory store (on SQL Server with CHOKAQ__CONNECTIONSTRING), about 10 seconds.
run:
	$(GO) run ./cmd/chokaq demo
