// Package offheap holds the model checker's largest tables — the visited
// set's slots, a frontier's packed states — in memory mapped from the
// system rather than allocated by Go. The collector neither scans nor
// counts such memory: a heap goal of twice the live heap would otherwise
// let a search of tens of millions of states hold twice what it keeps,
// and a table given back (Free) leaves the resident set at once instead of
// at a later collection. Only types without pointers may live there.
package offheap
