// Package doccheck holds no code: its test enforces the house rule that
// every exported identifier of the module has a doc comment.
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
