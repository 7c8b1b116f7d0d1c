// Package hlclaw is the specification of a Hybrid Logical Clock: the laws any
// HLC must obey, as pure predicates over what a run observed, and the
// canonical algorithm (Kulkarni et al.) used to explain a violation by showing
// what a correct clock would have said.
//
// It is pure and knows nothing of the implementation: timestamps are its own
// Stamp type, so the laws judge any HLC the runner can observe.
package hlclaw

import (
	"cmp"
	"fmt"
	"math"
	"strings"

	"github.com/idemcheck/idemcheck/internal/law"
)

// Stamp is an HLC timestamp: wall milliseconds (and, for clocks that stamp
// finer, the same wall in nanoseconds), a logical counter that orders events
// within one wall value, and the node that made it.
type Stamp struct {
	WallMs int64
	// WallNs is zero for millisecond stamps; otherwise WallMs is WallNs/1e6
	// rounded down.
	WallNs  int64
	Logical uint32
	Node    string
}

// Compare is the total order of HLC timestamps: by wall, then logical, then
// node name. The node breaks ties between concurrent events of two nodes, so
// two distinct nodes never produce equal stamps.
func Compare(a, b Stamp) int {
	return cmp.Or(cmp.Compare(a.WallMs, b.WallMs), cmp.Compare(a.WallNs, b.WallNs), cmp.Compare(a.Logical, b.Logical), cmp.Compare(a.Node, b.Node))
}

// String renders a stamp as wall.logical@node.
func (s Stamp) String() string {
	if s.WallNs != 0 {
		return fmt.Sprintf("%dns.%d@%s", s.WallNs, s.Logical, s.Node)
	}
	return fmt.Sprintf("%d.%d@%s", s.WallMs, s.Logical, s.Node)
}

// wallNs is the stamp's wall in nanoseconds, whichever unit it was made in.
func (s Stamp) wallNs() int64 {
	if s.WallNs != 0 {
		return s.WallNs
	}
	return s.WallMs * 1e6
}

// Tick is the canonical HLC's answer for a local or send event on node when
// its last stamp is prev (the zero Stamp if none) and the physical clock reads
// physMs: the physical time if it moved past prev, otherwise prev one logical
// step later. It never goes below prev, whatever the physical clock did.
func Tick(node string, prev Stamp, physMs int64) Stamp {
	if physMs > prev.WallMs {
		return Stamp{WallMs: physMs, Node: node}
	}
	return after(node, prev.WallMs, prev.Logical)
}

// Merge is the canonical HLC's answer on receiving remote: the greatest of the
// local stamp, the remote stamp and the physical time, one logical step past
// whichever stamps share that wall value. The result is strictly later than
// both prev and remote.
func Merge(node string, prev, remote Stamp, physMs int64) Stamp {
	wall := max(prev.WallMs, remote.WallMs, physMs)
	switch {
	case wall == prev.WallMs && wall == remote.WallMs:
		return after(node, wall, max(prev.Logical, remote.Logical))
	case wall == prev.WallMs:
		return after(node, wall, prev.Logical)
	case wall == remote.WallMs:
		return after(node, wall, remote.Logical)
	}
	return Stamp{WallMs: wall, Node: node}
}

// after is the smallest (wall, logical) past (wall, logical): the counter
// carries into the wall when it would overflow, which keeps the order strict.
func after(node string, wall int64, logical uint32) Stamp {
	if logical == math.MaxUint32 {
		return Stamp{WallMs: wall + 1, Node: node}
	}
	return Stamp{WallMs: wall, Logical: logical + 1, Node: node}
}

// Law names one HLC law, by its ID in the law registry (package
// internal/law).
type Law string

// The laws. Each is a necessary property of any correct HLC, not of one
// algorithm: an implementation that differs from Tick and Merge but obeys
// these is correct.
const (
	// Monotonic: each reading of a node is later than the node's previous
	// one, including across a wall-clock step backwards.
	Monotonic Law = law.Monotonic
	// MergeDominates: a merge is later than the remote stamp it received
	// (and, by Monotonic, than the local one).
	MergeDominates Law = law.MergeDominates
	// PhysicalBound: a stamp's wall is never behind the node's physical
	// reading at the time, so HLC time stays close to real time.
	PhysicalBound Law = law.PhysicalBound
	// OwnNode: a node stamps with its own name, or the tie-break of the
	// total order would not separate two nodes' events.
	OwnNode Law = law.OwnNode
	// Causality: an event that happened before another has a smaller stamp.
	Causality Law = law.Causality
	// RefuseOnlyBeyondMaxOffset: a clock refuses a remote stamp only when
	// its wall is further ahead of the node's physical clock than the max
	// offset the clock declares; a clock that declares none never refuses.
	// A stamp merely delayed (behind the physical clock) is never beyond.
	RefuseOnlyBeyondMaxOffset Law = law.RefuseBeyondOffset
)

// Op is what a node asked its HLC for.
type Op string

