package emulator

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/internal/childproc"
)

// crash stops s as SIGKILL would right after its last acknowledged write:
// no compaction, no last snapshot; the log's files are left as they are
// (with what was appended synced, as the writes in flight may be), and
// the directory's lock released as the system releases a dead process's.
func (s *Server) crash() {
	s.closeOnce.Do(func() {
		_ = s.http.Close()
		<-s.done
		close(s.stopJanitor)
		<-s.janitorDone
		d := s.dur
		close(d.stop)
		<-d.done
		d.compactMu.Lock()
		_ = d.wal.close()
		d.compactMu.Unlock()
		_ = d.lock.release()
		s.client.CloseIdleConnections()
	})
}

// dumpState encodes the whole state of s as a snapshot does, without the
// header (it holds the time) and the end marker (the ETag counter is only
// at least every ETag): two servers with equal dumps hold the same
// databases, containers, documents (ids, bodies, rids, ETags, _ts, LSNs),
// scripts, offers and partition key ranges.
func dumpState(t *testing.T, s *Server) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, s.writeState(&b, s.captureState(nil), 0))
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	require.GreaterOrEqual(t, len(lines), 2)
	return strings.Join(lines[1:len(lines)-1], "\n")
}

// copyDir copies the regular files of dir (the LOCK file aside) into a
// new directory, as a crash at this instant leaves them on disk.
func copyDir(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if !e.Type().IsRegular() || e.Name() == lockFile {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if errors.Is(err, os.ErrNotExist) {
			continue // removed meanwhile (a temporary file renamed)
		}
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(out, e.Name()), b, 0o600))
	}
	return out
}

// testClock is the time plus an offset the test moves forward by hand
// (request signatures are checked against it, so it stays near the time).
type testClock struct{ offset atomic.Int64 }

func (c *testClock) now() time.Time {
	return time.Now().Add(time.Duration(c.offset.Load()) * time.Second)
}

