package search

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestSetAgreesWithMap adds, puts and looks up keys across several
// growths, the zero key among them, and holds the set to a Go map.
func TestSetAgreesWithMap(t *testing.T) {
	s := NewSet()
	want := map[Key]int32{}
	key := func(i int) Key {
		if i == 0 {
			return Key{}
		}
		return Key{uint64(i) * 0x9e3779b97f4a7c15, uint64(i % 7)}
	}
	for i := range 10000 {
		k := key(i)
		if i%3 == 0 {
			s.Put(k, int32(i))
			want[k] = int32(i)
			continue
		}
		_, had := want[k]
		if got := s.Add(k); got == had {
			t.Fatalf("Add(%v) = %v, had it: %v", k, got, had)
		}
		if !had {
			want[k] = 0
		}
	}
	if s.Len() != len(want) {
		t.Fatalf("Len = %d, want %d", s.Len(), len(want))
	}
	for k, v := range want {
		if got, ok := s.Get(k); !ok || got != v {
			t.Fatalf("Get(%v) = %d, %v; want %d", k, got, ok, v)
		}
		if !s.Has(k) || s.Add(k) {
			t.Fatalf("%v is not in the set", k)
		}
	}
	for i := 10000; i < 11000; i++ {
		if s.Has(key(i)) {
			t.Fatalf("Has(%v) of a key never added", key(i))
		}
	}
	if s.Bytes() != int64(20*len(s.keys)) || len(s.keys) < 4*s.Len()/3 {
		t.Fatalf("%d bytes for %d slots holding %d keys", s.Bytes(), len(s.keys), s.Len())
	}
}

// TestSetKeysDifferingInOneHalf keeps keys apart that differ only in
// their second half, which a 64-bit fingerprint could not.
func TestSetKeysDifferingInOneHalf(t *testing.T) {
	s := NewSet()
	for i := range uint64(5000) {
		if !s.Add(Key{42, i}) {
			t.Fatalf("Key{42, %d} taken for another", i)
		}
	}
	if s.Bytes() != int64(16*len(s.keys)) {
		t.Fatalf("a set without values takes %d bytes for %d slots", s.Bytes(), len(s.keys))
	}
}

// TestBudgetNamesTheBound reaches each bound of a budget in turn.
func TestBudgetNamesTheBound(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	b := Budget{Context: ctx, Count: 10, Unit: "schedule", Memory: 100}
	b.Start(time.Now())
	if k := b.Spent(9, 99); k != Unbound || b.Reason(k) != "" {
		t.Fatalf("within every bound: %v %q", k, b.Reason(k))
	}
	if k := b.Spent(9, 100); k != OutOfMemory || !strings.Contains(b.Reason(k), "memory budget (100 bytes)") {
		t.Fatalf("memory: %v %q", k, b.Reason(k))
	}
	if k := b.Spent(10, 0); k != OutOfCount || b.Reason(k) != "the schedule budget (10) ran out" {
		t.Fatalf("count: %v %q", k, b.Reason(k))
	}
	late := Budget{Time: time.Hour}
	late.Start(time.Now().Add(-2 * time.Hour))
	if k := late.Spent(0, 0); k != OutOfTime || late.Reason(k) != "the time budget (1h0m0s) ran out" {
		t.Fatalf("time: %v %q", k, late.Reason(k))
	}
	cancel()
	if k := b.Spent(0, 0); k != Interrupted || b.Reason(k) != "interrupted" {
		t.Fatalf("context: %v %q", k, b.Reason(k))
	}
	var none Budget
	none.Start(time.Now())
	if k := none.Spent(1<<40, 1<<40); k != Unbound {
		t.Fatalf("the zero budget bounds: %v", k)
	}
	if k := (&Budget{Count: 3}).Reason(OutOfCount); k != "the state budget (3) ran out" {
		t.Fatalf("default unit: %q", k)
	}
}
