package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"
)

// Output: human tables (text/tabwriter) by default, indented JSON with
// duroxide's snake_case field names under -json.

// cellWidth is the widest a free-text table cell (an output, an event's
// detail) is printed; longer text is cut with "…". -json prints it whole.
const cellWidth = 60

// idWidth is the widest an instance id or a name is printed in a table
// cell where a long one would stretch every row (list's columns); longer
// ones are cut with "…". -v and -json print them whole.
const idWidth = 40

// quoteIfNeeded returns an instance id or a name as cdb-admin prints it in
// tables and messages: unchanged when it reads unambiguously, else quoted
// in Go syntax (strconv.Quote, fmt's %q) when it is empty, begins or ends
// with white space, or holds a control character, a double quote, a rune
// that is not printable or bytes that are not UTF-8. Quoted, a tab or a
// newline cannot break a table and a trailing space is visible.
func quoteIfNeeded(s string) string {
	if needsQuotes(s) {
		return strconv.Quote(s)
	}
	return s
}

// needsQuotes reports whether quoteIfNeeded quotes s.
func needsQuotes(s string) bool {
	if s == "" || !utf8.ValidString(s) {
		return true
	}
	first, _ := utf8.DecodeRuneInString(s)
	last, _ := utf8.DecodeLastRuneInString(s)
	if unicode.IsSpace(first) || unicode.IsSpace(last) {
		return true
	}
	return strings.IndexFunc(s, func(r rune) bool { return r == '"' || !strconv.IsPrint(r) }) >= 0
}

// idCell returns an instance id or a name for a table cell: quoteIfNeeded,
// cut to idWidth runes with "…" unless whole. A cut id keeps the quoting
// of the whole one: a quoted id is cut to a quoted prefix followed by "…"
// ("a\tb"…), so the ellipsis is never mistaken for part of the id.
func idCell(s string, whole bool) string {
	q := quoteIfNeeded(s)
	if whole || utf8.RuneCountInString(q) <= idWidth {
		return q
	}
	quoted := q != s
	form := func(prefix string) string {
		if quoted {
			return strconv.Quote(prefix)
		}
		return prefix
	}
	cut := ""
	for end := 0; end < len(s); {
		_, size := utf8.DecodeRuneInString(s[end:])
		end += size
		next := form(s[:end])
		if utf8.RuneCountInString(next)+1 > idWidth {
			break
		}
		cut = next
	}
	return cut + "…"
}

// printTable writes header and rows as aligned columns.
func printTable(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// formatMs formats milliseconds since the Unix epoch as UTC RFC 3339 with
// milliseconds; 0 is "-".
func formatMs(ms uint64) string {
	if ms == 0 {
		return "-"
	}
	return time.UnixMilli(int64(ms)).UTC().Format("2006-01-02T15:04:05.000Z")
}

// cell prints an optional text in a table: "-" when nil, else s on one
// line, cut to cellWidth runes.
func cell(s *string) string {
	if s == nil {
		return "-"
	}
	return truncate(*s, cellWidth)
}

// truncate puts s on one line and cuts it to n runes.
func truncate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// orDash returns s, or "-" when empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// nameCell is idCell for a name that may be empty (an instance whose
// start was never processed): "-" then.
func nameCell(name string, whole bool) string {
	if name == "" {
		return "-"
	}
	return idCell(name, whole)
}
