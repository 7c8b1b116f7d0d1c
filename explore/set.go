package explore

// arena holds packed states in large chunks, each copied in at its exact
// size: a depth's frontier costs its bytes and a slice header a state.
type arena struct {
	chunk []byte
}

const arenaChunk = 4 << 20

// add copies b into the arena and returns the copy.
func (a *arena) add(b []byte) []byte {
	if cap(a.chunk)-len(a.chunk) < len(b) {
		a.chunk = make([]byte, 0, max(arenaChunk, len(b)))
	}
	start := len(a.chunk)
	a.chunk = append(a.chunk, b...)
	return a.chunk[start:len(a.chunk):len(a.chunk)]
}
