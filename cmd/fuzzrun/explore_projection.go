package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/corpus"
	"github.com/idemcheck/idemcheck/explore"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/properties"
	"github.com/idemcheck/idemcheck/report"
)

// projectionOnly are the flags that mean something with fuzzrun explore
// -projection only.
var projectionOnly = []string{"copies", "history"}

// consumptionExploreOnly are the flags of fuzzrun explore that shape a consumption
// world, which a projection exploration does not have.
var consumptionExploreOnly = []string{"depth", "events", "groups", "group-workers", "nodes", "steps", "engine", "no-symmetry", "no-por"}

// parseProjection validates the flags of fuzzrun explore -projection: the copies,
// the histories (the catalogue, one of it by name, or a scenario file),
// the target's projection parts and the projection properties to judge.
func (o *options) parseProjection(given map[string]bool, copies, history string) error {
	for _, name := range consumptionExploreOnly {
		if given[name] {
			return usagef("-%s: shapes a consumption world; -projection explores every delivery order of a history instead", name)
		}
	}
	if given["workers"] {
		return usagef("-workers: fuzzrun explore -projection judges every order of a history in one run, on one goroutine")
	}
	n, err := strconv.Atoi(copies)
	if err != nil || n < 1 || n > scenario.MaxCopies {
		return usagef("-copies: %q is not a number of copies from 1 to %d", copies, scenario.MaxCopies)
	}
	o.projCopies = n
	if o.target.Projection == nil {
		return usagef("-target: %s has no projection parts to explore (an HLC or projector target, a projection mutant or the reference)", o.target.Name)
	}
	ps := ofKind(o.props, scenario.KindProjection)
	if len(ps) == 0 {
		return usagef("-property: %s selects no projection property; fuzzrun explore -projection judges projections", strings.Join(o.patterns, ","))
	}
	o.props = ps
	switch h, ok := explore.ProjectionHistory(history); {
	case history == "":
		o.projHistories = explore.ProjectionHistories()
	case ok:
		o.projHistories = []explore.NamedHistory{h}
	default:
		h, err := loadHistory(history)
		if err != nil {
			return err
		}
		o.projHistories = []explore.NamedHistory{h}
	}
	for _, h := range o.projHistories {
		if n := deliveryOrders(h.History, o.projCopies); n.Cmp(big.NewInt(maxProjectionOrders)) > 0 {
			return usagef("-copies: %d copies give history %s %s delivery orders; at most %d are judged (all at once, about 33 KB each): take fewer copies",
				o.projCopies, h.Name, n, maxProjectionOrders)
		}
	}
	return nil
}

// maxProjectionOrders bounds the delivery orders of one history: they are
// judged together, as the replicas of one scenario, which takes about 33 KB
// and 0.1 ms an order: 48,602 orders (two events, 8 copies) took 1.6 GB and
// 6 s; the 705,410 of 10 copies would take over 20 GB.
const maxProjectionOrders = 50_000

// deliveryOrders counts the delivery orders explore.DeliveryOrders would
// enumerate for h with up to copies copies of each event, without
// enumerating them: the events are placed one after another, c copies of
// the next one interleaving with an order of length l in C(l+c, c) ways.
func deliveryOrders(h *scenario.Projection, copies int) *big.Int {
	ways := []*big.Int{big.NewInt(1)} // ways[l]: orders of length l of the events so far
	for _, st := range h.Steps {
		if st.Op != scenario.OpEmit {
			continue
		}
		next := make([]*big.Int, len(ways)+copies)
		for i := range next {
			next[i] = new(big.Int)
		}
		for l, w := range ways {
			for c := 1; c <= copies; c++ {
				next[l+c].Add(next[l+c], new(big.Int).Mul(w, new(big.Int).Binomial(int64(l+c), int64(c))))
			}
		}
		ways = next
	}
	total := new(big.Int)
	for l, w := range ways {
		if l > 0 {
			total.Add(total, w)
		}
	}
	return total
}

