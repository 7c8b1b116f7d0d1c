package linearizability

import (
	"errors"
	"fmt"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// Config is how a history is recorded and checked.
type Config struct {
	// Clients is the number of goroutines issuing operations concurrently.
	Clients int
	// Ops is the number of operations in the history.
	Ops int
	// Keys is the number of distinct keys over the whole run.
	Keys int
	// ActiveKeys is how many keys are in play at once. The clients work on
	// a window of keys that slides over all Keys during the run, so that
	// each key sees contention (several clients at once) and then a new key
	// takes its place once it is processed, instead of the run ending as
	// "already processed" everywhere.
	ActiveKeys int
	// Seed seeds each client's choice of operations, keys, leases and clock
	// steps. The interleaving itself is the Go scheduler's.
	Seed uint64
	// MinLeaseMs and MaxLeaseMs bound the lease of each claim.
	MinLeaseMs, MaxLeaseMs int64
	// MaxStepMs bounds the step by which a client advances the shared
	// virtual clock before each operation, so that leases expire during the
	// run and takeovers happen.
	MaxStepMs int64
	// CommitPercent is the share of held claims a client settles with a
	// commit rather than a fail. 0 keeps a key in contention for the whole
	// run, as a commit ends it.
	CommitPercent int
	// OpTimeout bounds one operation. A client stops waiting after it and
	// records the operation as ambiguous.
	OpTimeout time.Duration
	// CheckTimeout bounds the check of the history.
	CheckTimeout time.Duration
	// Conventions are the store's declared conventions (store.Conventions):
	// the check holds the store to them.
	Conventions store.Conventions
	// ArtifactDir is where CheckStore writes the visualization of a
	// violation. Empty: a new directory under the system's temporary
	// directory, kept after the test so the page can be opened.
	ArtifactDir string
}

// Defaults of Config.
const (
	DefaultClients       = 8
	DefaultOps           = 10_000
	DefaultActiveKeys    = 4
	DefaultOpTimeout     = 5 * time.Second
	DefaultCheckTimeout  = 30 * time.Second
	DefaultCommitPercent = 70
	// opsPerKey sizes the default Keys: with 4 active keys and 8 clients,
	// about 20 operations per key give each key several claims at once,
	// takeovers, and stale settles before it is processed.
	opsPerKey = 20
)

// DefaultConfig returns the configuration CheckStore uses unless told
// otherwise: 8 clients, 10,000 operations over 500 keys, 4 at a time.
func DefaultConfig() Config {
	return Config{
		Clients:       DefaultClients,
		Ops:           DefaultOps,
		Keys:          DefaultOps / opsPerKey,
		ActiveKeys:    DefaultActiveKeys,
		Seed:          1,
		MinLeaseMs:    2,
		MaxLeaseMs:    40,
		MaxStepMs:     3,
		CommitPercent: DefaultCommitPercent,
		OpTimeout:     DefaultOpTimeout,
		CheckTimeout:  DefaultCheckTimeout,
	}
}

func (c Config) validate() error {
	switch {
	case c.Clients < 1:
		return errors.New("linearizability: Clients must be at least 1")
	case c.Ops < 1:
		return errors.New("linearizability: Ops must be at least 1")
	case c.Keys < 1 || c.ActiveKeys < 1:
		return errors.New("linearizability: Keys and ActiveKeys must be at least 1")
	case c.MinLeaseMs < 1 || c.MaxLeaseMs < c.MinLeaseMs:
		return errors.New("linearizability: leases must satisfy 1 <= MinLeaseMs <= MaxLeaseMs")
	case c.MaxStepMs < 0:
		return errors.New("linearizability: MaxStepMs must not be negative")
	case c.CommitPercent < 0 || c.CommitPercent > 100:
		return errors.New("linearizability: CommitPercent must be within 0..100")
	case c.OpTimeout <= 0 || c.CheckTimeout <= 0:
		return errors.New("linearizability: OpTimeout and CheckTimeout must be positive")
	}
	if err := c.Conventions.Validate(); err != nil {
		return fmt.Errorf("linearizability: %w", err)
	}
	return nil
}

// Option changes a Config.
type Option func(*Config)

// WithClients sets the number of concurrent clients.
func WithClients(n int) Option { return func(c *Config) { c.Clients = n } }

// WithOps sets the number of operations, and scales the number of keys with
// it (20 operations per key) unless WithKeys is also given after it.
func WithOps(n int) Option {
	return func(c *Config) {
		c.Ops = n
		c.Keys = max(1, n/opsPerKey)
	}
}

// WithKeys sets the number of distinct keys and how many are active at once.
func WithKeys(keys, active int) Option {
	return func(c *Config) { c.Keys, c.ActiveKeys = keys, active }
}

// WithSeed sets the seed of the clients' choices.
func WithSeed(seed uint64) Option { return func(c *Config) { c.Seed = seed } }

// WithCheckTimeout sets the check's timeout.
func WithCheckTimeout(d time.Duration) Option { return func(c *Config) { c.CheckTimeout = d } }

// WithOpTimeout sets the timeout of one operation.
func WithOpTimeout(d time.Duration) Option { return func(c *Config) { c.OpTimeout = d } }

// WithArtifactDir sets where a violation's visualization is written.
func WithArtifactDir(dir string) Option { return func(c *Config) { c.ArtifactDir = dir } }

// WithConventions sets the store's declared conventions.
func WithConventions(conv store.Conventions) Option { return func(c *Config) { c.Conventions = conv } }

// WithConfig replaces the whole configuration.
func WithConfig(cfg Config) Option { return func(c *Config) { *c = cfg } }
