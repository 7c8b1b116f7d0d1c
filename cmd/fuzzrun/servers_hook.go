package main

import "github.com/idemcheck/idemcheck/cmd/fuzzrun/internal/ext"

// serversTag is the build tag of the adapters of real servers and brokers
// (servers_tag.go).
const serversTag = ext.Tag

// tagged reports whether this build has what tag links.
func tagged(tag string) bool {
	return tag == ext.Tag && ext.Registered != nil
}