// The HLC operations: a burst is many ticks within one instant, observed
// as one reading.
const (
	OpTick  Op = "tick"
	OpMerge Op = "merge"
	OpBurst Op = "burst"
)

// Reading is one observed HLC operation.
type Reading struct {
	Node string
	Op   Op
	// PhysMs is the node's wall-clock reading when the HLC was asked.
	PhysMs int64
	// WallChangeMs is how far the node's wall clock was moved (by a skew
	// change or a step) since its previous reading; negative is backwards.
	WallChangeMs int64
	// HasPrev says whether the node had a previous reading, Prev.
	HasPrev bool
	Prev    Stamp
	// Remote is the received stamp (merge only).
	Remote Stamp
	// Got is what the HLC returned (nothing when it refused); for a burst,
	// its last stamp.
	Got Stamp
	// Runs are a burst's stamps (OpBurst), in order (see Run); Prev is the
	// node's stamp before the burst, and WallChangeMs applies to its first
	// tick.
	Runs []Run
	// Refused says the clock refused the remote stamp (merge only): it
	// returned an error and no stamp.
	Refused bool
	// MaxOffsetNs is the max offset the clock declares (0: none), and
	// GranularityNs how coarse its wall is by design (0: exact).
	MaxOffsetNs   int64
	GranularityNs int64
	// Sent, when known, says how the remote stamp was made (merge only):
	// what tells a sender whose clock runs behind from a message delayed
	// in transit when a refusal is explained.
	Sent *Sending
	// TrueMs is true time at the reading, when known (0: unknown).
	TrueMs int64
}

// Sending is how a received stamp was made: by which node, when its
// physical clock read PhysMs at true time TrueMs.
type Sending struct {
	Node   string
	PhysMs int64
	TrueMs int64
}

// Beyond reports whether remote is further ahead of the physical reading
// physMs than maxOffsetNs: the only case where a refusal is allowed.
func Beyond(remote Stamp, physMs, maxOffsetNs int64) bool {
	return maxOffsetNs > 0 && remote.wallNs()-physMs*1e6 > maxOffsetNs
}

// Violation is one broken law.
type Violation struct {
	Law Law
	// Index is the position of the reading (or, for Causality, of the later
	// event) in the list checked.
	Index  int
	Detail string
	// Tick is, for a burst, the first of its ticks (from 1) that breaks the
	// law, and Ticks how many of them do; both are zero otherwise.
	Tick, Ticks int
}

// CheckReadings returns every law the readings break, in reading order. A
// burst (OpBurst) is judged tick by tick, but reported once per law it
// breaks, with the first tick that breaks it and how many do.
func CheckReadings(rs []Reading) []Violation {
	var out []Violation
	for i, r := range rs {
		if r.Op == OpBurst {
			out = append(out, checkBurst(i, r)...)
			continue
		}
		out = checkOne(out, i, r)
	}
	return out
}

// checkOne appends the laws reading r (at index i) breaks to out.
func checkOne(out []Violation, i int, r Reading) []Violation {
	add := func(l Law, format string, args ...any) {
		out = append(out, Violation{Law: l, Index: i, Detail: fmt.Sprintf(format, args...)})
	}
	if r.Refused {
		// A refused merge returned no stamp: only the refusal is judged.
		if !Beyond(r.Remote, r.PhysMs, r.MaxOffsetNs) {
			add(RefuseOnlyBeyondMaxOffset, "node %s refused remote %s with its physical clock at %d: %s", r.Node, r.Remote, r.PhysMs, refusalWhy(r))
		}
		return out
	}
	if r.Got.Node != r.Node {
		add(OwnNode, "node %s %s returned %s, stamped with another node's name", r.Node, r.Op, r.Got)
	}
	if r.HasPrev && Compare(r.Got, r.Prev) <= 0 {
		step := ""
		if r.WallChangeMs < 0 {
			step = fmt.Sprintf(", right after its wall clock was moved back %d ms", -r.WallChangeMs)
		}
		add(Monotonic, "node %s %s went from %s to %s, not later%s", r.Node, r.Op, r.Prev, r.Got, step)
	}
	if r.Op == OpMerge && Compare(r.Got, r.Remote) <= 0 {
		add(MergeDominates, "node %s merged remote %s and returned %s, not later than it", r.Node, r.Remote, r.Got)
	}
	if lag := r.PhysMs*1e6 - r.Got.wallNs(); lag > 0 && lag >= max(r.GranularityNs, 1) {
		if r.GranularityNs > 0 {
			add(PhysicalBound, "node %s %s returned wall %dns, %dns behind its physical clock %dms: more than the declared granularity %dns", r.Node, r.Op, r.Got.wallNs(), lag, r.PhysMs, r.GranularityNs)
		} else {
			add(PhysicalBound, "node %s %s returned wall %d behind its physical clock %d", r.Node, r.Op, r.Got.WallMs, r.PhysMs)
		}
	}
	return out
}

