# lockbench — see README.md. Everything runs against servers lockbench starts
# itself on loopback (or yours, via LOCKBENCH_* variables).

GO      ?= go
BIN     := bin/lockbench
OUT     ?= out/bench
RACE_PKGS := ./loadgen/... ./strategies/... ./conformance/... ./results/... ./report/...

.PHONY: all build deps test test-short vet bench bench-go compare-redis compare-postgres reference soak clean

all: build

# build: -buildvcs=auto records the commit in the binary (meta.json's
# build.commit) where the go environment turns it off.
build:
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/lockbench

# deps installs the servers the tests and benchmarks use (Debian, as root);
# lockbench also installs a missing one itself when it can.
deps:
	./.ci/install-deps

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }

# test: every package against real servers; -race on the concurrent packages;
# then 8000 fuzzed inputs of the command line and scenario files, about
# 10 s (plain go test already runs the fuzz corpus, bench/cli/testdata/fuzz).
# A count, not a duration: go1.26's fuzz coordinator can fail a duration's
# end with a bare "context deadline exceeded" and no input when its
# workers are starved (golang/go#75804, fixed in go1.27). The fuzz build
# instruments every package: about 30 s with a warm build cache, minutes
# with a cold one.
#
# SKIP: a -skip pattern, for a local run that leaves some tests out.
# TIMEOUT: each package's bound, so that a hang fails and names its test;
# room for a busy machine to take twice as long as a quiet one (the
# slowest packages, quiet: bench/cli about 8 minutes, faults 4).
SKIP ?=
TIMEOUT ?= 20m
test: vet build
	@echo "etcd members run from $(BIN) (LOCKBENCH_ETCD_BIN)"
	LOCKBENCH_ETCD_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout $(TIMEOUT) -race -skip '$(SKIP)' $(RACE_PKGS)
	LOCKBENCH_ETCD_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout $(TIMEOUT) -skip '$(SKIP)' $$($(GO) list ./... | grep -v -e /loadgen -e /strategies -e /conformance -e /results -e /report)
	$(GO) test -run '^$$' -fuzz FuzzArgs -fuzztime 8000x ./bench/cli/

# bench: the published matrix, quick form (under 5 minutes; its verdict
# cells in two lanes, each on servers of its own), into $(OUT), with every
# run's history; then the second judge re-checks every verdict from them.
bench: build
	rm -rf $(OUT)
	$(BIN) matrix --quick --lanes 2 --history --out $(OUT)
	$(BIN) check $(OUT) > $(OUT)/check.txt || { cat $(OUT)/check.txt; exit 5; }
	@grep -c '^agree' $(OUT)/check.txt | sed 's/^/check: the history agrees with summary.json on every count, runs: /'
	@echo "report: $(OUT)/report.md"

# bench-go: the go test benchmarks, benchstat-ready.
bench-go:
	$(GO) test -run '^$$' -bench . -benchtime 2000x -count 5 ./bench/ | tee bench-go.txt

# compare-redis: our setnx lock-cycle rate against redis-benchmark's with the
# same two commands, the same clients and the same local Redis.
compare-redis: build
	$(BIN) compare-redis

# compare-postgres: our pg-onconflict lock-cycle rate against pgbench's with
# the same two statements, the same clients and the same local Postgres.
compare-postgres: build
	$(BIN) compare-postgres

# reference: regenerate the committed reference run shown in the README:
# the full matrix, every strategy and fault, with six trials for the base
# scenario (6,000 payments a run: enough samples for its p99.9) and every
# verdict cell (medians with 95% intervals, "unsafe in k of 6"), and one
# for the contention and rate sweeps. The verdict cells run in three lanes,
# each on servers of its own; the base scenario and the sweeps, whose
# figures are speeds, run alone. `lockbench matrix --trials 6
# --sweep-trials 1 --lanes 3 --dry-run` estimates it at about 40 minutes
# on two cores; failover cells need --redis-topology sentinel and are
# listed as not run here.
#
# It refuses a dirty work tree: a published figure must come from a commit
# (meta.json's build, and `lockbench pack`, which refuses a modified build).
# The run is then packed (docs/run-directory.md): its data in one archive,
# data.tar.zst, beside meta.json, the reports and the PNG charts.
reference:
	@status=$$(git status --porcelain) || exit 1; \
	test -z "$$status" || { echo "make reference: the work tree is dirty (git status --porcelain); commit first, a published run must come from a commit"; exit 1; }
	$(MAKE) build
	rm -rf results/reference
	$(BIN) matrix --trials 6 --sweep-trials 1 --lanes 3 --out results/reference
	$(BIN) pack results/reference

# soak: a 3-minute closed-loop nolock run at full rate with its resident
# memory sampled every second; fails when the figure at minute 3 is over
# 10% above minute 1's (SOAK_DURATION=SECONDS for another length). Not part
# of make test: it takes both cores for the whole duration.
soak: build
	scripts/soak.sh

clean:
	rm -rf bin out bench-go.txt
