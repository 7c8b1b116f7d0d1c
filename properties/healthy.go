package properties

import (
	"fmt"
	"strings"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/reference/consumer"
	"github.com/idemcheck/idemcheck/internal/law"
)

// runDelivery is one delivery of a consumption run, rebuilt from its
// actions: what the pipeline did with it and what the harness did to it.
type runDelivery struct {
	worker, group, event string
	offset               int64
	attempts             int
	atMs                 int64
	line                 int
	claimedAtMs          int64
	// faults are the harness's doing: the event's fate failing the
	// handler, a crash, the lease lost to a takeover, the ack deadline
	// passed while the worker held it, a claim locked by a delivery the
	// harness stalled or crashed.
	faults []string
	// end is how the pipeline settled it (ack, nack, dead-letter), "" while
	// it is held or when it was dropped or crashed.
	end runner.ActionKind
	// gaveUp: it was nacked or dead-lettered with no fault of the harness.
	gaveUp bool
	what   []string
}

// rebuildDeliveries replays r's actions up to the final replay into its
// deliveries.
func rebuildDeliveries(r *runner.ConsumptionResult) []*runDelivery {
	var ds []*runDelivery
	cur := map[string]*runDelivery{}    // worker -> the delivery in hand
	holder := map[string]*runDelivery{} // group/event -> the claim's last acquirer
	for i := range r.Actions {
		a := &r.Actions[i]
		if a.Phase == runner.PhaseReplay || a.Phase == runner.PhaseProbe {
			break
		}
		switch {
		case a.Kind == runner.ActDeliver:
			d := &runDelivery{worker: a.Worker, group: a.Key.Consumer, event: a.Key.ID, offset: a.Offset, attempts: a.Attempts, atMs: a.AtMs, line: a.Line}
			ds = append(ds, d)
			cur[a.Worker] = d
		case a.Kind == runner.ActCrash:
			if d := cur[a.Worker]; d != nil && a.Busy {
				d.faults = append(d.faults, fmt.Sprintf("crash (line %d)", a.Line))
			}
			delete(cur, a.Worker)
		case a.Kind.IsWorkerStep():
			d := cur[a.Worker]
			if d == nil {
				continue
			}
			d.step(a, r, holder)
		}
	}
	return ds
}

// step records worker step a of delivery d.
func (d *runDelivery) step(a *runner.Action, r *runner.ConsumptionResult, holder map[string]*runDelivery) {
	ackTimeoutMs := r.Config.AckTimeoutMs
	if a.Stale {
		d.faults = append(d.faults, fmt.Sprintf("lease lost to a takeover (line %d)", a.Line))
	}
	switch a.Kind {
	case runner.ActClaim:
		if a.Claim == nil {
			return
		}
		switch a.Claim.Outcome {
		case store.Acquired:
			holder[keyID(a.Key)] = d
			d.claimedAtMs = a.AtMs
		case store.Locked:
			d.what = append(d.what, "claim locked")
			h := holder[keyID(a.Key)]
			switch {
			case h == nil:
			case h.end == "":
				// Held by a delivery in progress (a copy delivered
				// alongside, a stalled worker) or abandoned by a crash or a
				// takeover: the harness's doing.
				d.faults = append(d.faults, fmt.Sprintf("claim held by %s's delivery of line %d, unsettled (line %d)", h.worker, h.line, a.Line))
			case r.Conventions.FailedAttempt == store.FailedAttemptKeptMark && len(h.faults) > 0 && a.AtMs < h.claimedAtMs+r.Conventions.HoldMs(r.Config.LeaseMs):
				// The store declares that a failed attempt keeps its mark
				// until its hold ends (its lease, or the mark's own
				// expiry), and that attempt failed by the harness's
				// doing: the lock is its consequence.
				d.faults = append(d.faults, fmt.Sprintf("claim kept by %s's failed attempt of line %d until its hold ends (kept-mark; line %d)", h.worker, h.line, a.Line))
			}
		}
	case runner.ActHandle:
		if a.Handler != nil {
			d.what = append(d.what, "handler "+string(a.Handler.Kind))
			if a.Handler.Kind == consumer.Transient {
				d.faults = append(d.faults, fmt.Sprintf("the event's fate failed the handler (line %d)", a.Line))
			}
		}
	case runner.ActNack, runner.ActDeadLetter:
		if a.AtMs >= d.atMs+ackTimeoutMs {
			d.faults = append(d.faults, fmt.Sprintf("ack deadline passed while the worker held it (line %d)", a.Line))
		}
		reason := ""
		if a.Handler != nil {
			reason = fmt.Sprintf(" %q", a.Handler.Reason)
		}
		d.what = append(d.what, fmt.Sprintf("%s%s (line %d)", a.Kind, reason, a.Line))
		d.end, d.gaveUp = a.Kind, len(d.faults) == 0
	case runner.ActAck:
		d.what = append(d.what, fmt.Sprintf("ack (line %d)", a.Line))
		if d.end == "" {
			d.end = runner.ActAck
		}
	}
}