// refusalWhy says why a refusal was not allowed, naming what put the stamp
// where it was: the sender's clock, the time in transit, or this node's own
// clock, as far as the reading knows them.
func refusalWhy(r Reading) string {
	ahead := r.Remote.wallNs() - r.PhysMs*1e6
	switch {
	case r.MaxOffsetNs == 0:
		return "the clock declares no max offset, so it must never refuse"
	case ahead <= 0:
		return fmt.Sprintf("the stamp is %s behind this node's physical clock, not ahead of it (%s); a stamp behind the clock is never beyond the declared max offset of %s",
			msText(-ahead), behindWhy(r), msText(r.MaxOffsetNs))
	}
	return fmt.Sprintf("the stamp is %s ahead, within the declared max offset of %s", msText(ahead), msText(r.MaxOffsetNs))
}

// behindWhy names what put a remote stamp behind the receiver's clock.
func behindWhy(r Reading) string {
	s := r.Sent
	if s == nil {
		return "delayed in transit, or made by a sender whose clock runs behind"
	}
	senderOff := s.PhysMs - s.TrueMs
	parts := []string{}
	if senderOff != 0 {
		dir := "behind"
		if senderOff > 0 {
			dir = "ahead of"
		}
		parts = append(parts, fmt.Sprintf("its sender %s's clock ran %s %s true time when it stamped it", s.Node, msText(abs(senderOff)*1e6), dir))
	}
	if r.TrueMs != 0 {
		if transit := r.TrueMs - s.TrueMs; transit != 0 {
			parts = append(parts, fmt.Sprintf("it spent %s in transit", msText(transit*1e6)))
		}
		if own := r.PhysMs - r.TrueMs; own != 0 {
			dir := "behind"
			if own > 0 {
				dir = "ahead of"
			}
			parts = append(parts, fmt.Sprintf("this node's clock runs %s %s true time", msText(abs(own)*1e6), dir))
		}
	}
	if len(parts) == 0 {
		return fmt.Sprintf("made by %s", s.Node)
	}
	return strings.Join(parts, "; ")
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// msText renders a nanosecond span in milliseconds, with the fraction only
// when there is one.
func msText(ns int64) string {
	if ns%1e6 == 0 {
		return fmt.Sprintf("%dms", ns/1e6)
	}
	return fmt.Sprintf("%.3fms", float64(ns)/1e6)
}

// Action is one step of a causal history: Node emits the event named Emit,
// or receives the event named Receive (exactly one is set).
type Action struct {
	Node    string
	Emit    string
	Receive string
}

// CausalPasts returns, for every emitted event, the events that happened
// before it (Lamport's relation): those its node had emitted or received
// before emitting it, and transitively everything those had in their past.
// Each list is in emission order. Receiving an event not yet emitted is
// ignored: it cannot carry a past.
func CausalPasts(actions []Action) map[string][]string {
	index := map[string]int{}
	var order []string
	past := map[string]map[string]bool{}
	known := map[string]map[string]bool{}
	learn := func(node, e string) {
		if known[node] == nil {
			known[node] = map[string]bool{}
		}
		known[node][e] = true
		for p := range past[e] {
			known[node][p] = true
		}
	}
	for _, a := range actions {
		switch {
		case a.Emit != "":
			p := map[string]bool{}
			for e := range known[a.Node] {
				p[e] = true
			}
			past[a.Emit] = p
			index[a.Emit] = len(order)
			order = append(order, a.Emit)
			learn(a.Node, a.Emit)
		case a.Receive != "":
			if _, ok := past[a.Receive]; ok {
				learn(a.Node, a.Receive)
			}
		}
	}
	out := map[string][]string{}
	for _, e := range order {
		list := []string{}
		// Walking the emission order (not the set) keeps the result
		// deterministic and readable.
		for _, q := range order[:index[e]] {
			if past[e][q] {
				list = append(list, q)
			}
		}
		out[e] = list
	}
	return out
}

// Emission is an emitted event with its stamp and its causal past.
type Emission struct {
	Event string
	Stamp Stamp
	Past  []string
}

// CheckCausality returns a violation for every pair where an event that
// happened before another does not have a smaller stamp.
func CheckCausality(es []Emission) []Violation {
	stamps := map[string]Stamp{}
	for _, e := range es {
		stamps[e.Event] = e.Stamp
	}
	var out []Violation
	for i, e := range es {
		for _, p := range e.Past {
			ps, ok := stamps[p]
			switch {
			case !ok:
				out = append(out, Violation{Law: Causality, Index: i, Detail: fmt.Sprintf("%s has %s in its past, which was never emitted", e.Event, p)})
			case Compare(ps, e.Stamp) >= 0:
				out = append(out, Violation{Law: Causality, Index: i, Detail: fmt.Sprintf("%s (%s) happened before %s (%s) but does not compare earlier", p, ps, e.Event, e.Stamp)})
			}
		}
	}
	return out
}
