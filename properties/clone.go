package properties

import (
	"maps"
	"slices"
)

// cloner is a monitor that can be copied mid-run.
type cloner interface{ cloneMonitor() Monitor }

// CloneMonitor returns an independent copy of m, with everything it has
// seen so far, for a search that forks a run (explore); it reports false
// for a monitor that cannot be copied.
func CloneMonitor(m Monitor) (Monitor, bool) {
	if c, ok := m.(cloner); ok {
		return c.cloneMonitor(), true
	}
	return nil, false
}

func (m *creditMonitor) cloneMonitor() Monitor {
	return &creditMonitor{legit: maps.Clone(m.legit), twice: maps.Clone(m.twice), breaches: slices.Clone(m.breaches), finished: maps.Clone(m.finished), claimed: maps.Clone(m.claimed)}
}

func (m *attemptsMonitor) cloneMonitor() Monitor {
	c := *m
	c.deliveries = maps.Clone(m.deliveries)
	c.poisonedAt = make(map[msgID]map[int]bool, len(m.poisonedAt))
	for k, v := range m.poisonedAt {
		c.poisonedAt[k] = maps.Clone(v)
	}
	c.breaches = slices.Clone(m.breaches)
	return &c
}

func (m *atomicityMonitor) cloneMonitor() Monitor {
	return &atomicityMonitor{legit: maps.Clone(m.legit), seen: maps.Clone(m.seen), breaches: slices.Clone(m.breaches), finished: maps.Clone(m.finished), claimed: maps.Clone(m.claimed)}
}

func (m *fenceMonitor) cloneMonitor() Monitor {
	c := *m
	c.latest = maps.Clone(m.latest)
	c.breaches = slices.Clone(m.breaches)
	return &c
}
