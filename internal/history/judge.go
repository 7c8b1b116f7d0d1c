package history

import (
	"maps"
	"slices"
	"sync"

	"github.com/idemcheck/idemcheck/internal/hunt"
	"github.com/idemcheck/idemcheck/internal/law"
)

// Breach is one law broken in one run.
type Breach = hunt.Breach

// Func judges one law over a history and returns its breaches, each under
// the law's ID, in the words of the history's Source.
type Func func(*History) []Breach

var (
	mu sync.RWMutex
	// judges is the judge table: the one function of each law judged over
	// a history, by law ID.
	judges = map[string]Func{
		law.HealthyApplied: healthyApplied,
		law.NotReenqueued:  notReenqueued,
		law.DLQOnce:        dlqOnce,
	}
)

// Judges returns the IDs of the laws the judge table holds, sorted.
func Judges() []string {
	mu.RLock()
	defer mu.RUnlock()
	return slices.Sorted(maps.Keys(judges))
}

// For returns the judge function of the law id.
func For(id string) (Func, bool) {
	mu.RLock()
	defer mu.RUnlock()
	f, ok := judges[id]
	return f, ok
}

// Register adds the judge function of a law the registry holds (see
// law.Register) and returns what removes it again: how a law kept outside
// this package, a test's, is judged by every driver.
func Register(id string, f Func) (remove func()) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := judges[id]; dup {
		panic("history: law " + id + " already has a judge function")
	}
	judges[id] = f
	return func() {
		mu.Lock()
		defer mu.Unlock()
		delete(judges, id)
	}
}

// NotApplicable is why a law of the registry is not judged over a history:
// it needs what no History holds ("" when the law is applicable).
func NotApplicable(id string) string {
	l, ok := law.Lookup(id)
	switch {
	case !ok:
		return "no law of the registry"
	case l.Needs != law.BlackBox:
		return "needs the " + l.Needs.String() + ", which a black box does not show"
	}
	return ""
}

// OfProperty returns, in registry order, the laws of property p that the
// judge table holds, but for those in except: the laws a driver judges
// over a history, less those it still judges with its own code.
func OfProperty(p string, except ...string) []string {
	var out []string
	for _, l := range law.Of(p) {
		if _, ok := For(l.ID); ok && !slices.Contains(except, l.ID) {
			out = append(out, l.ID)
		}
	}
	return out
}

// Judge judges h by each law of ids that the judge table holds and that a
// history can show, in the order of ids.
func Judge(h *History, ids ...string) []Breach {
	var out []Breach
	for _, id := range ids {
		f, ok := For(id)
		if !ok || NotApplicable(id) != "" {
			continue
		}
		out = append(out, f(h)...)
	}
	return out
}
