// Package brokers holds the measurements behind the table of real brokers
// in docs/brokers.md: for every broker and configuration, a short campaign
// of live scenarios (properties.RunLiveCampaign) judges each invariant, and the
// tests check the table, and the counterexample of every failing cell
// under corpus/brokers, against what the campaign measures. It has no code
// of its own; its tests are the point.
package brokers
