// Package doccheck holds no code: its tests enforce the house rules on
// documentation. Every exported identifier of the module has a doc comment
// (below), and every public package's `go doc -all` is self-contained
// (public_docs_test.go): no path of the repository's tooling or design
// notes (seeds/, ../shared, ARCHITECTURE.md), no Go file name, and none of
// the package's unexported camelCase identifiers; README and CHANGELOG name
// no such path either. Other tests check README's commands, Makefile and
// .env.example, and that every package's imports, test code included,
// follow the package map (imports_test.go: the rules are written in the
// test, each exception with its reason).
//
// The test parses every non-test .go file of the module (go/parser, comments
// kept, no type checking) and fails listing, with file:line, each exported
// declaration that has none:
//
//   - top-level funcs, and methods whose receiver type is exported
//     (including the methods that implement a sealed interface, such as
//     EventType on every duroxide event kind);
//   - types (a parenthesized type group's comment counts only when the
//     group declares a single type);
//   - consts and vars (a comment on the enclosing group, or a trailing line
//     comment, counts, as go doc shows both);
//   - methods of exported interfaces (a doc or trailing line comment).
//
// A comment made only of directives (//go:...) or blank lines does not
// count. Methods of unexported types are skipped: go doc never shows them.
//
// Packages still being written by other engineers may carry known gaps in
// the test's allow-list (allowMissing in doccheck_test.go); the test prints
// its size while it is non-empty, and refuses entries for packages that must
// already be complete.
package doccheck
