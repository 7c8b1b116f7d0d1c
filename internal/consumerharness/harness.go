// Package consumerharness is the harness that runs a team's own consumer:
// the scenario and its generator, the runner that schedules the workers'
// goroutines, the database hook, the laws and their judge, reduction, the
// trace and Verify's model checker. Teams reach it through package
// consumertest and its public subpackages; cmd/fuzzrun and report import
// it directly for what a team never calls (the corpus, the judge, the
// progress of a search).
package consumerharness