// Every kind of change a snapshot holds is in the log: a server that
// crashes with no compaction since its start comes back, from the log
// alone, with the same state, byte for byte, and again after the
// compaction of that start.
func TestDataDirReplaysEveryKindOfChange(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clock := &testClock{}
	opts := Options{DataDir: dir, clock: clock.now, compactBytes: 1 << 40}
	e := newEnv(t, opts)

	// A reset erases what came before it.
	_, err := e.client.CreateDatabase(e.ctx, azcosmos.DatabaseProperties{ID: "before-reset"}, nil)
	require.NoError(t, err)
	e.srv.Reset()

	c := e.container("c", nil)
	pk := azcosmos.NewPartitionKeyString("p")
	for i := range 10 {
		_, err := c.CreateItem(e.ctx, pk, []byte(fmt.Sprintf(`{"id":"d%d","pk":"p","n":%d}`, i, i)), nil)
		require.NoError(t, err)
	}
	_, err = c.UpsertItem(e.ctx, pk, []byte(`{"id":"d1","pk":"p","n":"upserted"}`), nil)
	require.NoError(t, err)
	_, err = c.ReplaceItem(e.ctx, pk, "d2", []byte(`{"id":"d2","pk":"p","n":"replaced","é\"\\":"\u2028"}`), nil)
	require.NoError(t, err)
	patch := azcosmos.PatchOperations{}
	patch.AppendSet("/n", "patched")
	_, err = c.PatchItem(e.ctx, pk, "d3", patch, nil)
	require.NoError(t, err)
	_, err = c.DeleteItem(e.ctx, pk, "d4", nil)
	require.NoError(t, err)
	batch := c.NewTransactionalBatch(pk)
	batch.CreateItem([]byte(`{"id":"b1","pk":"p"}`), nil)
	batch.DeleteItem("d5", nil)
	batch.UpsertItem([]byte(`{"id":"d6","pk":"p","n":"batched"}`), nil)
	res, err := c.ExecuteTransactionalBatch(e.ctx, batch, nil)
	require.NoError(t, err)
	require.True(t, res.Success)
	// An odd id (the service accepts and stores it) is deleted exactly.
	_, err = c.CreateItem(e.ctx, pk, []byte(`{"id":"odd \u00e9 id","pk":"p"}`), nil)
	require.NoError(t, err)
	_, err = c.DeleteItem(e.ctx, pk, "odd \u00e9 id", nil)
	require.NoError(t, err)

	// The container's definition, its scripts, its offer and a split.
	props, err := c.Read(e.ctx, nil)
	require.NoError(t, err)
	cp := *props.ContainerProperties
	cp.IndexingPolicy = &azcosmos.IndexingPolicy{Automatic: true, IndexingMode: azcosmos.IndexingModeConsistent,
		IncludedPaths: []azcosmos.IncludedPath{{Path: "/n/?"}}, ExcludedPaths: []azcosmos.ExcludedPath{{Path: "/*"}}}
	_, err = c.Replace(e.ctx, cp, nil)
	require.NoError(t, err)
	for _, id := range []string{"sp1", "sp2"} {
		status, _, body := e.raw(http.MethodPost, "dbs/db/colls/c/sprocs", []byte(`{"id":"`+id+`","body":"function () {}"}`), nil)
		require.Equal(t, http.StatusCreated, status, "%s", body)
	}
	status, _, body := e.raw(http.MethodPut, "dbs/db/colls/c/sprocs/sp1", []byte(`{"id":"sp1","body":"function () { return 1; }"}`), nil)
	require.Equal(t, http.StatusOK, status, "%s", body)
	status, _, body = e.raw(http.MethodDelete, "dbs/db/colls/c/sprocs/sp2", nil, nil)
	require.Equal(t, http.StatusNoContent, status, "%s", body)
	_, err = c.ReplaceThroughput(e.ctx, azcosmos.NewManualThroughputProperties(700), nil)
	require.NoError(t, err)
	_, err = e.srv.SplitPartitionKeyRange("db", "c", "0")
	require.NoError(t, err)

	// TTL: a container with a default time to live, whose documents
	// expire when the clock moves.
	status, _, body = e.raw(http.MethodPost, "dbs/db/colls", []byte(`{"id":"ttl","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":60}`), nil)
	require.Equal(t, http.StatusCreated, status, "%s", body)
	tc, err := e.client.NewContainer("db", "ttl")
	require.NoError(t, err)
	for _, id := range []string{"short", "long"} {
		ttl := 10
		if id == "long" {
			ttl = 1000
		}
		_, err := tc.CreateItem(e.ctx, pk, []byte(fmt.Sprintf(`{"id":"%s","pk":"p","ttl":%d}`, id, ttl)), nil)
		require.NoError(t, err)
	}
	clock.offset.Add(30)
	_, err = tc.ReadItem(e.ctx, pk, "short", nil)
	require.Equal(t, http.StatusNotFound, statusOf(err), "expired")

	// A shared-throughput database and a container, created then deleted.
	_, err = e.client.CreateDatabase(e.ctx, azcosmos.DatabaseProperties{ID: "shared"}, &azcosmos.CreateDatabaseOptions{ThroughputProperties: to.Ptr(azcosmos.NewManualThroughputProperties(1000))})
	require.NoError(t, err)
	e.container("gone", nil)
	db, err := e.client.NewDatabase("db")
	require.NoError(t, err)
	gone, err := db.NewContainer("gone")
	require.NoError(t, err)
	_, err = gone.Delete(e.ctx, nil)
	require.NoError(t, err)
	shared, err := e.client.NewDatabase("shared")
	require.NoError(t, err)
	_, err = shared.Delete(e.ctx, nil)
	require.NoError(t, err)
	e.container("after", nil)

	want := dumpState(t, e.srv)
	stats := e.srv.PersistenceStats()
	require.Zero(t, stats.Compactions, "no compaction: the state comes back from the log")
	require.Positive(t, stats.Records)
	e.srv.crash()

	srv2, err := Start(opts)
	require.NoError(t, err)
	assert.Equal(t, want, dumpState(t, srv2), "replayed from the log")
	srv2.crash()
	srv3, err := Start(opts)
	require.NoError(t, err)
	defer srv3.Close()
	assert.Equal(t, want, dumpState(t, srv3), "loaded from the snapshot the replay wrote")
}

