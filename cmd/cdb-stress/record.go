package main

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	goruntime "runtime"
	"strconv"
	"strings"
	"time"
)

// The -record flag: add the run to a results file in the layout of
// duroxide's stress-test-results.md: newest entry first, below the file's
// introduction; a "## Commit: <hash> - Timestamp:" heading, the commits
// since the previous entry, the environment and command, and the report in
// a code block.

// commitHeading starts every entry.
const commitHeading = "## Commit: "

// appendRecord adds one entry for a run with args and its report to path,
// before the newest entry (after the introduction), creating the file when
// missing; loadAtStart is loadAverage() taken when the run began.
func appendRecord(path string, args []string, report, loadAtStart string) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	text := string(old)
	commit := gitCommit()
	env := fmt.Sprintf("%s; load average %s at the start, %s at the end", machine(), loadAtStart, loadAverage())
	entry := recordEntry(commit, time.Now().UTC(), env, changesSince(previousCommit(text)), args, report)
	at := strings.Index(text, "\n"+commitHeading)
	if at < 0 {
		text += entry
	} else {
		text = text[:at+1] + entry + text[at+1:]
	}
	return os.WriteFile(path, []byte(text), 0o644)
}

// recordEntry formats one entry; changes is the one-line log of the
// commits since the previous entry ("" for none).
func recordEntry(commit string, at time.Time, machine, changes string, args []string, report string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s%s - Timestamp: %s\n\n", commitHeading, commit, at.Format("2006-01-02 15:04:05 UTC"))
	if changes != "" {
		fmt.Fprintf(&b, "### Changes Since Last Test\n```\n%s\n```\n\n", changes)
	}
	fmt.Fprintf(&b, "### Environment\n- Machine: %s\n- Command: `%s`\n\n", machine, commandLine(args))
	fmt.Fprintf(&b, "### Test Results\n```\n%s```\n\n---\n\n", report)
	return b.String()
}

// previousCommit returns the commit of the newest entry of a results file,
// without a "-dirty" suffix, or "".
func previousCommit(text string) string {
	at := strings.Index(text, commitHeading)
	if at < 0 {
		return ""
	}
	f := strings.Fields(text[at+len(commitHeading):])
	if len(f) == 0 {
		return ""
	}
	return strings.TrimSuffix(f[0], "-dirty")
}

// maxChanges caps the commits listed under "Changes Since Last Test".
const maxChanges = 30

// changesSince returns the one-line log of the commits after since, or ""
// when since is empty, unknown to git, or HEAD itself.
func changesSince(since string) string {
	if since == "" || since == "unknown" {
		return ""
	}
	out, err := exec.Command("git", "log", "--oneline", fmt.Sprintf("-%d", maxChanges), since+"..HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// commandLine is the go run command that reproduces args; the -record
// flag (where the run was written down, not how it ran) is left out.
func commandLine(args []string) string {
	parts := []string{"go run ./cmd/cdb-stress"}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "="); {
		case strings.HasPrefix(a, "-") && name == "record" && hasValue:
			continue
		case strings.HasPrefix(a, "-") && name == "record":
			i++ // and its value
			continue
		}
		if strings.ContainsAny(a, " \t'\"") {
			a = strconv.Quote(a)
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// gitCommit returns the short hash of HEAD, with "-dirty" when Go sources
// or go.mod/go.sum differ from it (modified or untracked: the binary was
// built from them), or "unknown" without git.
func gitCommit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	commit := strings.TrimSpace(string(out))
	status, err := exec.Command("git", "status", "--porcelain", "--", "*.go", "go.mod", "go.sum").Output()
	if err == nil && len(strings.TrimSpace(string(status))) > 0 {
		commit += "-dirty"
	}
	return commit
}

// machine describes the host: cores, memory, OS/architecture and Go.
func machine() string {
	mem := "unknown memory"
	if kb, ok := memTotalKB(); ok {
		mem = fmt.Sprintf("%.0f GiB", float64(kb)/(1<<20))
	}
	return fmt.Sprintf("%d cores, %s, %s/%s, %s", goruntime.NumCPU(), mem, goruntime.GOOS, goruntime.GOARCH, goruntime.Version())
}

// loadAverage returns the 1, 5 and 15 minute load averages from
// /proc/loadavg, e.g. "0.52 0.58 0.59", or "unknown". Other processes
// share the CPUs with the run; the record says how busy they were.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// memTotalKB reads MemTotal from /proc/meminfo (Linux only).
func memTotalKB() (int64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			n, err := strconv.ParseInt(fields[1], 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
