package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	goruntime "runtime"
	"strconv"
	"strings"
	"time"
)

// The -record flag: append the run to a results file in the layout of
// duroxide's stress-test-results.md (a "## Commit: <hash> - Timestamp:"
// heading, the environment, the command, and the tables in a code block).

// appendRecord appends one entry for a run with args and its report to
// path, creating the file when missing.
func appendRecord(path string, args []string, report string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	entry := recordEntry(gitCommit(), time.Now().UTC(), machine(), args, report)
	if _, err := f.WriteString(entry); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// recordEntry formats one entry.
func recordEntry(commit string, at time.Time, machine string, args []string, report string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Commit: %s - Timestamp: %s\n\n", commit, at.Format("2006-01-02 15:04:05 UTC"))
	fmt.Fprintf(&b, "### Environment\n- Machine: %s\n- Command: `%s`\n\n", machine, commandLine(args))
	fmt.Fprintf(&b, "### Test Results\n```\n%s```\n\n---\n", report)
	return b.String()
}

// commandLine is the go run command that reproduces args.
func commandLine(args []string) string {
	parts := []string{"go run ./cmd/cdb-stress"}
	for _, a := range args {
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
