# Developer shortcuts; CI runs .ci/run.
GO ?= go
# every example program; examples/internal holds their shared helpers
EXAMPLES := $(filter-out internal,$(notdir $(wildcard examples/*)))

.PHONY: test lint examples bench stress emulator

## test: the test command README.md gives (embedded emulator, no network)
test:
	$(GO) test ./...

## lint: gofmt (fails on unformatted files), go vet and staticcheck
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.6.1 ./...

## examples: run every example end to end on the embedded emulator
examples:
	@set -e; for e in $(EXAMPLES); do echo "== $$e"; $(GO) run ./examples/$$e; done

## bench: provider request counts and emulator throughput
bench:
	$(GO) test -run '^$$' -bench . -benchmem . ./emulator/

## stress: the stress binary with its defaults
stress:
	$(GO) run ./cmd/cdb-stress

## emulator: the emulator as a server on https://127.0.0.1:8081/
emulator:
	$(GO) run ./cmd/cdb-emulator
