# quarry — the two commands: `make run` and `make test`.
GO        ?= go
DATA_DIR  ?= ./data
PEERS_DIR ?= $(CURDIR)/.cache/peers
# staticcheck, installed by test-deps (scripts/test-deps.sh pins its version)
STATICCHECK ?= $(CURDIR)/.cache/bin/staticcheck
ARGS      ?=
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
DATE      ?= $(shell d=$$(git log -1 --format=%ct 2>/dev/null) && date -u -d "@$$d" +%Y-%m-%dT%H:%M:%SZ || echo unknown)
export PATH := /usr/local/go/bin:$(PATH)

# make test runs every test with the race detector, but builds the SQLite
# engine (modernc.org/sqlite/lib: SQLite's C translated to Go) and its C
# runtime (modernc.org/libc, modernc.org/memory) without its
# instrumentation. quarry's code and the database/sql driver
# (modernc.org/sqlite) stay instrumented and every test asserts the same;
# what is not checked is SQLite's internals, as with a cgo SQLite. Checked,
# they made every SQLite test 10-20 times slower than without -race, half
# of make test's time (the DataShelf crawler tests: 207 s of CPU -> 105 s).
# go vet builds with the same flags, so that on a machine without a build
# cache the dependencies are compiled once for both (cold, vet then the
# tests: 262 s of CPU instead of 433).
RACE_GCFLAGS := -gcflags='modernc.org/sqlite/lib=-race=false' -gcflags='modernc.org/libc/...=-race=false' -gcflags='modernc.org/memory=-race=false'
# The same flags for staticcheck, which compiles the tree through go list
# (GOFLAGS): built as vet built it, the packages come from the build cache
# (cold: 10 s of CPU for staticcheck after vet, instead of compiling the
# tree and its dependencies a second time without -race, 234 s).
RACE_GOFLAGS := $(shell $(GO) env GOFLAGS) -race -gcflags=modernc.org/sqlite/lib=-race=false -gcflags=modernc.org/libc/...=-race=false -gcflags=modernc.org/memory=-race=false

.PHONY: run build flags test test-deps peer-deps test-peer bench bench-datashelf bench-wallcrawler bench-checks bench-eecar bench-river bench-chromem bench-gatus bench-browser fuzz lint clean

## run: build bin/quarry and run quarry serve on embedded defaults (data under
## ./data); ARGS="--flag value ..." adds flags. The recipe execs quarry, so
## Ctrl-C, or a SIGTERM to make, reaches quarry and stops it cleanly. As
## root, installs Chromium first when it is missing.
run: build
	@bash scripts/test-deps.sh run
	exec ./bin/quarry serve --data-dir $(DATA_DIR) $(ARGS)

## build: build bin/quarry (its version from git describe)
build:
	$(GO) build -ldflags "-X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)" -o bin/quarry ./cmd/quarry

## flags: write docs/flags.md, the flag reference, from the settings table
## (a test fails when it is stale)
flags:
	$(GO) generate ./internal/platform/config

## test: install missing test dependencies, lint, start PostgreSQL, run every
## test with the race detector, and stop PostgreSQL again (even on failure or Ctrl-C).
## go test's own vet pass is off (-vet=off): lint has just run all of go vet
## over the same packages with the same flags, a superset of go test's checks.
## The test binaries are linked without DWARF (-ldflags=-w): stack traces and
## race reports do not use it, and it is 40 % of their linking's CPU.
test: test-deps lint
	@trap 'bash scripts/pg-stop.sh' EXIT; trap 'exit 130' INT TERM; \
	url="$$(bash scripts/pg-start.sh)" && \
	echo "PostgreSQL for the tests: $$url (stopped when the tests end)" && \
	QUARRY_TEST_POSTGRES_URL="$$url" QUARRY_REQUIRE_PEERS=1 PEERS_DIR=$(PEERS_DIR) $(GO) test -race -vet=off $(RACE_GCFLAGS) -ldflags=-w -timeout 20m ./...

## lint: go vet (with the tests' flags, so the build is shared), gofmt and
## staticcheck (its checks in staticcheck.conf; installed by test-deps) over the tree
lint:
	$(GO) vet -race $(RACE_GCFLAGS) ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1)
	@test -x $(STATICCHECK) || (echo "$(STATICCHECK) missing: make test-deps installs it"; exit 1)
	GOFLAGS="$(RACE_GOFLAGS)" $(STATICCHECK) ./...

## test-deps: install what the tests need (Debian packages when root, npm peers, staticcheck)
test-deps:
	@PEERS_DIR=$(PEERS_DIR) STATICCHECK=$(STATICCHECK) GO=$(GO) bash scripts/test-deps.sh

