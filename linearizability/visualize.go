package linearizability

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// visualization is what WriteVisualization draws: porcupine's linearization
// info of the violating keys, with annotations added.
type visualization struct {
	model porcupine.Model
	info  porcupine.LinearizationInfo
}

// maxBlamed bounds the operations named per violating key. On a hot key
// many operations can be pending at the point a linearization got stuck;
// the first few say what happened.
const maxBlamed = 5

// AnnotationTag prefixes the row of annotations that marks the operations
// of a violating key that cannot be linearized.
const AnnotationTag = "violation"

// explain re-checks the violating keys with porcupine's verbose checker,
// which keeps the longest partial linearizations, and from them tells, for
// each key, the state a linearization got stuck in and the operations that
// could come next but that state forbids. Those operations are annotated on
// the visualization.
func explain(parts []keyHistory, timeout time.Duration, conv store.Conventions) (*visualization, []string) {
	m := ModelFor(conv)
	var ops []Op
	for _, p := range parts {
		ops = append(ops, p.ops...)
	}
	// partitionOps numbers partitions in order of first appearance, which is
	// the order of parts here.
	verdict, info := porcupine.CheckOperationsVerbose(m, toPorcupine(ops), timeout)
	partials := info.PartialLinearizationsOperations()
	var notes []string
	var anns []porcupine.Annotation
	for i, p := range parts {
		if i >= len(partials) {
			break
		}
		note, a := explainKey(p, partials[i], spec{conv})
		if verdict == porcupine.Unknown {
			note += " (the explanation timed out and may be incomplete)"
		}
		notes = append(notes, note)
		anns = append(anns, a...)
	}
	info.AddAnnotations(anns)
	return &visualization{model: m, info: info}, notes
}

// explainKey explains one violating key from its partial linearizations.
func explainKey(p keyHistory, partials [][]porcupine.Operation, sp spec) (string, []porcupine.Annotation) {
	longest := longestPartial(partials)
	state := ModelFor(sp.conv).Init()
	in := map[int64]bool{} // by call stamp, unique in a history
	for _, op := range longest {
		_, state = sp.step(state, op.Input, op.Output)
		in[op.Call] = true
	}
	// The operations that could come next: not yet linearized, and called
	// before every other such operation returned.
	minReturn := Never
	for _, op := range p.ops {
		if !in[op.Call] {
			minReturn = min(minReturn, op.Return)
		}
	}
	var stuck []string
	var anns []porcupine.Annotation
	for _, op := range p.ops {
		if in[op.Call] || op.Call > minReturn {
			continue
		}
		if ok, _ := sp.step(state, op.Input, op.Output); ok {
			// Allowed here but every continuation from it failed: not one
			// of the operations to blame.
			continue
		}
		if len(stuck) == maxBlamed {
			stuck = append(stuck, "and more")
			break
		}
		desc := describeOperation(op.Input, op.Output)
		stuck = append(stuck, fmt.Sprintf("client %d: %s", op.Client, desc))
		end := op.Return
		if end == Never {
			end = op.Call
		}
		anns = append(anns, porcupine.Annotation{
			Tag:             AnnotationTag + " " + p.key.String(),
			Start:           op.Call,
			End:             end,
			Description:     "✗ " + desc,
			Details:         fmt.Sprintf("Not linearizable: after %d of %d operations on %s the key is %s, which does not allow this operation, nor any other that could come next.", len(longest), len(p.ops), p.key, describeState(state)),
			TextColor:       "#ffffff",
			BackgroundColor: "#c0392b",
		})
	}
	note := fmt.Sprintf("%s: %d operations; the longest linearizable prefix has %d, after which the key is %s and none of these can come next: %s",
		p.key, len(p.ops), len(longest), describeState(state), strings.Join(stuck, "; "))
	return note, anns
}

// longestPartial picks the longest partial linearization; among equally long
// ones, the first by call stamps, because porcupine returns them in map
// order and the explanation must not change from run to run.
func longestPartial(partials [][]porcupine.Operation) []porcupine.Operation {
	var best []porcupine.Operation
	for _, l := range partials {
		if best == nil || len(l) > len(best) || len(l) == len(best) && slices.CompareFunc(l, best, func(a, b porcupine.Operation) int {
			return cmp.Compare(a.Call, b.Call)
		}) < 0 {
			best = l
		}
	}
	return best
}

// WriteVisualization writes porcupine's HTML page of a violation to path:
// the histories of the first violating keys, their longest partial
// linearizations, and annotations on the operations that cannot be
// linearized. It is an error to call it for a result that is not a
// violation.
func WriteVisualization(path string, r Result) error {
	if r.Verdict != Violation || r.viz == nil {
		return errors.New("linearizability: only a violation has a visualization")
	}
	return porcupine.VisualizePath(r.viz.model, r.viz.info, path)
}
