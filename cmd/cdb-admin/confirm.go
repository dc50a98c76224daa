package main

import (
	"bufio"
	"fmt"
	"strings"
	"time"
)

// confirm asks question on stderr and reads the answer from stdin; only
// "y" or "yes" (any case) goes on. Anything else, or no answer (stdin
// closed, as in a script), is an exitAborted error: nothing was deleted.
func confirm(s *session, question string) error {
	fmt.Fprintf(s.io.stderr, "%s [y/N]: ", question)
	answer, _ := bufio.NewReader(s.io.stdin).ReadString('\n')
	if !strings.HasSuffix(answer, "\n") {
		fmt.Fprintln(s.io.stderr) // no answer typed: end the prompt's line
	}
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return &cliError{code: exitAborted, msg: "aborted: nothing was deleted (answer y, or pass -yes to skip the question)"}
}

// parseWhen reads a point in time: RFC 3339, or a Go duration meaning that
// long before now ("720h"). It returns milliseconds since the Unix epoch.
func parseWhen(flagName, s string, now time.Time) (uint64, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		if t.UnixMilli() < 0 {
			return 0, usagef("%s %q is before 1970", flagName, s)
		}
		return uint64(t.UnixMilli()), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, usagef("%s %q is neither an RFC 3339 time (2026-01-31T00:00:00Z) nor a positive duration (720h)", flagName, s)
	}
	return uint64(now.Add(-d).UnixMilli()), nil
}

// describeIDs names up to five ids (quoteIfNeeded), then how many more
// there are.
func describeIDs(ids []string) string {
	shown := make([]string, min(len(ids), 5))
	for i := range shown {
		shown[i] = quoteIfNeeded(ids[i])
	}
	if len(ids) <= 5 {
		return strings.Join(shown, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(shown, ", "), len(ids)-5)
}
