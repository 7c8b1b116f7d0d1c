// Package docscheck holds the test that keeps the project's documentation
// true to the tree: every repository path the README, the pages under docs/
// and every other markdown document of the tree (cmd/fuzzrun/README.md, the
// examples' READMEs, the protocols) name must exist, every relative link must resolve, every package a
// documented go test or go run command names must exist, and the README
// must stay short enough to read in five minutes.
package docscheck
