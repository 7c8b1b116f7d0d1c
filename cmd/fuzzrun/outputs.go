package main

import (
	"os"
	"path/filepath"
	"strings"
)

// Where fuzzrun writes what no flag placed. A demonstration command
// (fuzzrun, fuzzrun consumer adr, fuzzrun mutants) leaves the working tree
// as it was: its counterexamples and its HTML report go under a directory
// of the user's cache, and every path written is printed. A regression
// corpus a team keeps is one it chose: -corpus DIR (and -html FILE) write
// where they say.

// outputEnv, when set, is the directory fuzzrun writes under instead of
// the user's cache.
const outputEnv = "IDEMCHECK_OUTPUT_DIR"

// outputDir is the directory of what fuzzrun writes by default:
// $IDEMCHECK_OUTPUT_DIR, else idemcheck/fuzzrun in the user's cache
// directory ($XDG_CACHE_HOME or ~/.cache on Linux), else in the system's
// temporary directory.
func outputDir() string {
	if d := os.Getenv(outputEnv); d != "" {
		return d
	}
	base, err := os.UserCacheDir()
	if err != nil || base == "" {
		base = os.TempDir()
	}
	return filepath.Join(base, "idemcheck", "fuzzrun")
}

// The default corpus directories, under outputDir; each mirrors the
// layout of the repository's corpus (corpus/cases, corpus/consumers,
// corpus/brokers).
func defaultCorpusDir(kind string) string { return filepath.Join(outputDir(), "corpus", kind) }

// defaultReportFile is the HTML report of a command not given -html:
// reports/NAME.html under outputDir, NAME the command (and its consumer),
// so that runs of different commands do not overwrite each other's.
func defaultReportFile(name string) string {
	return filepath.Join(outputDir(), "reports", safeFileName(name)+".html")
}

// safeFileName makes a file name of s: letters, digits, '-' and '.'.
func safeFileName(s string) string {
	if out := safeName(s, ".", 60); out != "" {
		return out
	}
	return "fuzzrun"
}

// safeConsumerName makes a file-name-friendly name of a scheme spec.
func safeConsumerName(spec string) string { return safeName(spec, "", 40) }

// safeName is s in lower case, its letters, digits and the runes of keep
// kept and every other rune a '-', cut after about limit bytes and
// trimmed of '-' and keep at its ends.
func safeName(s, keep string, limit int) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', strings.ContainsRune(keep, r):
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
		if b.Len() >= limit {
			break
		}
	}
	return strings.Trim(b.String(), "-"+keep)
}

// placeOutputs sets -corpus and -html, where the command line did not, to
// their defaults for command c under outputDir.
func (o *options) placeOutputs(c string, given map[string]bool) {
	if !given["corpus"] {
		switch {
		case o.broker != "" && o.consumer != "":
			o.corpusDir = filepath.Join(defaultCorpusDir("brokers"), "consumers")
		case o.broker != "":
			o.corpusDir = defaultCorpusDir("brokers")
		case o.consumer != "":
			o.corpusDir = defaultCorpusDir("consumers")
		default:
			o.corpusDir = defaultCorpusDir("cases")
		}
	}
	if !given["html"] {
		name := c
		switch {
		case o.consumer != "" && o.explore:
			name = "consumer-" + safeConsumerName(o.consumer) + "-explore"
		case o.consumer != "" && o.replay != "":
			name = "consumer-" + safeConsumerName(o.consumer) + "-replay"
		case o.consumer != "":
			name = "consumer-" + safeConsumerName(o.consumer)
		case o.projection:
			name = "explore-projection"
		}
		o.html = defaultReportFile(name)
	}
}
