// Command fuzzrun runs campaigns of the idemcheck harness: for a time or
// check budget, on every core, rapid draws scenarios, the runner plays them
// against a target (the reference or a mutant), every selected property
// judges the run, and each violation is shrunk, saved in the corpus and
// shown in an HTML report with a timeline of the counterexample.
//
//	go run ./cmd/fuzzrun                        # 30 s over every property, the reference
//	go run ./cmd/fuzzrun mutants                # the mutation benchmark
//	go run ./cmd/fuzzrun replay corpus/cases/x.json -target no-dedup
//	go run ./cmd/fuzzrun consumer lru           # a team's consumer (here an example)
//	go run ./cmd/fuzzrun list
//
// Each command has its own flags (fuzzrun COMMAND -h); see README.md in
// this directory for every command and flag.
package main

import (
	"context"
	"flag"
	"io"
	"os"
	"os/signal"
	"syscall"
	"testing"
)

// Exit statuses.
const (
	exitOK        = 0 // nothing violated in the work the budget asked for
	exitViolation = 1 // a property was violated, or a mutant survived
	exitUsage     = 2 // a bad flag or value
	exitInternal  = 3 // the harness itself failed: a worker died, a file could not be written
	// exitInconclusive: nothing violated, and nothing proven either: the
	// run was interrupted, played nothing, left a selected property
	// unchecked, or a search stopped short of the bound it was given.
	exitInconclusive = 4
)

func main() {
	prepareRapid()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// prepareRapid lets rapid run outside go test: rapid calls testing.Short,
// which needs the testing flags registered and the command line parsed.
// fuzzrun parses its own flags; the process-wide set is parsed empty.
func prepareRapid() {
	testing.Init()
	if !flag.Parsed() {
		_ = flag.CommandLine.Parse(nil)
	}
}

// run is fuzzrun with its arguments and outputs, callable from tests. The
// first SIGINT or SIGTERM ends the run cleanly (the report so far is
// written); a second one kills it at once.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop) // after the first signal, the default action again
	return runContext(ctx, args, stdout, stderr)
}