// A torn last record (a crash in the middle of a write, never
// acknowledged) is dropped; what came before it is kept, and the next
// start begins on a clean log.
func TestDataDirDropsATornTail(t *testing.T) {
	t.Parallel()
	for name, tail := range map[string]func(frame []byte) []byte{
		"cut in the header":   func(f []byte) []byte { return f[:5] },
		"cut in the payload":  func(f []byte) []byte { return f[:len(f)-3] },
		"checksum mismatch":   func(f []byte) []byte { g := bytes.Clone(f); g[len(g)-2] ^= 0xff; return g },
		"zeroed (length 0)":   func(f []byte) []byte { return make([]byte, len(f)) },
		"length past the end": func(f []byte) []byte { g := bytes.Clone(f); g[3] = 0x7f; return g },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			opts := Options{DataDir: dir, compactBytes: 1 << 40}
			e := newEnv(t, opts)
			c := e.container("c", nil)
			pk := azcosmos.NewPartitionKeyString("p")
			for i := range 5 {
				_, err := c.CreateItem(e.ctx, pk, []byte(fmt.Sprintf(`{"id":"d%d","pk":"p"}`, i)), nil)
				require.NoError(t, err)
			}
			gen := e.srv.dur.wal.generation()
			e.srv.crash()

			// The torn record: a document d5 as the log would hold it.
			logPath := filepath.Join(dir, walFileName(gen))
			good, err := os.ReadFile(logPath)
			require.NoError(t, err)
			var last []byte
			_, err = readFrames(good, func(p []byte) error { last = p; return nil })
			require.NoError(t, err)
			torn := bytes.Replace(last, []byte(`"d4"`), []byte(`"d5"`), 1)
			frame := make([]byte, walFrameHeader, walFrameHeader+len(torn))
			frame[0], frame[1], frame[2], frame[3] = byte(len(torn)), byte(len(torn)>>8), byte(len(torn)>>16), byte(len(torn)>>24)
			sum := crc32Castagnoli(torn)
			frame[4], frame[5], frame[6], frame[7] = byte(sum), byte(sum>>8), byte(sum>>16), byte(sum>>24)
			frame = append(frame, torn...)
			require.NoError(t, os.WriteFile(logPath, append(good, tail(frame)...), 0o600))

			e2 := newEnv(t, opts)
			c2, err := e2.client.NewContainer("db", "c")
			require.NoError(t, err)
			for i := range 5 {
				_, err := c2.ReadItem(e2.ctx, pk, fmt.Sprintf("d%d", i), nil)
				require.NoError(t, err, "d%d", i)
			}
			_, err = c2.ReadItem(e2.ctx, pk, "d5", nil)
			assert.Equal(t, http.StatusNotFound, statusOf(err), "the torn record is dropped")
			// The start compacted: the torn file is gone, and the log
			// takes new writes that survive the next crash.
			_, err = os.Stat(logPath)
			assert.ErrorIs(t, err, os.ErrNotExist)
			_, err = c2.CreateItem(e2.ctx, pk, []byte(`{"id":"after","pk":"p"}`), nil)
			require.NoError(t, err)
			e2.srv.crash()
			e3 := newEnv(t, opts)
			c3, err := e3.client.NewContainer("db", "c")
			require.NoError(t, err)
			_, err = c3.ReadItem(e3.ctx, pk, "after", nil)
			assert.NoError(t, err)
		})
	}
}

// crc32Castagnoli is the frames' checksum, for tests that forge frames.
func crc32Castagnoli(p []byte) uint32 { return crc32.Checksum(p, walTable) }

