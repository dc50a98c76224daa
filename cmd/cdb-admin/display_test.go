package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The odd workload's instances: ids that a table or a message printing
// them raw would garble, and an activity input too long for a row.
var (
	tabID       = "tab\there"
	newlineID   = "new\nline"
	trailingID  = "trailing "
	longID      = "long-" + strings.Repeat("0123456789", 30)[:295] // 300 characters
	longInputID = "long-input"
	longInput   = strings.Repeat("W", 300)
	namedID     = "named" // runs tabbedName
)

// tabbedName is an orchestration name with a tab in it.
const tabbedName = "Tabbed\tName"

var (
	oddOnce sync.Once
	oddOnes *fixture
)

// oddFixture is one container holding the odd workload (every instance
// Completed), for the tests that change nothing.
func oddFixture(t *testing.T) *fixture {
	t.Helper()
	oddOnce.Do(func() {
		f := openFixture(t)
		oddOnes = f
		f.runWorkload([]start{
			{tabID, "Hello", "tab"}, {newlineID, "Hello", "newline"}, {trailingID, "Hello", "trailing"},
			{longID, "Hello", "long"}, {longInputID, "Hello", longInput}, {namedID, tabbedName, "named"},
		})
	})
	require.NotNil(t, oddOnes, "seeding failed in another test")
	return &fixture{t: t, srv: oddOnes.srv, container: oddOnes.container, p: oddOnes.p}
}

// columns splits a table row into its cells (separated by two spaces or
// more; no printed cell holds two spaces in a row).
func columns(row string) []string {
	return regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(row), -1)
}

// rowOf returns the table row that starts with cell, failing the test when
// there is none.
func rowOf(t *testing.T, table, cell string) string {
	t.Helper()
	for _, l := range strings.Split(table, "\n") {
		if strings.HasPrefix(l, cell+" ") {
			return l
		}
	}
	t.Fatalf("no row starts with %s in:\n%s", cell, table)
	return ""
}

func TestListQuotesIDsAndNamesWithControlCharactersOrEdgeSpaces(t *testing.T) {
	f := oddFixture(t)
	r := f.admin("", "list")
	require.Equal(t, exitOK, r.code, r.stderr)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	require.Len(t, lines, 7, "a header and one line per instance:\n%s", r.stdout)
	for _, l := range lines {
		assert.Len(t, columns(l), 8, "every row has the header's 8 cells: %q", l)
	}
	assert.Equal(t, []string{`"tab\there"`, "Hello", "Completed", "1"}, columns(rowOf(t, r.stdout, `"tab\there"`))[:4])
	assert.Equal(t, "Hello", columns(rowOf(t, r.stdout, `"new\nline"`))[1])
	assert.Equal(t, "Completed", columns(rowOf(t, r.stdout, `"trailing "`))[2])
	assert.Equal(t, `"Tabbed\tName"`, columns(rowOf(t, r.stdout, namedID))[1])

	rows := decode[[]listRowJSON](t, f.admin("", "list", "-json"))
	assert.ElementsMatch(t, []string{tabID, newlineID, trailingID, longID, longInputID, namedID}, instanceIDs(rows),
		"-json prints the ids as they are")
}

func TestListCutsLongIDsUnlessVerbose(t *testing.T) {
	f := oddFixture(t)
	r := f.admin("", "list")
	require.Equal(t, exitOK, r.code, r.stderr)
	row := rowOf(t, r.stdout, longID[:idWidth-1]+"…")
	assert.NotContains(t, r.stdout, longID[:idWidth])
	assert.Less(t, utf8.RuneCountInString(row), 160, "the row stays short: %s", row)

	whole := f.admin("", "-v", "list")
	require.Equal(t, exitOK, whole.code, whole.stderr)
	assert.Equal(t, longID, columns(rowOf(t, whole.stdout, longID))[0])
}

func TestShowFindsAnIDWithATrailingSpaceAndQuotesIt(t *testing.T) {
	f := oddFixture(t)
	r := f.admin("", "show", trailingID)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Regexp(t, `(?m)^Instance:\s+"trailing "$`, r.stdout)

	r = f.admin("", "show", tabID)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Regexp(t, `(?m)^Instance:\s+"tab\\there"\nOrchestration:\s+Hello `, r.stdout)

	r = f.admin("", "show", namedID)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Regexp(t, `(?m)^Orchestration:\s+"Tabbed\\tName" \(version`, r.stdout)

	missing := f.admin("", "show", "trailing")
	assert.Equal(t, exitNotFound, missing.code)
	assert.Contains(t, missing.stderr, "instance trailing not found", "an id that needs no quotes is printed as it is")
}

