package hlclaw

import (
	"slices"
	"strings"
	"testing"
)

func lawsOf(vs []Violation) []Law {
	var out []Law
	for _, v := range vs {
		out = append(out, v.Law)
	}
	return out
}

func TestRefusalAllowedOnlyBeyondTheDeclaredMaxOffset(t *testing.T) {
	const ms = int64(1e6)
	for _, c := range []struct {
		name     string
		remoteMs int64
		maxOff   int64
		broken   bool
	}{
		{"ahead beyond", 1_501, 500 * ms, false},
		{"ahead within", 1_500, 500 * ms, true},
		{"delayed, not skewed", 0, 500 * ms, true},
		{"no max offset declared", 1_000_000, 0, true},
	} {
		r := Reading{Node: "B", Op: OpMerge, PhysMs: 1_000, Remote: Stamp{WallMs: c.remoteMs, Node: "A"}, Refused: true, MaxOffsetNs: c.maxOff}
		got := lawsOf(CheckReadings([]Reading{r}))
		if broken := slices.Equal(got, []Law{RefuseOnlyBeyondMaxOffset}); broken != c.broken || (!c.broken && len(got) > 0) {
			t.Errorf("%s: violations %v, want broken=%v", c.name, got, c.broken)
		}
	}
}

// A coarse wall may lag the physical clock by less than its declared
// granularity, never by as much.
func TestPhysicalBoundAllowsTheDeclaredGranularity(t *testing.T) {
	phys := int64(1_700_000_000_123)
	for _, c := range []struct {
		lagNs, granularity int64
		broken             bool
	}{{65_535, 65_536, false}, {65_536, 65_536, true}, {1, 0, true}, {0, 0, false}} {
		wall := phys*1e6 - c.lagNs
		r := Reading{Node: "A", Op: OpTick, PhysMs: phys, Got: Stamp{WallMs: wall / 1e6, WallNs: wall, Node: "A"}, GranularityNs: c.granularity}
		got := lawsOf(CheckReadings([]Reading{r}))
		if broken := slices.Contains(got, PhysicalBound); broken != c.broken {
			t.Errorf("lag %dns, granularity %dns: violations %v, want physical-bound broken=%v", c.lagNs, c.granularity, got, c.broken)
		}
	}
}

// A refusal of a stamp behind the clock names what put it there: a sender
// skewed 60 s behind is not a message delayed in transit.
func TestRefusalNamesTheRealCause(t *testing.T) {
	r := Reading{Node: "B", Op: OpMerge, PhysMs: 1_000_000, Remote: Stamp{WallMs: 940_000, Node: "A"}, Refused: true, MaxOffsetNs: 500e6,
		Sent: &Sending{Node: "A", PhysMs: 940_000, TrueMs: 1_000_000}}
	vs := CheckReadings([]Reading{r})
	if len(vs) != 1 {
		t.Fatalf("violations %v, want one refusal", vs)
	}
	d := vs[0].Detail
	for _, want := range []string{"60000ms behind this node's physical clock", "its sender A's clock ran 60000ms behind true time", "declared max offset of 500ms"} {
		if !strings.Contains(d, want) {
			t.Errorf("detail %q does not say %q", d, want)
		}
	}
	if strings.Contains(d, "delayed") {
		t.Errorf("detail %q calls a skewed sender's stamp delayed", d)
	}
	r.Sent, r.TrueMs = &Sending{Node: "A", PhysMs: 940_000, TrueMs: 940_000}, 1_000_000
	if d := CheckReadings([]Reading{r})[0].Detail; !strings.Contains(d, "it spent 60000ms in transit") || strings.Contains(d, "sender A's clock") {
		t.Errorf("a delayed stamp's detail %q does not name the transit alone", d)
	}
}
