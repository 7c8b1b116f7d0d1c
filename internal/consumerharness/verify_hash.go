package consumerharness

import (
	"database/sql/driver"
	"encoding/binary"
	"hash/maphash"
	"math"
	"time"

	"github.com/idemcheck/idemcheck/internal/search"
)

// Names of states: the bytes that describe a state, hashed to 128 bits
// (search.Key). Names are compared within one search only, so the hash's seeds are the
// process's own.

var seedA, seedB = maphash.MakeSeed(), maphash.MakeSeed()

func sumOf(b []byte) search.Key { return search.Key{maphash.Bytes(seedA, b), maphash.Bytes(seedB, b)} }

// enc builds the bytes of a name without formatting.
type enc struct {
	b []byte
	// mark is where the workers' part of a state's name begins.
	mark int
}

func (e *enc) reset() { e.b = e.b[:0] }

func (e *enc) byte(c byte) { e.b = append(e.b, c) }

func (e *enc) int(n int64) { e.b = binary.AppendVarint(e.b, n) }

func (e *enc) str(s string) {
	e.int(int64(len(s)))
	e.b = append(e.b, s...)
}

// bytes writes b as str writes string(b).
func (e *enc) bytes(b []byte) {
	e.int(int64(len(b)))
	e.b = append(e.b, b...)
}

func (e *enc) sum(s search.Key) {
	e.b = binary.LittleEndian.AppendUint64(e.b, s[0])
	e.b = binary.LittleEndian.AppendUint64(e.b, s[1])
}

// value writes a value the database returned, with its type.
func (e *enc) value(v driver.Value) {
	switch x := v.(type) {
	case nil:
		e.byte('n')
	case int64:
		e.byte('i')
		e.int(x)
	case float64:
		e.byte('f')
		e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(x))
	case bool:
		e.byte('b')
		if x {
			e.byte(1)
		} else {
			e.byte(0)
		}
	case []byte:
		e.byte('x')
		e.int(int64(len(x)))
		e.b = append(e.b, x...)
	case string:
		e.byte('s')
		e.str(x)
	case time.Time:
		e.byte('t')
		e.int(x.UnixNano())
	default:
		// A driver's own type: its text.
		e.byte('?')
		e.str(stringOf(x))
	}
}

// history is a running name of what a worker has seen.
type history struct {
	s       search.Key
	scratch enc
}

func (h *history) reset() { h.s = search.Key{} }

// add extends the history by what e holds.
func (h *history) add(e *enc) {
	h.scratch.reset()
	h.scratch.sum(h.s)
	h.scratch.b = append(h.scratch.b, e.b...)
	h.s = sumOf(h.scratch.b)
}
