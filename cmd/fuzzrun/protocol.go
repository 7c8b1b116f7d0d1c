package main

import (
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/properties/coverage"
)

// rapid reads its seed and check count from process-wide flags, so hunts
// cannot run in parallel inside one process (properties.Hunt serialises
// them). A campaign on N cores therefore runs N worker processes: fuzzrun
// re-executes itself with -worker, each worker hunts its own disjoint share
// of seeds, and reports to the parent as JSON lines on its stdout. The parent
// alone writes the corpus and the reports.

// execEnv marks a process started to act as fuzzrun: a worker started by a
// parent fuzzrun, or, in tests, the test binary standing in for fuzzrun
// (TestMain dispatches on it).
const execEnv = "IDEMCHECK_FUZZRUN_EXEC"

// message is one JSON line from a worker to its parent.
type message struct {
	// Type is msgBatch, msgViolation, msgKill or msgDone.
	Type   string `json:"type"`
	Worker int    `json:"worker"`
	// Seq numbers a worker's messages, so the parent can order what
	// workers found deterministically whatever order the lines arrive in.
	Seq int `json:"seq"`

	// Batch and violation: the kind hunted, the properties judged, the
	// checks done and the hunt's starting seed.
	Kind       string   `json:"kind,omitempty"`
	Properties []string `json:"properties,omitempty"`
	Checks     int      `json:"checks,omitempty"`
	BatchSeed  uint64   `json:"batchSeed,omitempty"`
	// Coverage (batch) counts the situations the batch's runs reached.
	Coverage *coverage.Counts `json:"coverage,omitempty"`

	// Violation and kill: the failing property, the seed of the failing
	// check, the verdict's summary and the shrunk scenario.
	Property string `json:"property,omitempty"`
	// Law is the law broken, "property/law".
	Law      string          `json:"law,omitempty"`
	Seed     uint64          `json:"seed,omitempty"`
	Summary  string          `json:"summary,omitempty"`
	Scenario json.RawMessage `json:"scenario,omitempty"`
	// Message is rapid's report when a check panicked instead of failing a
	// property (there is then no scenario to save).
	Message string `json:"message,omitempty"`

	// Kill (mutation benchmark): one hunt of one mutant. KillNs is the time
	// to the first failing check, ElapsedNs the hunt's, shrinking included.
	Mutant    string `json:"mutant,omitempty"`
	Run       int    `json:"run,omitempty"`
	Killed    bool   `json:"killed,omitempty"`
	KillNs    int64  `json:"killNs,omitempty"`
	ElapsedNs int64  `json:"elapsedNs,omitempty"`
	Size      int    `json:"size,omitempty"`
	// ShrunkSize is the size rapid's shrink ended at, before the reduction
	// pass that gave Size.
	ShrunkSize int `json:"shrunkSize,omitempty"`
}

// Message types.
const (
	msgBatch     = "batch"
	msgViolation = "violation"
	msgKill      = "kill"
	msgDone      = "done"
)

// workerCommand builds the command line of worker w of n. It hands the
// worker its share of the budget and the time left.
func workerCommand(exe string, o *options, w int, checks int64, left time.Duration) *exec.Cmd {
	args := []string{"worker", "-worker-index", strconv.Itoa(w), "-workers", strconv.Itoa(o.workers),
		"-seed", strconv.FormatUint(o.seed, 10), "-batch", strconv.Itoa(o.batch), "-runs", strconv.Itoa(o.runs),
		"-duration", left.String(), "-property", strings.Join(o.patterns, ",")}
	if checks > 0 {
		args = append(args, "-checks", strconv.FormatInt(checks, 10))
	}
	if w := o.weights.String(); w != "" {
		args = append(args, "-weights", w)
	}
	if o.swarm {
		args = append(args, "-swarm")
	}
	for _, law := range slices.Sorted(maps.Keys(o.off)) {
		args = append(args, "-off", law+"="+o.off[law])
	}
	if o.mutants {
		args = append(args, "-mutants")
	} else {
		args = append(args, "-target", o.target.Name)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), execEnv+"=1")
	// One worker per core: give each its share of the cores, so that the
	// workers' garbage collectors do not compete and timings stay fair.
	if _, set := os.LookupEnv("GOMAXPROCS"); !set {
		procs := max(1, runtime.NumCPU()/o.workers)
		cmd.Env = append(cmd.Env, "GOMAXPROCS="+strconv.Itoa(procs))
	}
	return cmd
}

// share splits a total over n workers: worker w gets its part.
func share(total int64, n, w int) int64 {
	if total == 0 {
		return 0
	}
	s := total / int64(n)
	if int64(w) < total%int64(n) {
		s++
	}
	return s
}

// huntSeed is the seed of worker w's k-th hunt. rapid seeds its i-th check
// with seed + i(i+1)/2, so hunts at consecutive seeds would replay some of
// each other's checks; mixing the index (splitmix64) spreads the hunts over
// the whole seed space, disjoint across workers, and fixed by the base seed.
func huntSeed(base uint64, w, n, k int) uint64 {
	x := base + uint64(k)*uint64(n) + uint64(w) + 1
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	x ^= x >> 31
	if x == 0 {
		x = 1 // rapid reads 0 as "pick a random seed"
	}
	return x
}
