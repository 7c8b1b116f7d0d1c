package offheap

import "testing"

// TestBlockHoldsWhatIsWritten writes every value of a mapped block and a
// small (heap) one, reads them back, and frees both twice.
func TestBlockHoldsWhatIsWritten(t *testing.T) {
	for _, n := range []int{100, Min / 8, 3 * Min / 8} {
		b, s := Make[[2]uint64](n)
		if len(s) != n || b.Len() != 16*n {
			t.Fatalf("Make(%d): %d values in %d bytes", n, len(s), b.Len())
		}
		if got := b.mapped; got != (16*n >= Min) {
			t.Errorf("Make(%d): mapped %v", n, got)
		}
		for i := range s {
			if s[i] != ([2]uint64{}) {
				t.Fatalf("Make(%d): value %d not zero: %v", n, i, s[i])
			}
			s[i] = [2]uint64{uint64(i), ^uint64(i)}
		}
		for i := range s {
			if s[i] != [2]uint64{uint64(i), ^uint64(i)} {
				t.Fatalf("Make(%d): value %d reads %v", n, i, s[i])
			}
		}
		b.Free()
		b.Free()
		if b.Bytes() != nil {
			t.Errorf("Make(%d): a freed block still has memory", n)
		}
	}
	var none *Block
	none.Free()
}

// TestSliceRefusesTooMany asks a block for more values than it holds.
func TestSliceRefusesTooMany(t *testing.T) {
	b := New(64)
	defer func() {
		if recover() == nil {
			t.Error("Slice of 5 16-byte values over 64 bytes did not panic")
		}
	}()
	Slice[[2]uint64](b, 5)
}