// loadHistory reads a history from a scenario file or a corpus case of kind
// projection; its replicas are ignored. A name that is neither a history of
// the catalogue nor a file says which histories there are.
func loadHistory(path string) (explore.NamedHistory, error) {
	if _, err := os.Stat(path); err != nil {
		var names []string
		for _, h := range explore.ProjectionHistories() {
			names = append(names, h.Name)
		}
		return explore.NamedHistory{}, usagef("-history: %q is neither a history (%s) nor a scenario file", path, strings.Join(names, ", "))
	}
	c, err := corpus.LoadAny(path)
	if err != nil {
		return explore.NamedHistory{}, usagef("-history: %v", err)
	}
	if c.IsConsumer() || c.Scenario.Kind != scenario.KindProjection {
		kind := "a consumer-level case"
		if !c.IsConsumer() {
			kind = "a " + string(c.Scenario.Kind) + " scenario"
		}
		return explore.NamedHistory{}, usagef("-history: %s is %s; -projection explores a projection history", path, kind)
	}
	return explore.NamedHistory{Name: path, Doc: "the history of " + path + " (its replicas ignored)", History: c.Scenario.Projection}, nil
}

// projectionHistoryReport is one history of the -json report.
type projectionHistoryReport struct {
	Name     string `json:"name"`
	Doc      string `json:"doc"`
	Orders   int    `json:"orders"`
	Verified bool   `json:"verified"`
	// Order is the shortest failing delivery order; empty when the orders
	// fail only together (replicas diverging) or nothing failed.
	Order          []string            `json:"order,omitempty"`
	Verdict        *properties.Verdict `json:"verdict,omitempty"`
	Counterexample *json.RawMessage    `json:"counterexampleScenario,omitempty"`
	CorpusFile     string              `json:"corpusFile,omitempty"`
}

// projectionExploreReport is the -json form of fuzzrun explore -projection.
type projectionExploreReport struct {
	Target      string                    `json:"target"`
	Copies      int                       `json:"copies"`
	Histories   []projectionHistoryReport `json:"histories"`
	Verified    bool                      `json:"verified"`
	Interrupted bool                      `json:"interrupted,omitempty"`
	// Stopped says what ended the exploration before every history was
	// judged: time, memory or signal ("" when nothing did).
	Stopped string `json:"stopped,omitempty"`
	// Conclusion is the verdict line: which histories were explored.
	Conclusion string `json:"conclusion"`
	HTML       string `json:"html,omitempty"`
	Exit       int    `json:"exit"`
}

