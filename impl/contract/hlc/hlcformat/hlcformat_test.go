package hlcformat

import (
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/hlc"
)

func TestPackedStampsOrderAsTheirIntegers(t *testing.T) {
	ps := []uint64{Pack(5_000_000_000, 0), Pack(5_000_000_000, 1), Pack(5_000_000_000, CounterMask), Pack(5_000_000_000+Granularity, 0)}
	for i := 1; i < len(ps); i++ {
		a, b := fromPacked("A", ps[i-1]), fromPacked("A", ps[i])
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
