//go:build servers

package main

// Built with -tags servers, fuzzrun has the adapters of real servers and
// brokers: fuzzrun broker, and the targets sqlite, sqlite-file, postgres
// and redis.
import _ "github.com/idemcheck/idemcheck/cmd/fuzzrun/internal/servers"
