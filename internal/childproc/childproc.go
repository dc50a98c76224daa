// Package childproc runs the test binary again as a child process, for
// the tests that kill a process with SIGKILL and check what it left
// behind (a data directory's acknowledged writes, a restarted process's
// lease slots). The child runs in a mode its test selects with an
// environment variable; it reports on its standard output, which the
// parent reads line by line. Whatever becomes of the test, the child is
// killed and waited for when the test ends, so that no child outlives it.
package childproc

import (
	"bufio"
	"os"
	"os/exec"
	"sync"
	"testing"
)

// Child is a running copy of the test binary.
type Child struct {
	cmd  *exec.Cmd
	once sync.Once
	err  error
	// Lines reads the child's standard output line by line, until Kill
	// (whose wait closes the pipe).
	Lines *bufio.Scanner
}

// Start runs the test binary (os.Args[0]) again with -test.run=run and
// -test.count=1, and env=value added to this process's environment; the
// child's standard error goes to this process's. It stops the test
// (t.Fatal) when the child cannot start. The child is killed (Kill) when
// t ends, if it was not before.
func Start(t testing.TB, run, env, value string) *Child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run="+run, "-test.count=1")
	cmd.Env = append(os.Environ(), env+"="+value)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("childproc: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("childproc: start %s: %v", os.Args[0], err)
	}
	c := &Child{cmd: cmd, Lines: bufio.NewScanner(out)}
	t.Cleanup(func() { _ = c.Kill() })
	return c
}

// PID returns the child's process id.
func (c *Child) PID() int { return c.cmd.Process.Pid }

// Kill kills the child at once (SIGKILL on Unix: the child runs no
// deferred function and flushes nothing) and waits for it to exit. It
// returns the kill's error (a child that had exited already: "process
// already finished"); later calls return the first one's.
func (c *Child) Kill() error {
	c.once.Do(func() {
		c.err = c.cmd.Process.Kill()
		_ = c.cmd.Wait()
	})
	return c.err
}