func TestHistoryPrintsActivityNamesBeforeTheirCutInputs(t *testing.T) {
	f := oddFixture(t)
	r := f.admin("", "history", longInputID)
	require.Equal(t, exitOK, r.code, r.stderr)
	scheduled := regexp.MustCompile(`(?m)^.*ActivityScheduled.*$`).FindString(r.stdout)
	assert.Regexp(t, `ActivityScheduled\s+name="Greet" input="W+…"$`, scheduled)
	assert.Regexp(t, `OrchestrationStarted\s+name="Hello" version="[^"]*" input="W+…"`, r.stdout)
	assert.NotContains(t, r.stdout, longInput[:detailValueWidth])

	f.historyJSONIsTheStoredHistory(longInputID)

	header := f.admin("", "history", newlineID)
	require.Equal(t, exitOK, header.code, header.stderr)
	assert.True(t, strings.HasPrefix(header.stdout, `"new\nline", execution 1: `), header.stdout)
}

func TestTreeAndMessagesQuoteIDsThatNeedIt(t *testing.T) {
	f := oddFixture(t)
	tree := f.admin("", "tree", tabID)
	require.Equal(t, exitOK, tree.code, tree.stderr)
	assert.Equal(t, `"tab\there"  Hello  Completed`+"\n", tree.stdout)

	declined := f.admin("n\n", "delete", tabID, trailingID)
	assert.Equal(t, exitAborted, declined.code)
	assert.Contains(t, declined.stderr, `Delete 2 instance(s) ("tab\there", "trailing ")`)

	noExec := f.admin("", "history", trailingID, "-execution", "7")
	assert.Equal(t, exitNotFound, noExec.code)
	assert.Contains(t, noExec.stderr, `instance "trailing " has no execution 7`)
}

func TestQuoteIfNeededQuotesOnlyWhatWouldReadAmbiguously(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"hello-1":        "hello-1",
		"my order 7":     "my order 7",
		"café/ü":         "café/ü",
		"a\\b":           `a\b`,
		"":               `""`,
		"trailing ":      `"trailing "`,
		" leading":       `" leading"`,
		"tab\there":      `"tab\there"`,
		"new\nline":      `"new\nline"`,
		"say \"hi\"":     `"say \"hi\""`,
		"nbsp\u00a0":     `"nbsp\u00a0"`,
		"zero\u200bwide": `"zero\u200bwide"`,
		"bad\xffutf8":    `"bad\xffutf8"`,
		"bell\a":         `"bell\a"`,
	} {
		assert.Equal(t, want, quoteIfNeeded(in), "%q", in)
	}
}

func TestIDCellCutsLongIDsWithAnEllipsis(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "short", idCell("short", false))
	plain := strings.Repeat("x", 300)
	assert.Equal(t, strings.Repeat("x", idWidth-1)+"…", idCell(plain, false))
	assert.Equal(t, plain, idCell(plain, true), "whole")

	tabbed := "a\tb" + strings.Repeat("é", 300)
	got := idCell(tabbed, false)
	assert.LessOrEqual(t, utf8.RuneCountInString(got), idWidth)
	require.True(t, strings.HasSuffix(got, `"…`), got)
	var prefix string
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSuffix(got, "…")), &prefix), "a quoted prefix: %s", got)
	assert.True(t, strings.HasPrefix(tabbed, prefix), got)
	assert.Equal(t, `"`+strings.Repeat(`\n`, 18)+`"…`, idCell(strings.Repeat("\n", 300), false), "never inside an escape")
}

func TestCutJSONCutsStringsBetweenCharacters(t *testing.T) {
	t.Parallel()
	assert.Equal(t, `"short"`, cutJSON(`"short"`, 40))
	escaped, err := json.Marshal(strings.Repeat("\n", 100))
	require.NoError(t, err)
	got := cutJSON(string(escaped), 40)
	assert.Equal(t, `"`+strings.Repeat(`\n`, 18)+`…"`, got)
	assert.Equal(t, `{"a":1,"b":`+"…", cutJSON(`{"a":1,"b":2,"c":3}`, 12), "an object is cut as text")
}
