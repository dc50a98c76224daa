package childproc_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/internal/childproc"
)

// childEnv selects the child mode of TestAChildIsKilledWhileItRuns.
const childEnv = "CHILDPROC_TEST_CHILD"

// The child says who it is and then sleeps a minute; Kill ends it at
// once, and a second Kill returns the first's error.
func TestAChildIsKilledWhileItRuns(t *testing.T) {
	if v := os.Getenv(childEnv); v != "" {
		fmt.Println("CHILD " + v)
		time.Sleep(time.Minute)
		fmt.Println("NOT KILLED")
		return
	}
	t.Parallel()
	c := childproc.Start(t, "^TestAChildIsKilledWhileItRuns$", childEnv, "one")
	if !c.Lines.Scan() || c.Lines.Text() != "CHILD one" {
		t.Fatalf("first line %q (%v), want %q", c.Lines.Text(), c.Lines.Err(), "CHILD one")
	}
	if c.PID() <= 0 || c.PID() == os.Getpid() {
		t.Fatalf("child pid %d", c.PID())
	}
	start := time.Now()
	if err := c.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := c.Kill(); err != nil {
		t.Errorf("a second Kill: %v, want the first's nil", err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("Kill returned after %v: it waited for the child's sleep", took)
	}
}
