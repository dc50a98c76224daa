package e2e_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/internal/childproc"
)

// killChildEnv selects the child mode of
// TestLocalServiceKeepsAcknowledgedStartsThroughSIGKILL: the data directory.
const killChildEnv = "E2E_LOCAL_SERVICE_KILL_CHILD_DIR"

// README's local recipe in a child process (this test binary again)
// starts orders and prints each one whose StartOrchestration returned; it
// is killed with SIGKILL right after the 20th. The recipe run again on the
// same data directory knows every one of them (issue 35: all 20 were
// NotFound when the emulator wrote snapshots every half second).
func TestLocalServiceKeepsAcknowledgedStartsThroughSIGKILL(t *testing.T) {
	if dir := os.Getenv(killChildEnv); dir != "" {
		runKillChild(t, dir)
		return
	}
	t.Parallel()
	dir := t.TempDir()
	child := childproc.Start(t, "^TestLocalServiceKeepsAcknowledgedStartsThroughSIGKILL$", killChildEnv, dir)
	var started []string
	for len(started) < 20 && child.Lines.Scan() {
		if id, ok := strings.CutPrefix(child.Lines.Text(), "STARTED "); ok {
			started = append(started, id)
		}
	}
	if len(started) < 20 {
		t.Fatalf("the child stopped after %d starts: %v", len(started), child.Lines.Err())
	}
	must(t, child.Kill()) // SIGKILL, right after the 20th start returned

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	must(t, runLocalService(ctx, cdb.Config{}, dir, func(ctx context.Context, c *runtime.Client) error {
		for _, id := range started {
			st, err := c.GetOrchestrationStatus(ctx, id)
			if err != nil {
				return err
			}
			if st.Kind == runtime.StatusNotFound {
				return fmt.Errorf("%s: its start was acknowledged before the kill, and is lost", id)
			}
		}
		return nil
	}))
}

// runKillChild is the child of
// TestLocalServiceKeepsAcknowledgedStartsThroughSIGKILL: it starts orders
// until killed (at most a minute).
func runKillChild(t *testing.T, dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	must(t, runLocalService(ctx, cdb.Config{}, dir, func(ctx context.Context, c *runtime.Client) error {
		for i := 0; ctx.Err() == nil; i++ {
			id := fmt.Sprintf("order-%d", i)
			if err := c.StartOrchestration(ctx, id, "Order", id); err != nil {
				return err
			}
			fmt.Println("STARTED " + id)
		}
		return nil
	}))
}
