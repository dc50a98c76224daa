package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"
)

// Output: human tables (text/tabwriter) by default, indented JSON with
// duroxide's snake_case field names under -json.

// cellWidth is the widest a free-text table cell (an output, an event's
// detail) is printed; longer text is cut with "…". -json prints it whole.
const cellWidth = 60

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