// A crash at any step of a compaction (after the log's rotation, after
// the new snapshot is synced but not renamed, after the rename but before
// the old log files are deleted) leaves a directory that holds every
// write acknowledged before it, including those that arrived while the
// compaction ran.
func TestDataDirSurvivesACrashDuringCompaction(t *testing.T) {
	t.Parallel()
	for _, step := range []string{"rotated", "snapshot synced", "snapshot written"} {
		t.Run(step, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			e := newEnv(t, Options{DataDir: dir, compactBytes: 1 << 40})
			c := e.container("c", nil)
			pk := azcosmos.NewPartitionKeyString("p")
			var (
				mu    sync.Mutex
				acked []string
			)
			write := func(id string) {
				_, err := c.CreateItem(e.ctx, pk, []byte(`{"id":"`+id+`","pk":"p"}`), nil)
				require.NoError(t, err)
				mu.Lock()
				acked = append(acked, id)
				mu.Unlock()
			}
			for i := range 20 {
				write(fmt.Sprintf("before-%d", i))
			}
			// Writes go on while the compaction runs.
			stop := make(chan struct{})
			writerDone := make(chan struct{})
			go func() {
				defer close(writerDone)
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					write(fmt.Sprintf("during-%d", i))
				}
			}()
			var crashed string
			var ackedAtCrash []string
			e.srv.testHookCompact = func(s string) {
				if s != step {
					return
				}
				mu.Lock()
				ackedAtCrash = append([]string(nil), acked...)
				mu.Unlock()
				crashed = copyDir(t, dir)
			}
			require.NoError(t, e.srv.compact())
			close(stop)
			<-writerDone
			e.srv.testHookCompact = nil
			require.NotEmpty(t, crashed)

			e2 := newEnv(t, Options{DataDir: crashed})
			c2, err := e2.client.NewContainer("db", "c")
			require.NoError(t, err)
			for _, id := range ackedAtCrash {
				_, err := c2.ReadItem(e2.ctx, pk, id, nil)
				require.NoError(t, err, "%s was acknowledged before the crash", id)
			}
			t.Logf("%d writes acknowledged before the crash, all kept", len(ackedAtCrash))
		})
	}
}

// A second server on a data directory is refused while the first holds
// it, with an error naming the holder and the way out; once the first is
// closed, the directory opens again.
func TestDataDirRefusesASecondServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv, err := Start(Options{DataDir: dir})
	require.NoError(t, err)
	_, err = Start(Options{DataDir: dir})
	require.ErrorIs(t, err, ErrDataDirInUse)
	assert.ErrorContains(t, err, "process "+strconv.Itoa(os.Getpid()))
	assert.ErrorContains(t, err, "another data directory")
	require.NoError(t, srv.Close())
	srv2, err := Start(Options{DataDir: dir})
	require.NoError(t, err)
	require.NoError(t, srv2.Close())
}

// walChildEnv selects the child mode of
// TestDataDirKeepsAcknowledgedWritesThroughSIGKILL: the data directory.
const walChildEnv = "EMULATOR_WAL_TEST_CHILD_DIR"

