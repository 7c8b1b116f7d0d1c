// Package depcheck holds no code: its test holds the property and fault
// packages to linking no database or broker client. Those live beside
// their only users (internal/consumerharness/sqlhook, sqlclock;
// conformance/brokers/liveapp; the impl/adapter packages), so that a
// property suite or a fault generator stays free of them.
package depcheck
