# mirage — see README.md. `make demo` and `make test` do all set-up themselves.
SHELL := /bin/bash
GO ?= go
# libsqlite3: link Debian's SQLite instead of compiling it (same engine, 60 s faster);
# xgboost: the training code that links Debian's libxgboost.
GOTAGS ?= libsqlite3 xgboost
CACHE ?= $(HOME)/.cache/mirage
BIN := bin/mirage
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/mirage-gpu/mirage/internal/buildinfo.version=$(VERSION)

.PHONY: all build install deps test test-slurm25 unit demo bench bench-results bench-replay bench-real-slurm results docs lint fuzz vulncheck clean

all: build

deps:
	./scripts/deps.sh

# The binary; installs the C libraries it links first (Debian: gcc, libsqlite3-dev, libxgboost-dev).
build:
	./scripts/deps.sh build
	$(GO) build -tags "$(GOTAGS)" -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/mirage

# The binary in $(PREFIX)/bin and its shell completions (bash, zsh, fish) where
# those shells look for a user's own; PREFIX defaults to ~/.local.
PREFIX ?= $(HOME)/.local
install: build
	install -D -m 0755 $(BIN) $(PREFIX)/bin/mirage
	mkdir -p $(PREFIX)/share/bash-completion/completions $(PREFIX)/share/zsh/site-functions $(PREFIX)/share/fish/vendor_completions.d
	$(BIN) completion bash > $(PREFIX)/share/bash-completion/completions/mirage
	$(BIN) completion zsh > $(PREFIX)/share/zsh/site-functions/_mirage
	$(BIN) completion fish > $(PREFIX)/share/fish/vendor_completions.d/mirage.fish
	@echo "installed $(PREFIX)/bin/mirage and its completions (bash picks them up in new shells; zsh: add $(PREFIX)/share/zsh/site-functions to fpath)"

# Everything: dependencies, a real Slurm and kube-apiserver on 127.0.0.1, all tests, brief fuzzing.
test:
	GOTAGS="$(GOTAGS)" ./scripts/test.sh

# The Slurm integration and chain e2e tests on Slurm 25.05 (built from source
# once, about 16 minutes on 2 cores, then cached under $(CACHE)).
test-slurm25:
	./scripts/deps.sh
	GOTAGS="$(GOTAGS)" ./scripts/slurm-newer/test.sh 25.05

# Unit tests only (no backends; integration tests skip with a message).
unit:
	$(GO) test -tags "$(GOTAGS)" ./...

# The main job: synthetic LS6-like trace -> replay evaluation -> report (TRACE=path for a real trace).
# It needs only what the binary links (make build installs it), not the test clusters.
demo: build
	TRACE="$(TRACE)" OUT="$(OUT)" ./scripts/demo.sh

bench:
	$(GO) test -tags "$(GOTAGS)" -p 1 -run '^$$' -bench . -benchmem -count 6 ./... | tee bench.txt
	@if [ -x $(CACHE)/bin/benchstat ]; then $(CACHE)/bin/benchstat bench.txt; fi

# Benchmarks run COUNT times; medians written to docs/results/performance.md.
bench-results:
	GOTAGS="$(GOTAGS)" ./scripts/bench-results.sh

# The simulator's replay benchmarks, BASE commit against the working tree
# (benchstat, one core and default GOMAXPROCS): docs/results/replay-speed.md.
bench-replay:
	GOTAGS="$(GOTAGS)" BENCHSTAT="$(CACHE)/bin/benchstat" ./scripts/bench-replay.sh

# The real scheduler in the loop (issue 46): chains driven by mirage on the
# loopback Slurm (32 nodes; 22.05, then 24.11, building its chroot once)
# under a time-scaled LS6 slice, and the simulator on the same jobs:
# docs/results/real-slurm.md. About four hours (12 runs of 12–28 min, and
# the learned default trained per setting); records and models under
# $(MIRAGE_TEST_DIR)/bench-real-slurm (MIRAGE_BENCH_RESIMULATE=1 replays them
# without Slurm after a change to the simulator).
bench-real-slurm:
	./scripts/deps.sh
	MIRAGE_BENCH_REAL_SLURM=1 MIRAGE_UPDATE_RESULTS=1 $(GO) test -tags "$(GOTAGS)" -count=1 -v -timeout 5h -run 'TestBenchRealSlurm$$' ./eval/realslurm/

# Every results page (docs/results), each by the test or script that measures
# it, from a clean tree (a dirty one refuses); PAGES="walk-forward ..." for some.
# Hours on 2 cores; times in docs/results/results-times.md.
results: deps
	GOTAGS="$(GOTAGS)" ./scripts/results.sh

# Generated reference: the command pages (docs/reference/cli) and the feature schema.
docs:
	rm -rf docs/reference/cli
	$(GO) run -tags "$(GOTAGS)" ./cmd/mirage gen-docs --dir docs/reference/cli
	$(GO) test -tags "$(GOTAGS)" -count=1 -run 'TestFeatureSchemaDoc$$' ./models/features/ -update

fuzz:
	FUZZTIME=$${FUZZTIME:-30s} GOTAGS="$(GOTAGS)" ./scripts/fuzz.sh

lint:
	@bad=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$bad" ]; then echo "gofmt needed:"; echo "$$bad"; exit 1; fi
	$(GO) vet -tags "$(GOTAGS)" ./...
	@if [ ! -x $(CACHE)/bin/staticcheck ]; then GOBIN=$(CACHE)/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@v0.8.2; fi
	$(CACHE)/bin/staticcheck -tags "$(GOTAGS)" ./...

# Known vulnerabilities, checked offline against the shared snapshot of the Go
# vulnerability database (../shared/vulndb, beside the clone; see its README):
# those reachable from mirage's code (source mode), then every vulnerable symbol
# linked into the binary (binary mode, as a scanner of the installed binary sees
# it). Exits non-zero when either finds one.
VULNDB ?= ../shared/vulndb
comma := ,
empty :=
space := $(empty) $(empty)
vulncheck:
	@if [ ! -x $(VULNDB)/govulncheck.sh ]; then echo "vulncheck: $(VULNDB)/govulncheck.sh not found (the shared folder sits at ../shared beside the clone; set VULNDB=DIR)"; exit 2; fi
	$(VULNDB)/govulncheck.sh -tags $(subst $(space),$(comma),$(strip $(GOTAGS))) ./...
	$(MAKE) build
	$(VULNDB)/govulncheck.sh -mode binary $(BIN)

clean:
	rm -rf bin bench.txt
