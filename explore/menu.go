package explore

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/idemcheck/idemcheck/faults/scenario"
)

// FullMenu is every step kind of the Scenario vocabulary.
var FullMenu = []string{
	string(scenario.OpProduce), string(scenario.OpProduceFail), string(scenario.OpDuplicate),
	string(scenario.OpDeliver), string(scenario.OpRun), string(scenario.OpCrash),
	string(scenario.OpAdvance), string(scenario.OpSkew), string(scenario.OpClockStep),
	string(scenario.OpCleanup), string(scenario.OpReplay),
}

// CoreMenu is the steps of a fault-free run and the faults that matter most
// for consumption: duplicates, crashes and time passing.
var CoreMenu = []string{"produce", "duplicate", "deliver", "run", "crash", "advance"}

// Steps expands a menu of step kinds into the concrete steps tried from
// every state, in a fixed order. A kind may carry a value after a colon:
// "advance:MS" (default: the ack timeout), "skew:MS" (default: the
// retention window ahead), "clock-step:MS" (default: the retention window
// back), "duplicate:N" copies (default 1), "deliver:P" picks (default: one
// per event). Every event, worker and node gets its own step.
func Steps(sc *scenario.Consumption, menu []string) ([]scenario.Step, error) {
	if len(menu) == 0 {
		return nil, fmt.Errorf("step menu: empty")
	}
	cfg := sc.Config
	var out []scenario.Step
	seen := map[string]bool{}
	for _, item := range menu {
		kind, arg, hasArg := strings.Cut(strings.TrimSpace(item), ":")
		// An old spelling ("step") names the op it now is ("run"), and
		// listing both is listing one op twice.
		op := scenario.Canonical(scenario.Op(kind))
		key := string(op) + strings.TrimPrefix(strings.TrimSpace(item), kind)
		if seen[key] {
			return nil, fmt.Errorf("step menu: %q is listed twice", item)
		}
		seen[key] = true
		num := func(def int64) (int64, error) {
			if !hasArg {
				return def, nil
			}
			v, err := strconv.ParseInt(arg, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("step menu: %q: %q is not an integer", item, arg)
			}
			return v, nil
		}
		switch op {
		case scenario.OpProduce, scenario.OpProduceFail:
			if hasArg {
				return nil, fmt.Errorf("step menu: %q takes no value", kind)
			}
			for i := range sc.Events {
				out = append(out, scenario.Step{Op: op, Event: i})
			}
		case scenario.OpDuplicate:
			n, err := num(1)
			if err != nil {
				return nil, err
			}
			if n < 1 || n > 9 {
				return nil, fmt.Errorf("step menu: %q: copies must be 1..9", item)
			}
			for i := range sc.Events {
				out = append(out, scenario.Step{Op: op, Event: i, N: int(n)})
			}
		case scenario.OpDeliver:
			picks, err := num(int64(len(sc.Events)))
			if err != nil {
				return nil, err
			}
			if picks < 1 || picks > 16 {
				return nil, fmt.Errorf("step menu: %q: picks must be 1..16", item)
			}
			for _, w := range cfg.Workers {
				for p := range picks {
					out = append(out, scenario.Step{Op: op, Worker: w.Name, Pick: int(p)})
				}
			}
		case scenario.OpRun, scenario.OpCrash, scenario.OpCleanup:
			if hasArg {
				return nil, fmt.Errorf("step menu: %q takes no value", kind)
			}
			for _, w := range cfg.Workers {
				out = append(out, scenario.Step{Op: op, Worker: w.Name})
			}
		case scenario.OpAdvance:
			ms, err := num(cfg.AckTimeoutMs)
			if err != nil {
				return nil, err
			}
			if ms <= 0 {
				return nil, fmt.Errorf("step menu: %q: time only moves forward", item)
			}
			out = append(out, scenario.Step{Op: op, Ms: ms})
		case scenario.OpSkew, scenario.OpClockStep:
			def := cfg.RetentionMs
			if op == scenario.OpClockStep {
				def = -cfg.RetentionMs
			}
			ms, err := num(def)
			if err != nil {
				return nil, err
			}
			for _, n := range cfg.Nodes {
				out = append(out, scenario.Step{Op: op, Node: n.Name, Ms: ms})
			}
		case scenario.OpReplay:
			if hasArg {
				return nil, fmt.Errorf("step menu: %q takes no value", kind)
			}
			out = append(out, scenario.Step{Op: op})
		default:
			return nil, fmt.Errorf("step menu: unknown step %q (known: %s)", kind, strings.Join(FullMenu, ", "))
		}
	}
	return out, nil
}

// ParseMenu splits a comma-separated menu; "full" and "core" name FullMenu
// and CoreMenu. An op's old spelling is given its current name ("step:x"
// is "run:x"), so that what a search reports names ops as the vocabulary
// does.
func ParseMenu(s string) []string {
	switch s {
	case "full", "":
		return slices.Clone(FullMenu)
	case "core":
		return slices.Clone(CoreMenu)
	}
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			kind, arg, hasArg := strings.Cut(p, ":")
			p = string(scenario.Canonical(scenario.Op(kind)))
			if hasArg {
				p += ":" + arg
			}
			out = append(out, p)
		}
	}
	return out
}
