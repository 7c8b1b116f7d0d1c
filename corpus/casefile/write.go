package casefile

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Write saves c in dir under Name(c.Property, c.Scenario) and reports the
// path and whether the file is new. It never overwrites: if a file of that
// name exists — or the same scenario is saved under another property's
// name — the counterexample is already known, nothing is written, and the
// existing file's path is returned.
//
// The write is atomic, so a crash or a Ctrl-C never leaves a half-written
// case: the bytes go to a hidden temporary file in dir, are synced to disk,
// and are then hard-linked to the final name, which fails rather than
// replacing a file that appeared in the meantime (another campaign saving
// the same case). Where hard links are unsupported it falls back to a
// rename after an existence check.
func Write(dir string, c *Case) (path string, created bool, err error) {
	data, err := Encode(c)
	if err != nil {
		return "", false, err
	}
	name, err := caseName(c)
	if err != nil {
		return "", false, err
	}
	path = filepath.Join(dir, name)
	known := existing(dir, name)
	if known != "" && c.IsConsumer() {
		// A consumer's case is its own: the same schedule found against
		// another consumer (or breaking another law) is another case.
		known = ""
		if _, err := os.Lstat(path); err == nil {
			known = path
		}
	}
	if known != "" {
		return known, false, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", false, fmt.Errorf("corpus: %w", err)
	}
	tmp, err := writeTemp(dir, name, data)
	if err != nil {
		return "", false, err
	}
	defer os.Remove(tmp)
	created, err = publish(tmp, path)
	if err != nil {
		return "", false, err
	}
	if created {
		syncDir(dir)
		c.Path = path
	}
	return path, created, nil
}

// WriteFile saves data in dir under name atomically (a hidden temporary
// file in dir, synced, then given its name) and returns the path. With
// replace, a file of that name is replaced; without, it is left as it is.
func WriteFile(dir, name string, data []byte, replace bool) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("corpus: %w", err)
	}
	path := filepath.Join(dir, name)
	tmp, err := writeTemp(dir, name, data)
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp)
	if replace {
		if err := os.Rename(tmp, path); err != nil {
			return "", fmt.Errorf("corpus: publish %s: %w", path, err)
		}
	} else if _, err := publish(tmp, path); err != nil {
		return "", err
	}
	syncDir(dir)
	return path, nil
}

// existing returns the file in dir that holds the scenario of name, under
// this or another property; "" if there is none.
func existing(dir, name string) string {
	path := filepath.Join(dir, name)
	if _, err := os.Lstat(path); err == nil {
		return path
	}
	hash := name[strings.LastIndexByte(name, '-'):] // "-<hash>.json"
	matches, _ := filepath.Glob(filepath.Join(dir, "*"+hash))
	for _, m := range matches {
		if !strings.HasPrefix(filepath.Base(m), ".") {
			return m
		}
	}
	return ""
}

// writeTemp writes data to a new hidden file in dir and syncs it.
func writeTemp(dir, name string, data []byte) (string, error) {
	f, err := os.CreateTemp(dir, ".tmp-"+name+"-*")
	if err != nil {
		return "", fmt.Errorf("corpus: %w", err)
	}
	_, werr := f.Write(data)
	merr := f.Chmod(0o644) // CreateTemp makes it private; a corpus file is shared
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, merr, serr, cerr); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("corpus: write %s: %w", f.Name(), err)
	}
	return f.Name(), nil
}

// publish gives the complete temporary file its final name without ever
// replacing an existing file.
func publish(tmp, path string) (created bool, err error) {
	err = os.Link(tmp, path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrExist):
		return false, nil
	}
	// No hard links here (some network and FAT file systems): rename, which
	// is atomic but would replace, after checking the name is free.
	if _, serr := os.Lstat(path); serr == nil {
		return false, nil
	}
	if rerr := os.Rename(tmp, path); rerr != nil {
		return false, fmt.Errorf("corpus: publish %s: %w (link: %v)", path, rerr, err)
	}
	return true, nil
}

// syncDir makes the new directory entry durable. It is best effort: not
// every system can sync a directory, and the file itself is already synced.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}

// caseName is Name for a scenario case, and <target>-<law>-<hash>.json for
// a consumer-level case, hashed over its scenario's bytes.
func caseName(c *Case) (string, error) {
	if c.Consumer == nil {
		return Name(c.Property, c.Scenario)
	}
	sum := sha256.Sum256(c.Consumer)
	return safeName(c.Target) + "-" + safeName(c.Law) + "-" + hex.EncodeToString(sum[:])[:12] + ".json", nil
}
