package packedclock

import (
	"errors"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/hlc"
	"github.com/idemcheck/idemcheck/impl/contract/hlc/hlcformat"
)

// 65,537 events within one millisecond: the counter fills and carries into
// the wall; every stamp is greater than the one before.
func TestCounterCarriesIntoTheWall(t *testing.T) {
	now := int64(1_700_000_000_000) * 1e6
	c, err := New(func() int64 { return now }, Options{})
	if err != nil {
		t.Fatal(err)
	}
	prev := c.Now()
	for i := range 1<<16 + 1 {
		got := c.Now()
		if got <= prev {
			t.Fatalf("event %d: stamp %#x not after %#x", i, got, prev)
		}
		prev = got
	}
	if wall, _ := hlcformat.Unpack(prev); wall <= now&^hlcformat.CounterMask {
		t.Fatalf("after a full counter the wall %d did not move past %d", wall, now)
	}
}

func TestUpdateRefusesBeyondMaxOffsetOnly(t *testing.T) {
	now := int64(1_700_000_000_000) * 1e6
	c, err := New(func() int64 { return now }, Options{MaxOffset: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	far := hlcformat.Pack(now+int64(time.Second), 0)
	if _, err := c.Update(far); !errors.Is(err, hlc.ErrRefused) {
		t.Fatalf("a stamp a second ahead: error %v, want refused", err)
	}
	for _, remote := range []uint64{hlcformat.Pack(now+int64(400*time.Millisecond), 3), hlcformat.Pack(now-int64(time.Hour), 0)} {
		got, err := c.Update(remote)
		if err != nil || got <= remote {
			t.Fatalf("Update(%#x) = %#x, %v; want a later stamp", remote, got, err)
		}
	}
	if _, err := New(func() int64 { return now }, Options{MaxOffset: -1}); err == nil {
		t.Fatal("a negative max offset was accepted")
	}
}
