package outbox

import "testing"

func TestSeqIsStrictlyMonotonicAndStableAcrossRetries(t *testing.T) {
	o := New()
	var prev uint64
	for _, id := range []string{"e1", "e2", "e3"} {
		s := o.Write(id)
		if s <= prev {
			t.Fatalf("Write(%s) = %d after %d; want strictly greater", id, s, prev)
		}
		prev = s
	}
	if s := o.Write("e2"); s != 2 {
		t.Fatalf("retrying e2 got seq %d; want its original 2", s)
	}
	if s := o.Write("e4"); s != 4 || o.Last() != 4 {
		t.Fatalf("after a retry the next write got %d (last %d); want 4", s, o.Last())
	}
}
