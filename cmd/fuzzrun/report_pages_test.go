package main

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// A consumer's model check reports its schedules as schedules, a bytes
// per state measured on its cache, and its counterexample drawn, "(new)"
// when the run wrote the file and "(already known)" when it was there.
func TestConsumerExplorePageNamesSchedulesAndNewFiles(t *testing.T) {
	dir := t.TempDir()
	for i, known := range []string{"(new)", "(already known)"} {
		page := filepath.Join(t.TempDir(), "r.html")
		r := fuzzrun(t, append([]string{"consumer", "splitcheck", "-explore", "-corpus", dir, "-html", page}, small...)...)
		if r.code != exitViolation {
			t.Fatalf("run %d: exit %d\n%s%s", i+1, r.code, r.stdout, r.stderr)
		}
		html := readFile(t, page)
		for _, want := range []string{" schedules in ", `data-figure="schedules">`, `<table class="timeline" data-kind="consumer"`, "</code> " + known} {
			if !strings.Contains(html, want) {
				t.Errorf("run %d: the page lacks %s", i+1, want)
			}
		}
		if strings.Contains(html, " checks in ") {
			t.Errorf("run %d: the page counts schedules as checks", i+1)
		}
		m := regexp.MustCompile(`data-figure="bytes-per-state">(\d+)<`).FindStringSubmatch(html)
		if m == nil {
			t.Errorf("run %d: no bytes/state on the page", i+1)
		} else if n, _ := strconv.Atoi(m[1]); n <= 16 {
			t.Errorf("run %d: %d bytes/state: not a measure of the cache", i+1, n)
		}
	}
}

// The reference world's explore page says "(new)" for the file the run
// wrote, "(already known)" for one that was there before it.
func TestExplorePageSaysWhetherTheFileIsNew(t *testing.T) {
	dir := t.TempDir()
	for i, known := range []string{"(new)", "(already known)"} {
		page := filepath.Join(t.TempDir(), "r.html")
		r := fuzzrun(t, "explore", "-depth", "2", "-target", "no-dedup", "-corpus", dir, "-html", page)
		if r.code != exitViolation {
			t.Fatalf("run %d: exit %d\n%s%s", i+1, r.code, r.stdout, r.stderr)
		}
		if html := readFile(t, page); !strings.Contains(html, "</code> "+known) {
			t.Errorf("run %d: the page does not say %s: %v", i+1, known, regexp.MustCompile(`corpus file <code>[^<]*</code>[^<]*`).FindAllString(html, -1))
		}
	}
}