func (d *runDelivery) String() string {
	harness := "the harness did nothing to it"
	if len(d.faults) > 0 {
		harness = "the harness caused: " + strings.Join(d.faults, ", ")
	}
	what := "no settlement (dropped or crashed)"
	if len(d.what) > 0 {
		what = strings.Join(d.what, ", ")
	}
	return fmt.Sprintf("line %d: %s got %s/%s (offset %d, attempt %d): %s; %s", d.line, d.worker, d.group, d.event, d.offset, d.attempts, what, harness)
}

// healthyApplied judges nothing-lost/healthy-applied once the system
// quiesced, before the replay: an event whose handler can succeed (not
// poison) is credited in every group, or a message of it sits in that
// group's DLQ with its attempts spent by the harness's own faults: no
// delivery of that message was nacked or dead-lettered without one.
func healthyApplied(r *runner.ConsumptionResult) []Breach {
	credited := map[string]int{}
	for _, e := range r.LedgerBeforeReplay {
		credited[e.Consumer+"/"+e.EventID]++
	}
	ds := rebuildDeliveries(r)
	// A message the consumer gave up on by itself, by group and offset.
	type msg struct {
		group  string
		offset int64
	}
	gaveUp := map[msg]bool{}
	for _, d := range ds {
		if d.gaveUp {
			gaveUp[msg{d.group, d.offset}] = true
		}
	}
	dead := map[string]bool{}
	for _, d := range r.DLQBeforeReplay {
		dead[d.Group+"/"+d.Key] = true
	}
	excused := law.Excused(r.DLQBeforeReplay, func(group string, offset int64) bool { return gaveUp[msg{group, offset}] })
	produced := map[string]bool{}
	for _, m := range r.Messages {
		produced[m.Message.Key] = true
	}
	var details []string
	want, got := map[string]int{}, map[string]int{}
	for _, g := range r.Config.Consumers {
		for _, e := range r.Events {
			id := g + "/" + e.ID
			if e.Fate == scenario.FatePoison || !produced[e.ID] || credited[id] > 0 || !dead[id] {
				continue
			}
			if excused[law.GroupKey{Group: g, Key: e.ID}] {
				continue
			}
			want[id], got[id] = 1, 0
			var b strings.Builder
			fmt.Fprintf(&b, "%s sits in %s's DLQ, never credited, though the harness's faults did not spend its attempts; its deliveries:", e.ID, g)
			for _, d := range ds {
				if d.group == g && d.event == e.ID {
					b.WriteString("\n      " + d.String())
				}
			}
			details = append(details, b.String())
		}
	}
	if len(details) == 0 {
		return nil
	}
	b := breach(LawHealthyApplied, "a healthy event was dead-lettered, never credited, though the harness's faults did not spend its attempts", details...)
	b.Diff = gocmp.Diff(want, got)
	return []Breach{b}
}
