package main

import (
	"context"
	"encoding/json"
	"io"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/corpus"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/properties"
	"github.com/idemcheck/idemcheck/properties/coverage"
)

// sender writes a worker's messages as JSON lines. If the parent is gone,
// the write fails with a broken pipe and the worker dies with it.
type sender struct {
	enc    *json.Encoder
	worker int
	seq    int
}

func (s *sender) send(m message) {
	m.Worker, m.Seq = s.worker, s.seq
	s.seq++
	_ = s.enc.Encode(m)
}

// runWorker is a worker process: it hunts its share and reports on out. It
// stops between hunts when ctx ends (its parent kills it in any case).
func runWorker(ctx context.Context, o *options, out io.Writer) int {
	// A hunt keeps little alive from one check to the next (a scenario, its
	// outcome, the monitors) and makes much garbage: collecting when the
	// heap has grown ninefold instead of doubled spends most of the
	// collector's CPU on checks instead, for a few tens of megabytes.
	defer debug.SetGCPercent(debug.SetGCPercent(800))
	s := &sender{enc: json.NewEncoder(out), worker: o.workerIndex}
	if o.mutants {
		huntMutants(ctx, o, s)
	} else {
		huntCampaign(ctx, o, s)
	}
	s.send(message{Type: msgDone})
	return exitOK
}

// huntCampaign hunts in batches until the time or check budget is spent.
// Each hunt draws o.batch scenarios from its own seed; a kind's properties
// are judged together, and kinds take turns. A broken law is not hunted
// again by this worker — its next violation would most likely shrink to the
// same counterexample — but the property's other laws are, so that every
// law a target breaks is reported with a counterexample of its own.
func huntCampaign(ctx context.Context, o *options, s *sender) {
	start := time.Now()
	judged := map[scenario.Kind][]properties.Property{}
	hunted := map[scenario.Kind][]string{} // the laws still hunted, "property/law"
	var kinds []scenario.Kind
	for _, p := range o.props {
		if !corpus.HasKind(o.target, p.Kind) {
			continue
		}
		if _, ok := judged[p.Kind]; !ok {
			kinds = append(kinds, p.Kind)
		}
		judged[p.Kind] = append(judged[p.Kind], p)
		for _, law := range properties.LawIDs([]properties.Property{p}) {
			if _, off := o.off[law]; !off {
				hunted[p.Kind] = append(hunted[p.Kind], law)
			}
		}
	}
	left := o.checks
	cov := coverage.NewObserver()
	for k := 0; ; k++ {
		if ctx.Err() != nil || (o.duration > 0 && time.Since(start) >= o.duration) || (o.checks > 0 && left <= 0) {
			return
		}
		var live []scenario.Kind
		for _, kind := range kinds {
			if len(hunted[kind]) > 0 {
				live = append(live, kind)
			}
		}
		if len(live) == 0 {
			return // every property violated
		}
		n := int64(o.batch)
		if o.checks > 0 {
			n = min(n, left)
		}
		kind := live[k%len(live)]
		seed := huntSeed(o.seed, o.workerIndex, o.workers, k)
		res := properties.Hunt(o.target, properties.HuntOptions{Kind: kind, Properties: judged[kind], Laws: hunted[kind], Off: o.off, Checks: int(n), Seed: seed,
			Generator: generator(o, kind), Coverage: cov})
		done := min(int64(res.Checks), n)
		left -= done
		counts := cov.Counts()
		cov.Reset()
		s.send(message{Type: msgBatch, Kind: string(kind), Properties: huntedProperties(hunted[kind]), Checks: int(done), BatchSeed: seed, Coverage: &counts})
		if !res.Failed {
			continue
		}
		m := message{Type: msgViolation, Kind: string(kind), Checks: int(done), BatchSeed: seed, Seed: res.Seed,
			Property: res.Verdict.Property, Law: res.Law, Summary: res.Verdict.Summary, ShrunkSize: res.ShrunkSize}
		if res.Scenario != nil {
			m.Scenario, _ = scenario.Marshal(res.Scenario)
		} else {
			m.Message = res.Message
		}
		s.send(m)
		if i := slices.Index(hunted[kind], res.Law); i >= 0 {
			hunted[kind] = slices.Delete(slices.Clone(hunted[kind]), i, i+1)
		} else {
			hunted[kind] = nil // a panic or an unplayable scenario: this kind cannot be hunted further
		}
	}
}

// huntedProperties names the properties that still have a law hunted.
func huntedProperties(laws []string) []string {
	var out []string
	for _, l := range laws {
		name, _, _ := strings.Cut(l, "/")
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// mutantJob is one hunt of the mutation benchmark.
type mutantJob struct {
	mutant   system.Target
	property properties.Property
	run      int
}

// mutantJobs lists the benchmark's hunts, the same in every process: each
// mutant whose property is selected, o.runs times. Job j belongs to worker
// j mod o.workers.
func mutantJobs(o *options) []mutantJob {
	var jobs []mutantJob
	for _, m := range system.Mutants() {
		// The concurrency mutants' KilledBy is the linearizability check,
		// which draws no scenario: they are not in o.props and are skipped.
		i := slices.IndexFunc(o.props, func(p properties.Property) bool { return p.Name == m.KilledBy })
		if i < 0 {
			continue
		}
		for r := range o.runs {
			jobs = append(jobs, mutantJob{mutant: m, property: o.props[i], run: r})
		}
	}
	return jobs
}

// mutantSeed is the seed of run r of every mutant: the same for all
// mutants and independent of the number of workers.
func mutantSeed(base uint64, r int) uint64 { return huntSeed(base, 0, 1, r) }

// huntMutants runs this worker's share of the mutation benchmark.
func huntMutants(ctx context.Context, o *options, s *sender) {
	for j, job := range mutantJobs(o) {
		if j%o.workers != o.workerIndex {
			continue
		}
		if ctx.Err() != nil {
			return
		}
		p := job.property
		res := properties.Hunt(job.mutant, properties.HuntOptions{Kind: p.Kind, Properties: []properties.Property{p},
			Checks: int(o.checks), Seed: mutantSeed(o.seed, job.run), Generator: generator(o, p.Kind)})
		m := message{Type: msgKill, Mutant: job.mutant.Name, Run: job.run, Property: p.Name, Law: res.Law, Kind: string(p.Kind),
			Killed: res.Failed && res.Verdict.Property == p.Name, Checks: res.Checks, ElapsedNs: res.Elapsed.Nanoseconds(),
			Seed: res.Seed, Summary: res.Verdict.Summary, ShrunkSize: res.ShrunkSize}
		// Time to kill is the time to the first failing check; Elapsed
		// also includes shrinking.
		m.KillNs = res.FoundAfter.Nanoseconds()
		if res.Scenario != nil {
			m.Size = res.Scenario.Size()
			m.Scenario, _ = scenario.Marshal(res.Scenario)
		}
		if res.Failed && !m.Killed {
			m.Message = res.Message
		}
		s.send(m)
	}
}