// runExploreProjection is fuzzrun explore -projection: each history judged
// under every delivery order with up to -copies copies of each event.
func runExploreProjection(ctx context.Context, o *options, stdout, stderr io.Writer) int {
	start := time.Now()
	rep := projectionExploreReport{Target: o.target.Name, Copies: o.projCopies, Verified: true}
	html := &report.Exploration{World: fmt.Sprintf("every delivery order of each history, each event delivered 1 to %d times", o.projCopies)}
	var cases []report.Case
	// The text report goes out history by history: a history explored
	// with many copies takes minutes.
	text := stdout
	if o.json {
		text = io.Discard
	}
	fmt.Fprintf(text, "explore %s: every delivery order with up to %d copies of each event\n", o.target.Name, o.projCopies)
	orders := int64(0)
	sctx, budget, release := searchContext(ctx, o.duration, o.maxMemory)
	defer release()
	fmt.Fprintf(stderr, "fuzzrun: explore -projection %s: %d history(ies), each event delivered 1 to %d times; budget %s\n",
		o.target.Name, len(o.projHistories), o.projCopies, budget)
	stoppedIn := ""
	for _, h := range o.projHistories {
		if sctx.Err() != nil {
			break
		}
		res, ok, err := exploreProjection(sctx, o, h)
		if !ok {
			stoppedIn = h.Name
			break
		}
		if err != nil {
			return failed(stderr, "-history "+h.Name+": ", err, explore.ErrBounds)
		}
		orders += int64(res.Orders)
		hr := projectionHistoryReport{Name: h.Name, Doc: h.Doc, Orders: res.Orders, Verified: res.Counterexample == nil}
		row := report.HistoryRow{Name: h.Name, Doc: h.Doc, Orders: res.Orders}
		fmt.Fprintf(text, "\nhistory %s: %s\njudged %d delivery orders\n", h.Name, h.Doc, res.Orders)
		cx := res.Counterexample
		if cx == nil {
			row.Verdict = fmt.Sprintf("verified: every delivery order of %s with up to %d copies, %d orders, no violation", h.Name, o.projCopies, res.Orders)
			fmt.Fprintln(text, row.Verdict)
			rep.Histories, html.Histories = append(rep.Histories, hr), append(html.Histories, row)
			continue
		}
		rep.Verified = false
		row.Violated = true
		if rs := cx.Projection.Replicas; len(rs) == 2 {
			hr.Order = rs[1].Deliveries
			row.Verdict = fmt.Sprintf("violation: a shortest failing delivery order of %s is %s", h.Name, strings.Join(hr.Order, " "))
		} else {
			row.Verdict = fmt.Sprintf("violation: no one delivery order of %s fails, but the replicas of all %d orders do not agree", h.Name, res.Orders)
		}
		file, created, err := saveExploreCase(o, res.Verdict, res.Outcome, cx)
		if err != nil {
			return say(stderr, exitInternal, "save the counterexample: %v", err)
		}
		hr.CorpusFile, hr.Verdict, hr.Counterexample = file, &res.Verdict, rawScenario(cx)
		fmt.Fprintf(text, "%s:\n", row.Verdict)
		fmt.Fprint(text, properties.Report(res.Verdict, res.Outcome, exploreReportOptions(o, file)))
		c := exploreCase(o, res.Verdict, res.Outcome, file, created)
		c.Title = res.Verdict.Property + " against " + o.target.Name + ", history " + h.Name
		cases = append(cases, c)
		rep.Histories, html.Histories = append(rep.Histories, hr), append(html.Histories, row)
	}
	if len(rep.Histories) < len(o.projHistories) {
		rep.Stopped = budget.stopped(sctx)
		if rep.Stopped == "" {
			rep.Stopped = stoppedBySignal
		}
		rep.Interrupted = rep.Stopped == stoppedBySignal
		rep.Verified = false
	}
	switch violated := len(cases); {
	case len(rep.Histories) == 1 && len(o.projHistories) == 1:
		html.Verdict, html.Violated = html.Histories[0].Verdict, violated > 0
	case violated > 0:
		html.Verdict, html.Violated = fmt.Sprintf("violation: %d of %d histories fail some delivery order", violated, len(rep.Histories)), true
	case rep.Stopped != "":
		where := ""
		if stoppedIn != "" {
			where = " while judging history " + stoppedIn
		}
		what := "INTERRUPTED"
		if rep.Stopped != stoppedBySignal {
			what = "NOT VERIFIED: stopped"
		}
		html.Verdict = fmt.Sprintf("%s %s%s; %d of %d histories explored, no violation in them", what, budget.by(rep.Stopped), where,
			len(rep.Histories), len(o.projHistories))
	default:
		html.Verdict = fmt.Sprintf("verified: every delivery order of %d histories with up to %d copies, %d orders, no violation", len(rep.Histories), o.projCopies, orders)
	}
	rep.Conclusion = html.Verdict
	switch {
	case len(cases) > 0:
		rep.Exit = exitViolation
	case rep.Stopped != "":
		rep.Exit = exitInconclusive
	}
	rep.HTML = writeReport(o, stderr, &rep.Exit, func() *report.Run {
		return &report.Run{Title: "fuzzrun explore -projection against " + o.target.Name, Mode: "explore", Command: commandLine(o.args),
			Target: o.target.Name, Budget: fmt.Sprintf("%d copies, %s", o.projCopies, budget), Elapsed: time.Since(start), Interrupted: rep.Interrupted,
			Checks: orders, Unit: "delivery orders", Explore: html, Cases: cases}
	})
	if o.json {
		_ = writeJSON(stdout, rep)
	} else {
		if len(o.projHistories) > 1 || rep.Stopped != "" {
			fmt.Fprintf(stdout, "\n%s\n", html.Verdict)
		}
		printReportFile(stdout, rep.HTML)
	}
	return rep.Exit
}

// exploreProjection judges every delivery order of h, unless ctx ends
// first (ok false): explore.ExploreProjection judges them all at once and
// cannot stop part-way, so it is left to finish on its own, its result
// unused.
func exploreProjection(ctx context.Context, o *options, h explore.NamedHistory) (*explore.ProjectionResult, bool, error) {
	type answer struct {
		res *explore.ProjectionResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := explore.ExploreProjection(o.target, h.History, o.projCopies, o.props)
		done <- answer{res, err}
	}()
	select {
	case a := <-done:
		return a.res, true, a.err
	case <-ctx.Done():
		return nil, false, nil
	}
}