// A child process (this test binary again) writes through the SDK from
// four goroutines, creates, patches, transactional batches and deletes,
// and prints each write once acknowledged; it is killed with SIGKILL
// right after. While it runs, a server in this process is refused its
// directory with an error naming the child's pid. Reopened, the
// directory holds every acknowledged write.
func TestDataDirKeepsAcknowledgedWritesThroughSIGKILL(t *testing.T) {
	if dir := os.Getenv(walChildEnv); dir != "" {
		runWALChild(t, dir)
		return
	}
	t.Parallel()
	dir := t.TempDir()
	child := childproc.Start(t, "^TestDataDirKeepsAcknowledgedWritesThroughSIGKILL$", walChildEnv, dir)

	const wantAcks = 400
	acked := map[string]bool{}
	n := 0
	sc := child.Lines
	for n < wantAcks && sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "READY "):
			_, err := Start(Options{DataDir: dir})
			require.ErrorIs(t, err, ErrDataDirInUse)
			assert.ErrorContains(t, err, "process "+strings.TrimPrefix(line, "READY "), "the error names the child")
		case strings.HasPrefix(line, "ACK "):
			acked[strings.TrimPrefix(line, "ACK ")] = true
			n++
		}
	}
	require.Equal(t, wantAcks, n, "the child stopped early: %v", sc.Err())
	require.NoError(t, child.Kill()) // SIGKILL

	e := newEnv(t, Options{DataDir: dir})
	c, err := e.client.NewContainer("db", "c")
	require.NoError(t, err)
	exists := func(pk, id string) (map[string]any, bool) {
		r, err := c.ReadItem(e.ctx, azcosmos.NewPartitionKeyString(pk), id, nil)
		if statusOf(err) == http.StatusNotFound {
			return nil, false
		}
		require.NoError(t, err)
		return decodeMap(t, r.Value), true
	}
	checked := 0
	for a := range acked {
		kind, id, _ := strings.Cut(a, " ")
		g, _, _ := strings.Cut(id, "-")
		pk := "p" + strings.TrimPrefix(g, "g")
		switch kind {
		case "create", "patch":
			if acked["delete "+id] || walChildDeletes(id) {
				continue // deleted, or maybe being deleted at the kill
			}
			doc, ok := exists(pk, id)
			require.True(t, ok, "acknowledged %s", a)
			if kind == "patch" {
				assert.Equal(t, true, doc["patched"], "acknowledged %s", a)
			}
		case "batch":
			for _, x := range []string{"-a", "-b"} {
				_, ok := exists(pk, id+x)
				require.True(t, ok, "acknowledged %s", a)
			}
		case "delete":
			_, ok := exists(pk, id)
			require.False(t, ok, "acknowledged %s", a)
		default:
			t.Fatalf("unknown line %q", a)
		}
		checked++
	}
	t.Logf("%d acknowledged writes, all kept after SIGKILL", checked)
}

// walChildDeletes reports whether the child's schedule deletes document
// id ("g<goroutine>-<i>": iteration i+3 deletes it when i+3 is 6 mod 7).
func walChildDeletes(id string) bool {
	_, num, _ := strings.Cut(id, "-")
	i, err := strconv.Atoi(num)
	return err == nil && (i+3)%7 == 6
}

// runWALChild is the child of TestDataDirKeepsAcknowledgedWritesThroughSIGKILL.
func runWALChild(t *testing.T, dir string) {
	e := newEnv(t, Options{DataDir: dir})
	c := e.container("c", nil)
	var outMu sync.Mutex
	say := func(s string) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Fprintln(os.Stdout, s)
	}
	say("READY " + strconv.Itoa(os.Getpid()))
	deadline := time.Now().Add(time.Minute)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			pkText := fmt.Sprintf("p%d", g)
			pk := azcosmos.NewPartitionKeyString(pkText)
			for i := 0; time.Now().Before(deadline); i++ {
				id := fmt.Sprintf("g%d-%d", g, i)
				_, err := c.CreateItem(e.ctx, pk, []byte(`{"id":"`+id+`","pk":"`+pkText+`"}`), nil)
				if err != nil {
					t.Error(err)
					return
				}
				say("ACK create " + id)
				if i%3 == 0 {
					ops := azcosmos.PatchOperations{}
					ops.AppendSet("/patched", true)
					if _, err := c.PatchItem(e.ctx, pk, id, ops, nil); err != nil {
						t.Error(err)
						return
					}
					say("ACK patch " + id)
				}
				if i%5 == 0 {
					b := c.NewTransactionalBatch(pk)
					b.CreateItem([]byte(`{"id":"`+id+`-a","pk":"`+pkText+`"}`), nil)
					b.UpsertItem([]byte(`{"id":"`+id+`-b","pk":"`+pkText+`"}`), nil)
					if r, err := c.ExecuteTransactionalBatch(e.ctx, b, nil); err != nil || !r.Success {
						t.Error("batch", err)
						return
					}
					say("ACK batch " + id)
				}
				if i%7 == 6 {
					old := fmt.Sprintf("g%d-%d", g, i-3)
					if _, err := c.DeleteItem(e.ctx, pk, old, nil); err != nil {
						t.Error(err)
						return
					}
					say("ACK delete " + old)
				}
			}
		})
	}
	wg.Wait()
}
