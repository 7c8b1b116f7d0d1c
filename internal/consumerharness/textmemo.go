package consumerharness

import (
	"sync"
	"sync/atomic"
)

// maxMemo bounds what a textMemo keeps (a consumer that writes its values
// into its statements' text makes new texts without end).
const maxMemo = 1 << 12

// textMemo remembers answers worked out from a statement's text (its verb,
// the tables a query reads, whether it writes them), by key, up to
// maxMemo of them. Safe for concurrent use: the walkers share it.
type textMemo[K comparable, V any] struct {
	m    sync.Map
	kept atomic.Int64
}

// load returns the answer kept for k.
func (m *textMemo[K, V]) load(k K) (V, bool) {
	v, ok := m.m.Load(k)
	if !ok {
		var zero V
		return zero, false
	}
	return v.(V), true
}

// store keeps v for k, unless maxMemo answers are kept already.
func (m *textMemo[K, V]) store(k K, v V) V {
	if m.kept.Add(1) <= maxMemo {
		m.m.Store(k, v)
	}
	return v
}
