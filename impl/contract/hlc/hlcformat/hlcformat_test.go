package hlcformat

import (
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/hlc"
)

func TestPackedStampsOrderAsTheirIntegers(t *testing.T) {
	ps := []uint64{Pack(5_000_000_000, 0), Pack(5_000_000_000, 1), Pack(5_000_000_000, CounterMask), Pack(5_000_000_000+Granularity, 0)}
	c, err := NewPacked("A", Packed{Tick: func() uint64 { return 0 }, Merge: func(r uint64) (uint64, error) { return r, nil }})
	if err != nil {
		t.Fatal(err)
	}
	stamp := c.(*packed).stamp
	for i := 1; i < len(ps); i++ {
		a, b := stamp(ps[i-1]), stamp(ps[i])
		if ps[i-1] >= ps[i] || !a.Less(b) {
			t.Fatalf("%#x < %#x but stamps %s, %s do not order so", ps[i-1], ps[i], a, b)
		}
		if b.WallMs != b.WallNs/1e6 {
			t.Fatalf("stamp %s: WallMs is not WallNs in milliseconds", b)
		}
	}
	if w, c := Unpack(Pack(5_000_123_456, 7)); w != 5_000_123_456&^CounterMask || c != 7 {
		t.Fatalf("Unpack(Pack) = %d, %d", w, c)
	}
}

func TestAdaptersDeclareAndRejectBadOptions(t *testing.T) {
	p := Packed{Tick: func() uint64 { return 1 }, Merge: func(r uint64) (uint64, error) { return r + 1, nil }, MaxOffset: time.Second}
	c, err := NewPacked("A", p)
	if err != nil {
		t.Fatal(err)
	}
	if d := hlc.DeclarationOf(c); d.MaxOffset != time.Second || d.WallGranularity != Granularity {
		t.Fatalf("packed declaration %+v", d)
	}
	n := Nanos{Tick: func() (int64, uint32) { return 1_500_000, 0 }, Merge: func(w int64, l uint32) (int64, uint32, error) { return w, l + 1, nil }}
	nc, err := NewNanos("A", n)
	if err != nil {
		t.Fatal(err)
	}
	if got := nc.Tick(); got.WallMs != 1 || got.WallNs != 1_500_000 {
		t.Fatalf("nanosecond tick %+v", got)
	}
	if got, err := nc.Merge(hlc.Timestamp{WallMs: 2, Node: "B"}); err != nil || got.WallNs != 2_000_000 || got.Logical != 1 {
		t.Fatalf("nanosecond merge of a millisecond stamp = %+v, %v", got, err)
	}
	p.MaxOffset = -time.Millisecond
	if _, err := NewPacked("A", p); err == nil {
		t.Fatal("a negative max offset was accepted")
	}
	if _, err := NewNanos("A", Nanos{}); err == nil {
		t.Fatal("a Nanos without operations was accepted")
	}
}

// A millisecond wall shifted above a 16-bit counter, read in its own unit:
// the stamp's wall is the physical clock's millisecond, not a wall in 1970,
// and a merge packs the remote back the same way.
func TestMillisecondLayout(t *testing.T) {
	const nowMs = 1_700_000_000_123
	var merged uint64
	var from string
	c, err := NewPacked("A", Packed{
		Tick:      func() uint64 { return nowMs<<16 | 3 },
		MergeFrom: func(r uint64, node string) (uint64, error) { merged, from = r, node; return r + 1, nil },
		WallUnit:  time.Millisecond, WallBits: 48,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Tick(); got != (hlc.Timestamp{WallMs: nowMs, Logical: 3, Node: "A"}) {
		t.Fatalf("tick = %+v, want the millisecond wall %d with logical 3", got, nowMs)
	}
	got, err := c.Merge(hlc.Timestamp{WallMs: nowMs + 5, Logical: 9, Node: "B"})
	if err != nil || merged != (nowMs+5)<<16|9 || from != "B" {
		t.Fatalf("merge packed the remote as %#x from %q (%v), want %#x from B", merged, from, err, uint64(nowMs+5)<<16|9)
	}
	if got != (hlc.Timestamp{WallMs: nowMs + 5, Logical: 10, Node: "A"}) {
		t.Fatalf("merge = %+v", got)
	}
	if d := hlc.DeclarationOf(c); d.WallGranularity != time.Millisecond {
		t.Fatalf("declared granularity %v, want the wall unit", d.WallGranularity)
	}
	// A microsecond wall keeps its nanoseconds.
	us, err := NewPacked("A", Packed{Tick: func() uint64 { return 1_700_000_000_123_456<<12 | 1 }, Merge: func(r uint64) (uint64, error) { return r, nil },
		WallUnit: time.Microsecond, WallBits: 52})
	if err != nil {
		t.Fatal(err)
	}
	if got := us.Tick(); got.WallNs != 1_700_000_000_123_456_000 || got.WallMs != nowMs || got.Logical != 1 {
		t.Fatalf("microsecond tick = %+v", got)
	}
	for _, bad := range []Packed{
		{Tick: c.(*packed).p.Tick, Merge: func(r uint64) (uint64, error) { return r, nil }, WallUnit: -time.Millisecond},
		{Tick: c.(*packed).p.Tick, Merge: func(r uint64) (uint64, error) { return r, nil }, WallBits: 64},
		{Tick: c.(*packed).p.Tick},
	} {
		if _, err := NewPacked("A", bad); err == nil {
			t.Errorf("NewPacked(%+v) accepted", bad)
		}
	}
}
