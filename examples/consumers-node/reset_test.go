package consumersnode_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/scenario"
	"github.com/idemcheck/idemcheck/impl/adapter/consumerproc"
)

// TestReusedProcessesForget: the consumers declare reset, so the harness
// reuses their processes from worker to worker and scenario to scenario,
// and a reused process must play a scenario as a fresh one does. lru.js,
// whose reset hook empties its cache, plays the harness's first drawn
// scenarios alike again and again on the same processes;
// testdata/lru-keeps-memory.js, which declares reset but keeps its cache,
// does not, and that is how it is caught (fuzzrun refuses it before a
// campaign the same way: cmd/fuzzrun TestExecConsumerKeepsState).
func TestReusedProcessesForget(t *testing.T) {
	gen := scenario.Generator(16)
	for _, c := range []struct {
		file string
		same bool
	}{{"lru.js", true}, {"testdata/lru-keeps-memory.js", false}} {
		t.Run(c.file, func(t *testing.T) {
			d := declared(t, c.file)
			if !d.Resets {
				t.Fatalf("%s does not declare reset", c.file)
			}
			pl := consumerproc.NewPool([]string{node(t), c.file}, consumerproc.Options{})
			defer pl.Close()
			con := consumertest.Consumer{Name: "reused", Schema: d.Schema, Worker: pl.Worker, Effects: consumertest.PerEvent(d.Effects)}
			same := true
			for i := range 3 {
				s := gen.Example(i)
				var traces [2][]string
				for k := range traces {
					res, err := consumertest.Replay(con, s)
					if err != nil {
						t.Fatal(err)
					}
					traces[k] = res.Outcome.Trace.Lines()
				}
				if !slices.Equal(traces[0], traces[1]) {
					same = false
					t.Logf("scenario %d plays differently on reused processes:\n%s\n---\n%s", i, strings.Join(traces[0], "\n"), strings.Join(traces[1], "\n"))
					break
				}
			}
			if same != c.same {
				t.Errorf("plays alike on reused processes: %v, want %v", same, c.same)
			}
			if st := pl.Stats(); st.Reused == 0 {
				t.Errorf("stats %+v: no process was reused", st)
			}
		})
	}
}
