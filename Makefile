# quarry — the two commands: `make run` and `make test`.
GO        ?= go
DATA_DIR  ?= ./data
PEERS_DIR ?= $(CURDIR)/.cache/peers
export PATH := /usr/local/go/bin:$(PATH)

.PHONY: run build test test-deps test-peer bench bench-datashelf bench-wallcrawler bench-checks bench-eecar fuzz lint clean

## run: start quarry serve on embedded defaults (data under ./data)
run:
	$(GO) run ./cmd/quarry serve --data-dir $(DATA_DIR)

## build: build bin/quarry
build:
	$(GO) build -o bin/quarry ./cmd/quarry

## test: install missing test dependencies, lint, start PostgreSQL, then run every test with the race detector
test: test-deps lint
	url="$$(bash scripts/pg-start.sh)" && QUARRY_TEST_POSTGRES_URL="$$url" QUARRY_REQUIRE_PEERS=1 PEERS_DIR=$(PEERS_DIR) $(GO) test -race -timeout 20m ./...

## lint: go vet and gofmt over the tree
lint:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1)

## test-deps: install what the tests need (Debian packages when root, npm peers)
test-deps:
	@PEERS_DIR=$(PEERS_DIR) bash scripts/test-deps.sh

## test-peer: run the store's SDK suite against dynalite (npm) and print the outcome
test-peer: test-deps
	@PEERS_DIR=$(PEERS_DIR) bash scripts/test-peer.sh

## bench: run bench/ against quarry and dynalite; appends to bench/RESULTS.md
bench: test-deps
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

## fuzz: run every fuzz target of every package (scripts/fuzz.sh) for FUZZTIME each (default 20s)
FUZZTIME ?= 20s
fuzz:
	@GO=$(GO) FUZZTIME=$(FUZZTIME) bash scripts/fuzz.sh

clean:
	rm -rf bin .cache
