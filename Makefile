# ctxstore: see README.md. Every target works on a fresh machine with Go,
# a JDK and Maven (the XTDB server's artifacts come from Maven Central).
#
# `make -f /path/to/ctxstore/Makefile build` (or demo) from another
# directory builds the checkout's code and writes bin/ and .ctxstore/ into
# that directory (the README test runs make demo so).
ROOT     := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
GO       ?= go
BIN      ?= bin/ctxstore
PKGS     ?= ./...
BENCHTIME ?= 1x
# P, when set, is go test's -p (how many test binaries run at once; default
# the number of CPUs). Test binaries that wait on an XTDB node overlap
# better with more (docs/testing.md).
P        ?=
TESTP    := $(if $(P),-p $(P),)

.PHONY: all build test test-short fuzz-short bench lint demo store-demo xtdb clean browser replay-bench typecheck

all: lint build test

build:
	cd $(ROOT) && $(GO) build -o $(abspath $(BIN)) ./cmd/ctxstore

# The full suite, XTDB and Pi included (one XTDB node per test binary at
# most, started from Maven artifacts unless XTDB_URL points at one; with
# CI=true a missing server fails). Wall times: docs/testing.md. The
# timeout is per test binary: tests/ runs every end-to-end test (real Pi,
# OpenClaw and Claude Code CLIs, XTDB nodes, a PostgreSQL cluster) in one.
test: browser
	$(GO) test $(TESTP) -count=1 -timeout 45m $(PKGS)

# Debian's chromium and chromium-driver for the web inspector's browser
# tests (installed when missing and root can; under CI=true the tests fail
# without them, elsewhere they skip and say why).
browser:
	@./scripts/ensure-chromium.sh >/dev/null || [ "$${CI:-}" != true ]

# Without the tests that need a JVM, Node, an npm install or a browser, or
# take long: no XTDB node, no Pi (they skip under -short).
test-short:
	$(GO) test $(TESTP) -short -count=1 $(PKGS)

# tsc --noEmit on the TypeScript integrations (the shared client, the Pi
# extension, the OpenClaw plugin) with each harness's own declarations, at
# the versions their package.json files pin, installed from npm into the
# tests' cache (scripts/typecheck.sh).
typecheck:
	./scripts/typecheck.sh

# Every fuzz target for FUZZTIME each (default 5s): the parsers of
# documents, version logs, EDN answers, objects, Markdown and transcripts.
FUZZTIME ?= 5s
fuzz-short:
	GO=$(GO) FUZZTIME=$(FUZZTIME) ./scripts/fuzz-short.sh

bench:
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) -benchmem $(PKGS)

# The token-economy tables and charts of docs/benchmarks.md: every replay
# strategy on every dataset session (scripts/replay-bench.sh; output in
# REPLAY_OUT, default /tmp/replay-bench).
replay-bench:
	GO=$(GO) ./scripts/replay-bench.sh

# The token-economy figures of docs/benchmarks.md: both replay runs (15-30
# minutes on 2 cores), then the blocks between its figures markers
# rewritten from their tables (scripts/docs-figures.sh).
.PHONY: docs-figures
docs-figures:
	GO=$(GO) ./scripts/docs-figures.sh

# gofmt, go vet, staticcheck (any finding fails) and the dead-code check
# of the binary (scripts/deadcode.sh). The two tools are pinned here and
# built by go run from the module proxy on first use (then cached).
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
DEADCODE    ?= golang.org/x/tools/cmd/deadcode@v0.53.0
lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) run $(STATICCHECK) $(PKGS)
	GO=$(GO) DEADCODE=$(DEADCODE) ./scripts/deadcode.sh

# A short agent session, offline, with ctxstore managing its context (on
# the embedded SQLite store .ctxstore/demo.db), then what the model saw.
demo: build
	$(BIN) demo

# The store alone: a bitemporal round trip in .ctxstore/store-demo.db.
store-demo: build
	CTXSTORE_URL=.ctxstore/store-demo.db ./scripts/demo.sh $(BIN)

# Run a persistent XTDB 1.24.5 node for local use (data in ./.ctxstore/xtdb).
xtdb: build
	$(BIN) xtdb serve --data-dir .ctxstore/xtdb --port 3000

clean:
	rm -rf bin
