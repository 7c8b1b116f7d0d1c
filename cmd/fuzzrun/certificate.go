package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/corpus/casefile"
	"github.com/idemcheck/idemcheck/internal/consumerharness"
)

// A shard's certificate: what one shard of a split model check searched
// and found (fuzzrun consumer NAME -explore -shard i/N), in a file that
// fuzzrun merge combines with the other shards' into one verdict.

// certificateFormat names the certificates' format and its version.
const certificateFormat = "idemcheck-shard-certificate/1"

// certificate is a shard's certificate.
type certificate struct {
	Format   string `json:"format"`
	Consumer string `json:"consumer"`
	Backend  string `json:"backend"`
	// Fingerprint names what was searched: the consumer (its name, schema
	// and database), the bounds, the reductions switched off and the
	// build of fuzzrun. Shards of different searches do not merge.
	Fingerprint string                 `json:"fingerprint"`
	Bounds      consumerharness.Bounds `json:"bounds"`
	Shard       int                    `json:"shard"`
	Shards      int                    `json:"shards"`
	// Prefixes are the prefixes this shard searched, level after level.
	Prefixes  []consumerharness.ShardLevel `json:"prefixes"`
	Schedules int64                        `json:"schedules"`
	Judged    int64                        `json:"judged"`
	States    int64                        `json:"states"`
	// Verdict is verified, counterexample or not verified (Stopped says
	// why).
	Verdict        string                     `json:"verdict"`
	Stopped        string                     `json:"stopped,omitempty"`
	Explored       string                     `json:"explored"`
	Counterexample *certificateCounterexample `json:"counterexample,omitempty"`
	ElapsedNs      time.Duration              `json:"elapsedNs"`
}

// certificateCounterexample is a shard's shortest counterexample.
type certificateCounterexample struct {
	Law         string `json:"law"`
	Summary     string `json:"summary,omitempty"`
	Preemptions int    `json:"preemptions"`
	Steps       int    `json:"steps"`
	Shortest    bool   `json:"shortest"`
	// Order is its place among every schedule that breaks a law: the
	// merge reports the least of the shards'.
	Order consumerharness.CounterexampleOrder `json:"order"`
	// Scenario is the schedule, as a corpus file holds it.
	Scenario   json.RawMessage `json:"scenario"`
	CorpusFile string          `json:"corpusFile,omitempty"`
}

// The verdicts of a certificate.
const (
	verdictVerified       = "verified"
	verdictCounterexample = "counterexample"
	verdictNotVerified    = "not verified"
)

// newCertificate is the certificate of a shard's result.
func newCertificate(c consumerharness.Consumer, cx *consumerExplore, res consumerharness.VerifyResult) (*certificate, error) {
	cert := &certificate{Format: certificateFormat, Consumer: res.Consumer, Backend: res.Backend, Bounds: res.Bounds,
		Shard: cx.shard.I, Shards: cx.shard.N, Prefixes: res.ShardLevels, Schedules: res.Schedules, Judged: res.Judged, States: res.States,
		Verdict: verdictNotVerified, Stopped: res.Stopped, Explored: res.Explored(), ElapsedNs: res.Elapsed}
	fp, err := fingerprint(c, cx, res)
	if err != nil {
		return nil, err
	}
	cert.Fingerprint = fp
	switch {
	case res.Failed:
		cert.Verdict = verdictCounterexample
		js, err := res.Scenario.Marshal()
		if err != nil {
			return nil, err
		}
		cert.Counterexample = &certificateCounterexample{Law: res.Law, Summary: res.Summary(), Preemptions: res.Preemptions, Steps: res.Steps,
			Shortest: res.Shortest, Scenario: js, CorpusFile: res.CorpusFile}
		if res.Order != nil {
			cert.Counterexample.Order = *res.Order
		}
	case res.Verified:
		cert.Verdict = verdictVerified
	}
	return cert, nil
}

// fingerprint hashes what a search was of: the consumer's name, schema
// and database, the bounds, the reductions switched off, and fuzzrun's
// build (its module version and revision, when the build records them).
func fingerprint(c consumerharness.Consumer, cx *consumerExplore, res consumerharness.VerifyResult) (string, error) {
	bounds, err := json.Marshal(res.Bounds)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, part := range []string{res.Consumer, res.Backend, c.Schema, string(bounds), fmt.Sprint(cx.noPOR, cx.noCache, cx.noSymmetry), buildOf()} {
		fmt.Fprintf(h, "%d:%s;", len(part), part)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// buildOf names fuzzrun's build: a shard of another build may search
// another tree.
func buildOf() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	parts := []string{bi.GoVersion, bi.Main.Version}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" || s.Key == "vcs.modified" {
			parts = append(parts, s.Key+"="+s.Value)
		}
	}
	return strings.Join(parts, " ")
}

// defaultCertificate is where a shard's certificate goes without
// -certificate: in the working directory, named by the consumer and the
// shard.
func defaultCertificate(consumer string, i, n int) string {
	name := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, consumer)
	return fmt.Sprintf("certificate-%s-%d-of-%d.json", name, i, n)
}

// writeCertificate writes cert to path atomically.
func writeCertificate(path string, cert *certificate) error {
	js, err := json.MarshalIndent(cert, "", "  ")
	if err != nil {
		return err
	}
	_, err = casefile.WriteFile(filepath.Dir(path), filepath.Base(path), append(js, '\n'), true)
	return err
}

// readCertificate reads a certificate, naming the file in every error.
func readCertificate(path string) (*certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cert certificate
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cert); err != nil {
		return nil, fmt.Errorf("%s: not a shard certificate: %w", path, err)
	}
	switch {
	case cert.Format != certificateFormat:
		return nil, fmt.Errorf("%s: format %q, not %q", path, cert.Format, certificateFormat)
	case cert.Shards < 1 || cert.Shard < 0 || cert.Shard >= cert.Shards:
		return nil, fmt.Errorf("%s: shard %d/%d is not i/N with 0 <= i < N", path, cert.Shard, cert.Shards)
	case cert.Verdict != verdictVerified && cert.Verdict != verdictCounterexample && cert.Verdict != verdictNotVerified:
		return nil, fmt.Errorf("%s: verdict %q", path, cert.Verdict)
	case (cert.Verdict == verdictCounterexample) != (cert.Counterexample != nil):
		return nil, fmt.Errorf("%s: verdict %s with counterexample %t", path, cert.Verdict, cert.Counterexample != nil)
	}
	return &cert, nil
}
