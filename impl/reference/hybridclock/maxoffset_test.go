package hybridclock

import (
	"errors"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/hlc"
)

func TestMaxOffsetRefusesOnlyStampsTooFarAhead(t *testing.T) {
	truth := clock.NewVirtual(start)
	b, err := NewWithOptions("B", clock.NewNode("B", truth, 0), Options{MaxOffset: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if d := hlc.DeclarationOf(b); d.MaxOffset != 500*time.Millisecond {
		t.Fatalf("declaration %+v, want the max offset", d)
	}
	before := b.Tick()
	for _, c := range []struct {
		aheadMs int64
		refuse  bool
	}{{501, true}, {60_000, true}, {500, false}, {1, false}, {-3_600_000, false}} {
		remote := Timestamp{WallMs: truth.NowMs() + c.aheadMs, Node: "A"}
		last := b.Last()
		got, err := b.Merge(remote)
		if refused := errors.Is(err, hlc.ErrRefused); refused != c.refuse {
			t.Fatalf("merge of a stamp %dms ahead: error %v, want refused=%v", c.aheadMs, err, c.refuse)
		}
		if c.refuse && b.Last() != last {
			t.Fatalf("a refused merge moved the clock from %s to %s", last, b.Last())
		}
		if !c.refuse && (!remote.Less(got) || !before.Less(got)) {
			t.Fatalf("merge of %s = %s, want later than it and than %s", remote, got, before)
		}
		truth.Advance(1)
	}
}

func TestNegativeMaxOffsetIsAnError(t *testing.T) {
	_, err := NewWithOptions("A", clock.NewVirtual(start), Options{MaxOffset: -time.Millisecond})
	if err == nil {
		t.Fatal("a negative max offset was accepted")
	}
}
