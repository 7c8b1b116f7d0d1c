package history

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/internal/law"
)

// groupOffset names a message in a consumer group.
type groupOffset struct {
	group  string
	offset int64
}

// Excused returns the events of h the harness's own faults may have kept
// from being applied (law.Excused): those with an entry in the dead-letter
// queue once quiet for spent attempts, none of whose message's deliveries
// the consumer gave up on by itself.
func Excused(h *History) map[law.GroupKey]bool {
	gaveUp := map[groupOffset]bool{}
	for _, d := range h.Deliveries {
		if d.GaveUp {
			gaveUp[groupOffset{d.Group, d.Offset}] = true
		}
	}
	return law.Excused(h.DLQQuiet, func(group string, offset int64) bool { return gaveUp[groupOffset{group, offset}] })
}

// healthyApplied judges law.HealthyApplied once quiet, before the replay:
// an event whose handler can succeed (not poison) is credited in every
// group, or a message of it sits in that group's DLQ with its attempts
// spent by the harness's own faults (law.Excused).
func healthyApplied(h *History) []Breach {
	if !h.Quiesced {
		return nil // not judged: nothing is quiet to judge
	}
	dead := map[law.GroupKey]bool{}
	for _, d := range h.DLQQuiet {
		dead[law.GroupKey{Group: d.Group, Key: d.Key}] = true
	}
	excused := Excused(h)
	var details []string
	want, got := map[string]int{}, map[string]int{}
	for _, g := range h.Groups {
		for _, e := range h.Events {
			k := law.GroupKey{Group: g, Key: e.ID}
			if e.Poison || !e.Produced || h.Credits[k] > 0 || !dead[k] || excused[k] {
				continue
			}
			id := g + "/" + e.ID
			want[id], got[id] = 1, 0
			var b strings.Builder
			fmt.Fprintf(&b, "%s sits in %s's DLQ, never credited, though the harness's faults did not spend its attempts; its deliveries:", e.ID, g)
			for _, d := range h.Deliveries {
				if d.Group == g && d.Event == e.ID {
					b.WriteString("\n      " + d.Account.String())
				}
			}
			details = append(details, b.String())
		}
	}
	if len(details) == 0 {
		return nil
	}
	b := Breach{Law: law.HealthyApplied, Summary: "a healthy event was dead-lettered, never credited, though the harness's faults did not spend its attempts", Details: details}
	b.Diff = gocmp.Diff(want, got)
	return []Breach{b}
}

// notReenqueued judges law.NotReenqueued: the producer enqueues a key
// whose produce committed once, never again. A live history reports the
// first key enqueued a second time, in one line; the others every such
// key, by name.
func notReenqueued(h *History) []Breach {
	type topicKey struct{ tenant, topic, key string }
	offsets := map[topicKey][]int64{}
	var again []topicKey // keys in the order of their second enqueue
	for _, p := range h.Produces {
		if p.Origin != broker.Produced {
			continue
		}
		k := topicKey{p.Tenant, p.Topic, p.Key}
		offsets[k] = append(offsets[k], p.Offset)
		if len(offsets[k]) == 2 {
			again = append(again, k)
		}
	}
	if len(again) == 0 {
		return nil // the passing path builds no report
	}
	const summary = "a committed key was enqueued again"
	if h.Source == Live {
		k := again[0]
		offs := offsets[k]
		return []Breach{{Law: law.NotReenqueued, Summary: summary,
			Details: []string{fmt.Sprintf("%s was enqueued twice: offsets %d and %d", k.key, offs[0], offs[1])}}}
	}
	name := func(k topicKey) string { return k.tenant + "/" + k.topic + "/" + k.key }
	slices.SortFunc(again, func(a, b topicKey) int { return strings.Compare(name(a), name(b)) })
	var out []Breach
	for _, k := range again {
		offs := offsets[k]
		out = append(out, Breach{Law: law.NotReenqueued, Summary: summary,
			Details: []string{fmt.Sprintf("%s was enqueued by the producer %d times (offsets %v) after its produce committed", name(k), len(offs), offs)}})
	}
	return out
}

// dlqOnce judges law.DLQOnce over the final dead-letter queue: no message
// of a group is dead-lettered twice.
func dlqOnce(h *History) []Breach {
	n := map[groupOffset]int{}
	for _, d := range h.DLQ {
		n[groupOffset{d.Group, d.Offset}]++
	}
	ids := slices.SortedFunc(maps.Keys(n), func(a, b groupOffset) int {
		return cmp.Or(strings.Compare(a.group, b.group), cmp.Compare(a.offset, b.offset))
	})
	var out []Breach
	for _, id := range ids {
		if n[id] > 1 {
			out = append(out, Breach{Law: law.DLQOnce, Summary: "a message was dead-lettered twice",
				Details: []string{fmt.Sprintf("group %s offset %d was dead-lettered %d times", id.group, id.offset, n[id])}})
		}
	}
	return out
}
