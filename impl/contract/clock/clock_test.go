package clock

import "testing"

func TestNodeSkewStepAndMonotonic(t *testing.T) {
	v := NewVirtual(1000)
	n := NewNode("a", v, 300)
	if n.NowMs() != 1300 || n.SkewMs() != 300 || n.Name() != "a" {
		t.Fatalf("skewed reading %d", n.NowMs())
	}
	v.Advance(50)
	n.Step(-500) // an NTP step backwards
	if n.NowMs() != 850 {
		t.Fatalf("after step: %d, want 850", n.NowMs())
	}
	if n.MonotonicMs() != 50 {
		t.Fatalf("monotonic %d, want 50: steps must not affect it", n.MonotonicMs())
	}
	v.Advance(-10)
	if v.NowMs() != 1050 {
		t.Fatalf("true time went backwards to %d", v.NowMs())
	}
	n.SetSkew(0)
	if n.NowMs() != v.NowMs() {
		t.Fatal("zero skew differs from true time")
	}
}