## peer-deps: test-deps, and dynalite (npm) for test-peer and bench
peer-deps:
	@PEERS_DIR=$(PEERS_DIR) STATICCHECK=$(STATICCHECK) GO=$(GO) bash scripts/test-deps.sh peers

## test-peer: run the store's SDK suite against dynalite (npm) and print the outcome
test-peer: peer-deps
	@PEERS_DIR=$(PEERS_DIR) bash scripts/test-peer.sh

## bench: run bench/ against quarry, dynalite and moto_server; appends to bench/RESULTS.md
bench: peer-deps
	@PEERS_DIR=$(PEERS_DIR) bash bench/run.sh

## bench-datashelf: crawl throughput against Crawlee, and the job queue on PostgreSQL; appends to bench/RESULTS.md
bench-datashelf: test-deps
	cd bench/crawlee && npm install --no-audit --no-fund --silent
	$(GO) run ./bench/crawlbench -products 5000 -concurrency 8 -out bench/RESULTS.md
	url="$$(bash scripts/pg-start.sh)" && $(GO) run ./bench/queuebench -postgres "$$url" -jobs 20000 -workers 8 -out bench/RESULTS.md

## bench-wallcrawler: Wallcrawler session start (cold, warm pool) and page load direct vs through the egress proxy; appends to bench/RESULTS.md
bench-wallcrawler: test-deps
	PEERS_DIR=$(PEERS_DIR) bash bench/wallcrawlerbench/run.sh

## bench-checks: 10,000 checks at 60 s for 5 minutes (start lateness, missed runs, CPU); appends to bench/RESULTS.md
bench-checks:
	$(GO) run ./bench/checksbench -checks 10000 -interval 60s -duration 5m -out bench/RESULTS.md

## bench-eecar: EECAR search quality (recall@5, MRR) and latency at 5,000 and 100,000 parts; appends to bench/RESULTS.md
bench-eecar:
	$(GO) run ./bench/eecarbench -quality -latency -out bench/RESULTS.md

## bench-river: DataShelf's job queue vs River on PostgreSQL with fsync on (bench/peers/river); appends to bench/RESULTS.md
bench-river:
	bash bench/peers/river/run.sh $(ARGS)

## bench-chromem: EECAR search vs chromem-go (bench/peers/chromem): latency, index memory, quality; BASE=rev adds quarry's index at rev beside; appends to bench/RESULTS.md
bench-chromem:
	bash bench/peers/chromem/run.sh $(ARGS)

## bench-gatus: the Checks scheduler (quarry serve --systems checks) vs Gatus built from its Go module (bench/peers/gatus): period error, missed periods, CPU per check; BASE=<git rev> measures that revision too in the same run; appends to bench/RESULTS.md
bench-gatus:
	bash bench/peers/gatus/run.sh $(ARGS)

## bench-browser: Wallcrawler create vs launching Chromium directly (chromedp, Playwright); appends to bench/RESULTS.md
bench-browser: test-deps
	PEERS_DIR=$(PEERS_DIR) SESSIONS=$${SESSIONS:-20} PAGELOAD=0 bash bench/wallcrawlerbench/run.sh -peers $${PEERS:-20} $(ARGS)

## fuzz: run every fuzz target of every package (scripts/fuzz.sh) for FUZZTIME each (default 20s)
FUZZTIME ?= 20s
fuzz:
	@GO=$(GO) FUZZTIME=$(FUZZTIME) bash scripts/fuzz.sh

clean:
	rm -rf bin .cache

# Release files (scripts/dist.sh): DIST_ARCHES' archives and Debian
# packages, and SHA256SUMS, into DIST_DIR.
DIST_DIR    ?= dist
DIST_ARCHES ?= amd64 arm64
.PHONY: dist image test-dist

## dist: build dist/quarry_<version>_linux_{amd64,arm64}.tar.gz, the .deb
## packages and SHA256SUMS, reproducibly (version, commit and date from git)
dist:
	@GO=$(GO) VERSION=$(VERSION) ARCHES="$(DIST_ARCHES)" DIST_DIR=$(DIST_DIR) bash scripts/dist.sh

## image: build the container image quarry:<version> (Dockerfile), stamped as make dist stamps
image:
	eval "$$(VERSION=$(VERSION) bash scripts/version.sh)" && \
	docker build --build-arg VERSION="$$VERSION" --build-arg COMMIT="$$COMMIT" --build-arg DATE="$$DATE" -t quarry:"$$FILE_VERSION" .

## test-dist: the packaging tests that build release files (two dist builds of
## the host's architecture, one from an empty Go build cache; minutes, so not
## part of make test)
test-dist:
	QUARRY_TEST_DIST=1 $(GO) test -count=1 -timeout 30m -v -run 'TestDist' ./packaging/
