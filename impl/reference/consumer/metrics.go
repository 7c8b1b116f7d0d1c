package consumer

import "maps"

// Metrics a worker keeps.
type Metrics struct {
	// Processed counts deliveries whose effects were committed.
	Processed int `json:"processed"`
	// Dedup counts duplicates skipped because the key was already processed.
	Dedup int `json:"dedup"`
	// Retries counts nacks and abandoned deliveries by reason.
	Retries map[string]int `json:"retries"`
	// DLQ counts dead-lettered deliveries by reason.
	DLQ map[string]int `json:"dlq"`
	// ProcessingMs is the total time from receive to settle, measured on the
	// node's monotonic clock so clock steps cannot distort it.
	ProcessingMs int64 `json:"processingMs"`
	// Crashes counts simulated crashes.
	Crashes int `json:"crashes"`
}

func newMetrics() Metrics { return Metrics{Retries: map[string]int{}, DLQ: map[string]int{}} }

func (m *Metrics) retry(reason string) { m.Retries[reason]++ }
func (m *Metrics) dlq(reason string)   { m.DLQ[reason]++ }

func (m Metrics) clone() Metrics {
	m.Retries = maps.Clone(m.Retries)
	m.DLQ = maps.Clone(m.DLQ)
	return m
}
