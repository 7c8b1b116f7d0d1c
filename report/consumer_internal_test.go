package report

import (
	"strconv"
	"strings"
	"testing"
)

// TestQuoteShortKeepsCharactersWhole: a long last error is cut by
// characters, so a multi-byte one is never split.
func TestQuoteShortKeepsCharactersWhole(t *testing.T) {
	long := strings.Repeat("é", 70)
	if got, want := quoteShort(long), strconv.Quote(strings.Repeat("é", 57)+"..."); got != want {
		t.Errorf("quoteShort: %s, want %s", got, want)
	}
	if got := quoteShort("short"); got != `"short"` {
		t.Errorf("quoteShort(short) = %s", got)
	}
}
