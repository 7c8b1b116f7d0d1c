// Package docscheck holds the tests that keep the project's documentation
// true to the tree and to what it shows a reader doing.
//
// # Paths, links, packages (docs_test.go, laws_test.go)
//
// Every repository path the README, the pages under docs/ and every other
// markdown document of the tree (cmd/fuzzrun/README.md, the examples'
// READMEs, the protocols) name must exist, every relative link must
// resolve, every package a documented go test or go run command names must
// exist (in the repository, or in the reader's module the snippets make,
// below), every property/law named must be one, and the README must stay
// short enough to read in five minutes.
//
// # Go snippets (snippets_test.go)
//
// Every ```go block of README.md and docs/*.md compiles, in one scratch
// module made the way the README tells a newcomer to make theirs, outside
// the repository: the go mod commands of the README's setup block, with
// the checkout's path (../idemcheck) replaced by this one's, then the
// checkout's go.sum, the snippets' files, go mod tidy (or, when the module
// proxy cannot be reached, -mod=mod from the module cache) and go vet
// ./... over the lot. Then, unless -short, the tests of the blocks marked
// run run (go test -v, one command for all), and every Check among them
// must log its one-line summary. With IDEMCHECK_DOCS_FUZZ=1 the README's
// go test -fuzz command runs too, as written but for -fuzztime 20x (the
// first build with the fuzzing instrumentation takes minutes).
//
// Each ```go block is preceded by a marker, an HTML comment (invisible
// once rendered) that says what the block is; a block without one fails
// the test. PATH is a .go file of the scratch module, whose module path is
// the README's (example.com/payments), so that a snippet imports the
// reader's packages as example.com/payments/DIR:
//
//	<!-- docscheck: file PATH [run] -->
//	    the block is the whole file PATH, as the reader writes it
//	<!-- docscheck: append PATH [run] -->
//	    the block is added at the end of PATH (made by another block)
//	<!-- docscheck: wrap PATH [run]
//	...the file around the block, its place a line {{snippet}}...
//	-->
//	    the block is a fragment (statements, declarations without their
//	    package clause and imports): the marker gives the surrounding file
//	<!-- docscheck: same PATH -->
//	    the block shows again one that went into PATH, and must equal it
//	<!-- docscheck: stand-in PATH
//	...a file...
//	-->
//	    a file the snippets assume and the page does not show: a stand-in
//	    for a team's package (mystore, mylib), built on the repository's
//	    own implementations; no block follows
//	<!-- docscheck: setup -->
//	    the indented block that follows holds the commands that make the
//	    reader's module (mkdir, cd, go mod init, go mod edit)
//
// run runs the block's Test and Fuzz functions (a fuzz test's seeds); a
// block whose tests are slow (a Verify within the default bounds, a minute)
// or need a server is compiled only. Files are made in page order (the
// README first), appends added after, sames checked last: a page may use a
// file the README made (docs/consumers.md's PostgreSQL test is beside the
// README's ledger_test.go). Compile errors name the page's line.
//
// # Commands (commands_test.go)
//
// Every fuzzrun command the README shows (go run [-tags T] ./cmd/fuzzrun
// ...) is in a command block, never inline, on a line that ends with a
// comment "# exit N: what it prints". Unless -short, the test builds
// fuzzrun once (with -tags servers too when a command needs it), runs each
// command in the root of a checkout (a copy of the README and of the
// directories of the files the commands name) with a small budget (budget:
// -duration 2s for a campaign, 3s for the reference world's explorer, -runs
// 1 for the mutation benchmark), its output directory a temporary one, and
// holds its exit status to N; a comment that says VERIFIED must be borne
// out by the output. Each command must leave the checkout as it was, and
// every file it names under the output directory must be there. Skipped,
// naming why: a Node.js consumer without node (NODE_REQUIRED=1 makes it a
// failure) and the Redis consumer without IDEMCHECK_REDIS_ADDR. A model
// check that must finish its proof (VERIFIED) is cut short to 2 s, its exit
// status not held, unless IDEMCHECK_README_SLOW=1.
package docscheck
