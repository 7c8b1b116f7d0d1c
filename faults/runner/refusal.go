package runner

import (
	"fmt"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/hlc"
	"github.com/idemcheck/idemcheck/impl/system"
)

// refusals is what a projection run tracks so that a refused message has
// consequences: who accepted which event, the messages kept for a retry,
// and the events never emitted because their node never accepted what they
// answer.
type refusals struct {
	mode    scenario.Refusal
	final   bool                       // the last retry, at the end of the history
	knows   map[string]map[string]bool // node -> events it emitted or accepted
	pending map[string][]string        // node -> refused events kept for a retry
	chain   map[string]string          // order -> its previous event in the scenario
	skipped map[string]bool
	nodes   []string
}

func newRefusals(mode scenario.Refusal) refusals {
	if mode == "" {
		mode = scenario.RefusalDrop
	}
	return refusals{mode: mode, knows: map[string]map[string]bool{}, pending: map[string][]string{},
		chain: map[string]string{}, skipped: map[string]bool{}}
}

func (r *refusals) know(node, event string) {
	if r.knows[node] == nil {
		r.knows[node] = map[string]bool{}
	}
	r.knows[node][event] = true
}

func (r *refusals) isSkipped(event string) bool { return r.skipped[event] }

func (w *projWorld) skip(event string) {
	w.skipped[event] = true
	w.res.Skipped = append(w.res.Skipped, event)
}

// unanswerable says why node cannot emit st ("" if it can): the scenario's
// previous event of the order was never emitted, or node never accepted it.
// A service does not answer a message it refused.
func (w *projWorld) unanswerable(st scenario.ProjectionStep) string {
	prev := w.chain[st.Order]
	w.chain[st.Order] = st.ID
	switch {
	case prev == "":
		return ""
	case w.skipped[prev]:
		return fmt.Sprintf("the order's previous event %s was never emitted", prev)
	case !w.knows[st.Node][prev]:
		return fmt.Sprintf("its HLC refused %s, which this event answers", prev)
	}
	return ""
}

// refused records a refusal and says what became of the message.
func (w *projWorld) refused(node, event, again string) string {
	switch {
	case w.mode == scenario.RefusalDrop:
		return "message dropped"
	case w.final:
		return "still refused at the end: message dropped"
	}
	w.pending[node] = append(w.pending[node], event)
	if again == "" {
		return "kept for a retry"
	}
	return "kept for another retry"
}

// retry offers node's kept messages to its HLC again, in the order they
// were refused, before the node's step i.
func (w *projWorld) retry(i int, node string) {
	kept := w.pending[node]
	if len(kept) == 0 {
		return
	}
	w.pending[node] = nil
	c := w.clocks[node]
	label := " (retry)"
	if w.final {
		label = " (last retry)"
	}
	for _, event := range kept {
		w.offer(i, node, event, c, w.res.Events[w.byID[event]].Event.HLC, label)
	}
}

// retryAll is the last retry of every node's kept messages, after the
// history (step is one past the last).
func (w *projWorld) retryAll(step int) {
	w.final = true
	for _, node := range w.nodes {
		w.retry(step, node)
	}
}

// declare records and checks what node's clock declares.
func (w *projWorld) declare(node string) error {
	w.nodes = append(w.nodes, node)
	d := hlc.DeclarationOf(w.clocks[node])
	if err := d.Validate(); err != nil {
		return fmt.Errorf("runner: the HLC of node %s: %w", node, err)
	}
	if d == (hlc.Declaration{}) {
		return nil
	}
	if w.res.Declarations == nil {
		w.res.Declarations = map[string]hlc.Declaration{}
	}
	w.res.Declarations[node] = d
	w.logf("node %s's HLC declares max offset %v, wall granularity %v", node, d.MaxOffset, d.WallGranularity)
	return nil
}

// openHLC builds node's clock with whichever constructor the parts have.
func openHLC(parts *system.Projection, node string, wall clock.Source) (hlc.Clock, error) {
	if parts.OpenHLC == nil {
		return parts.NewHLC(node, wall), nil
	}
	c, err := parts.OpenHLC(node, wall)
	if err != nil {
		return nil, fmt.Errorf("runner: opening the HLC of node %s: %w", node, err)
	}
	return c, nil
}
