package explore

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/idemcheck/idemcheck/impl/system"
)

// smallChunks makes frontier chunks of n bytes for the test, so that a
// small frontier spills.
func smallChunks(t *testing.T, n int) {
	old := frontierChunk
	frontierChunk = n
	t.Cleanup(func() { frontierChunk = old })
}

// TestFrontierSpillsAndReadsBack keeps 5,000 states of every length up to
// 200 bytes in a frontier of 4 KiB chunks that spills past 8 KiB, reads
// them back in batches, in order, as an expansion does, and requires each
// as it was written, most of them read from disk, and no more than the
// limit and the batch's chunks in memory.
func TestFrontierSpillsAndReadsBack(t *testing.T) {
	smallChunks(t, 4096)
	p := newPackedStates(8192)
	defer p.free()
	state := func(i int) []byte {
		b := make([]byte, i%200+1)
		for j := range b {
			b[j] = byte(i*31 + j)
		}
		return b
	}
	const n = 5000
	var total int64
	for i := range n {
		p.add(state(i))
		total += int64(i%200 + 1)
	}
	if p.len() != n || p.bytes != total {
		t.Fatalf("%d states, %d bytes; want %d, %d", p.len(), p.bytes, n, total)
	}
	if p.spilled() < total/2 {
		t.Fatalf("%d of %d bytes spilled past a limit of 8 KiB", p.spilled(), total)
	}
	for lo := 0; lo < n; lo += 37 {
		hi := min(lo+37, n)
		if err := p.load(lo, hi); err != nil {
			t.Fatal(err)
		}
		if p.inMem > 8192+3*4096 {
			t.Fatalf("batch %d..%d: %d bytes of chunks in memory", lo, hi, p.inMem)
		}
		for i := lo; i < hi; i++ {
			if got := p.get(i); !bytes.Equal(got, state(i)) {
				t.Fatalf("state %d reads %v, want %v", i, got, state(i))
			}
		}
	}
}

// TestSpilledFrontierExploresTheSame explores 2 events x 2 workers to
// depth 7 with every frontier in memory and with every chunk but the
// first on disk: the same states and transitions at every depth, and the
// same coverage.
func TestSpilledFrontierExploresTheSame(t *testing.T) {
	smallChunks(t, 4096)
	world := World{Events: []string{"ok", "ok"}, Groups: 1, WorkersPerGroup: 2}
	var res [2]*Result
	for i, limit := range []int64{0, 1} {
		r, err := Explore(context.Background(), system.Reference(), Options{World: world, Depth: 7, Coverage: true, FrontierMemory: limit})
		if err != nil || r.Counterexample != nil || r.Engine != EngineCompact {
			t.Fatalf("limit %d: %v, %v, engine %s", limit, err, r.Counterexample, r.Engine)
		}
		res[i] = r
	}
	if res[0].FrontierSpilled != 0 || res[1].FrontierSpilled == 0 {
		t.Fatalf("spilled %d bytes without a limit and %d with one", res[0].FrontierSpilled, res[1].FrontierSpilled)
	}
	if !slices.Equal(res[0].Levels, res[1].Levels) || res[0].States != res[1].States || res[0].Transitions != res[1].Transitions {
		t.Fatalf("levels in memory %v, spilled %v", res[0].Levels, res[1].Levels)
	}
	if a, b := res[0].Coverage.Rows(), res[1].Coverage.Rows(); !slices.Equal(a, b) {
		t.Fatalf("coverage in memory %v, spilled %v", a, b)
	}
}
