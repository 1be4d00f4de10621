# bridgekit: make generate (regenerate gen/ and docs/reference/ from spec/,
# with `bridgekit generate`),
# make test (every module, with the race detector, and a short run of every
# fuzz target), make check (CI's regenerate-and-diff), make fuzz-long (every
# fuzz target for much longer), make bench (the comparison table of
# docs/performance.md), make tidy (go mod tidy in every module).
#
# The repository is one Go workspace (go.work): the nested modules require
# the SDK and the generator at their release version, which go.work
# replaces by this checkout, so every go command here builds the working
# tree, and `go install github.com/bridgekit/bridgekit/cmd/bridgekit@VERSION`
# works for users (cmd/bridgekit's TestInstallFromModuleProxy proves it).

GO ?= go
# make test's short run of every fuzz target: 5,000 inputs each (81 targets; most
# of a target's time is its instrumented build), which keeps CI within its 25
# minutes; make fuzz-long runs them for FUZZTIME_LONG.
FUZZTIME ?= 5000x
FUZZTIME_LONG ?= 3000000x

.PHONY: generate check test vet fmt-check fuzz fuzz-long bench tidy

# bridgekit generate calls the generator (generator/codegen) as a library;
# bridgekit-gen (cd generator && go run . generate -root ..) does the same.
generate:
	cd cmd/bridgekit && $(GO) run . generate -root ../..

check: generate
	@if ! git diff --quiet -- gen docs/reference || [ -n "$$(git status --porcelain -- gen docs/reference)" ]; then \
		git status --short -- gen docs/reference; \
		echo "generated files differ from spec/: run 'make generate' and commit the result"; exit 1; fi
	@echo "gen/ and docs/reference/ match spec/"

fmt-check:
	@out="$$(gofmt -l $$(git ls-files '*.go'))"; if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi

# Modules of their own beside the root one: the generator, and the example
# providers (whose database dependency SDK users must not inherit). bench/
# is handled apart, below.
MODULES := generator examples/providers cmd/bridgekit

# go mod tidy reads no go.work: a nested module is tidied with go.work's
# replacements written into its go.mod for the while (so its go.sum gets
# no line for the unpublished release), and dropped again.
RELEASE = $(shell sed -n 's|^[[:space:]]*github.com/bridgekit/bridgekit \(v[^ ]*\) =>.*|\1|p' go.work)

tidy:
	$(GO) mod tidy
	cd generator && $(GO) mod tidy
	@for m in $(filter-out generator,$(MODULES)) bench; do echo "tidy $$m"; up=$$(echo $$m | sed 's|[^/]*|..|g'); \
		(cd $$m && $(GO) mod edit -replace=github.com/bridgekit/bridgekit@$(RELEASE)=$$up \
			-replace=github.com/bridgekit/bridgekit/generator@$(RELEASE)=$$up/generator && \
		GOWORK=off $(GO) mod tidy; st=$$?; \
		$(GO) mod edit -dropreplace=github.com/bridgekit/bridgekit@$(RELEASE) -dropreplace=github.com/bridgekit/bridgekit/generator@$(RELEASE); \
		exit $$st) || exit 1; done

vet:
	$(GO) vet ./...
	@for m in $(MODULES); do echo "vet $$m"; (cd $$m && $(GO) vet ./...) || exit 1; done

test: fmt-check vet
	@# -timeout 25m: examples/host runs six real agents' turns and Ctrl-Cs
	@# (about 7 minutes of them on a loaded machine), past go test's 10.
	$(GO) test -race -timeout 25m ./...
	@# Without -race: the allocation ceilings (skipped under it) and the
	@# schema/decoder document checks in full (a tenth of their mutations
	@# under it: see internal/schematest's MutationLimit), and the CPU
	@# bound of permission decisions (skipped under it: five times slower).
	$(GO) test -count=1 -run 'Alloc|^TestGoldenDocuments$$|^TestV0122DocumentsUnchanged$$|^TestDecisionCostIsLinearInBytes$$' ./...
	@# The generator starts no goroutine, so -race would only slow its tests
	@# (whole-spec generations) down several times; the grep keeps that true.
	@if grep -rqE --include='*.go' '(^|[[:space:]])go (func|[A-Za-z_][A-Za-z0-9_.]*\()' generator; then \
		echo "generator/ starts goroutines now: test it with -race"; exit 1; fi
	@echo "test generator"; cd generator && $(GO) test ./...
	@# cmd/bridgekit's tests build it from a module proxy on disk (a few
	@# minutes the first time): past go test's default 10-minute bound on a
	@# loaded machine.
	@for m in $(filter-out generator,$(MODULES)); do echo "test $$m"; (cd $$m && $(GO) test -race -timeout 30m ./...) || exit 1; done
	@# bench/ sanity tests run without -race: it would judge the competitors' code
	@# too (acp-go-sdk v0.13.0 raced in Connection.SetLogger), which is not ours to fix.
	@if [ -d bench ]; then cd bench && $(GO) vet ./... && $(GO) test -count=1 ./...; fi
	$(MAKE) fuzz

# Every fuzz target of the root module and the example providers' (the
# generator has none) runs for FUZZTIME, one at a time (go test -fuzz takes a
# single target). FUZZTIME is an iteration count: a duration can end a run
# mid-minimisation with a spurious "context deadline exceeded". Generated
# packages have one table-driven target each, whatever their number of
# types, so the step's time does not grow with the schemas.
fuzz-long:
	$(MAKE) fuzz FUZZTIME=$(FUZZTIME_LONG)

fuzz:
	@# Packages and targets are found with go list and grep, which build
	@# nothing: only the packages that have targets are compiled.
	@for m in . examples/providers cmd/bridgekit; do \
		for dir in $$(cd $$m && $(GO) list -f '{{.Dir}}' ./...); do \
			for f in $$(grep -h -o '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/^func //'); do \
				echo "fuzz $$dir $$f"; \
				(cd $$dir && $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) .) || exit 1; \
			done; \
		done; \
	done

-include bench/bench.mk
