package emulator

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/require"
)

// benchDoc is a document shaped like the provider's history events.
func benchDoc(pk string, i int) []byte {
	return []byte(fmt.Sprintf(`{"id":"%s-%08d","pk":"%s","instanceId":"%s","type":"history","executionId":1,"eventId":%d,`+
		`"createdAt":1733000000000,"eventData":{"type":"ActivityCompleted","event_id":%d,"source_event_id":%d,`+
		`"result":"{\"ok\":true,\"value\":\"some result payload of moderate size\"}","ts":1733000000000}}`,
		pk, i, pk, pk, i, i, i-1))
}

// seed loads n documents into partition pk with 100-operation batches.
func seed(b testing.TB, e *env, c *azcosmos.ContainerClient, pk string, n int) int {
	b.Helper()
	total := 0
	for start := 0; start < n; start += 100 {
		batch := c.NewTransactionalBatch(azcosmos.NewPartitionKeyString(pk))
		for i := start; i < start+100 && i < n; i++ {
			d := benchDoc(pk, i)
			total += len(d)
			batch.CreateItem(d, nil)
		}
		r, err := c.ExecuteTransactionalBatch(e.ctx, batch, nil)
		require.NoError(b, err)
		require.True(b, r.Success)
	}
	return total
}

// seededPartition starts an emulator with opts and loads 1,000 documents
// into partition "p" of its container "bench" (readBenchDoc reads them).
func seededPartition(b *testing.B, opts Options) *azcosmos.ContainerClient {
	e := newEnv(b, opts)
	c := e.container("bench", nil)
	seed(b, e, c, "p", 1000)
	return c
}

// readBenchDoc reads document i (mod 1,000) of seededPartition.
func readBenchDoc(c *azcosmos.ContainerClient, i int64) error {
	_, err := c.ReadItem(context.Background(), azcosmos.NewPartitionKeyString("p"), fmt.Sprintf("p-%08d", i%1000), nil)
	return err
}

// BenchmarkPointRead measures point reads per second through the SDK.
func BenchmarkPointRead(b *testing.B) {
	c := seededPartition(b, Options{})
	var n atomic.Int64
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := readBenchDoc(c, n.Add(1)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "reads/s")
}

// BenchmarkLaggingReads measures a mix of upserts and point reads (one
// each per iteration, 1,000 documents) at Strong without lag and at
// Session with replicas trailing by up to 20 ms: what recording the writes
// and serving reads from lagging replicas costs.
func BenchmarkLaggingReads(b *testing.B) {
	for _, o := range []Options{{Consistency: ConsistencyStrong}, {Consistency: ConsistencySession, ReplicaLag: 20 * time.Millisecond}} {
		b.Run(fmt.Sprintf("%s-%v", o.Consistency, o.ReplicaLag), func(b *testing.B) {
			c := seededPartition(b, o)
			time.Sleep(o.ReplicaLag) // every replica has the documents
			pk := azcosmos.NewPartitionKeyString("p")
			var n atomic.Int64
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					_, err := c.UpsertItem(context.Background(), pk, benchDoc("p", int(i%1000)), nil)
					if err == nil {
						err = readBenchDoc(c, i+500)
					}
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "iterations/s")
		})
	}
}

// BenchmarkBatch10 measures transactional batches of ten creates per second.
func BenchmarkBatch10(b *testing.B) {
	e := newEnv(b)
	c := e.container("bench", nil)
	var n atomic.Int64
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			k := n.Add(1)
			pk := fmt.Sprint("inst-", k)
			batch := c.NewTransactionalBatch(azcosmos.NewPartitionKeyString(pk))
			for i := 0; i < 10; i++ {
				batch.CreateItem(benchDoc(pk, i), nil)
			}
			r, err := c.ExecuteTransactionalBatch(context.Background(), batch, nil)
			if err != nil || !r.Success {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "batches/s")
}

// BenchmarkQuery100k measures single-partition queries over 100,000
// documents: each iteration runs the query to its first page.
func BenchmarkQuery100k(b *testing.B) {
	e := newEnv(b)
	c := e.container("bench", nil)
	seed(b, e, c, "big", 100000)
	pk := azcosmos.NewPartitionKeyString("big")
	for _, q := range []string{
		"SELECT * FROM c WHERE c.eventId >= 99990",
		"SELECT * FROM c WHERE c.type = 'history' AND c.executionId = 1 AND c.eventId > 50000 AND c.eventId <= 50100",
		"SELECT TOP 10 * FROM c WHERE c.type = 'history' ORDER BY c.eventId DESC",
		"SELECT VALUE COUNT(1) FROM c WHERE c.eventData.type = 'ActivityCompleted'",
		"SELECT * FROM c WHERE c.type = 'history' ORDER BY c.eventId",
	} {
		b.Run(q, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				pager := c.NewQueryItemsPager(q, pk, nil)
				if _, err := pager.NextPage(e.ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMemory reports the heap the emulator holds per byte of stored
// JSON (documents as the client sent them), for 50,000 documents in 100
// logical partitions: provider-like history events (~310 bytes) and tiny
// documents (~60 bytes), where the fixed cost per document dominates.
func BenchmarkMemory(b *testing.B) {
	for _, tc := range []struct {
		name string
		doc  func(pk string, i int) []byte
	}{
		{"history-events", benchDoc},
		{"tiny", func(pk string, i int) []byte {
			return []byte(fmt.Sprintf(`{"id":"%s-%08d","pk":"%s","n":%d}`, pk, i, pk, i))
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				e := newEnv(b)
				c := e.container("bench", nil)
				runtime.GC()
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				jsonBytes := 0
				for p := 0; p < 100; p++ {
					pk := fmt.Sprint("inst-", p)
					for start := 0; start < 500; start += 100 {
						batch := c.NewTransactionalBatch(azcosmos.NewPartitionKeyString(pk))
						for j := start; j < start+100; j++ {
							d := tc.doc(pk, j)
							jsonBytes += len(d)
							batch.CreateItem(d, nil)
						}
						r, err := c.ExecuteTransactionalBatch(e.ctx, batch, nil)
						require.NoError(b, err)
						require.True(b, r.Success)
					}
				}
				runtime.GC()
				var after runtime.MemStats
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(jsonBytes), "heap/json")
				b.ReportMetric(float64(jsonBytes)/50000, "json-bytes/doc")
				runtime.KeepAlive(e)
			}
		})
	}
}

// BenchmarkQueryEngine100k runs the query engine directly over 100,000
// stored documents, without HTTP or the SDK, to separate engine time from
// transport time.
func BenchmarkQueryEngine100k(b *testing.B) {
	e := newEngineStore(b)
	for i := 0; i < 100000; i++ {
		e.write(benchDoc("big", i), nil)
	}
	docs := e.c.snapshot(nil)
	for _, text := range []string{
		"SELECT * FROM c WHERE c.eventId >= 99990",
		"SELECT * FROM c WHERE c.type = 'history' AND c.executionId = 1 AND c.eventId > 50000 AND c.eventId <= 50100",
		"SELECT TOP 10 * FROM c WHERE c.type = 'history' ORDER BY c.eventId DESC",
		"SELECT VALUE COUNT(1) FROM c WHERE c.eventData.type = 'ActivityCompleted'",
		"SELECT * FROM c WHERE c.type = 'history' ORDER BY c.eventId",
	} {
		q, err := parseQuery(text)
		require.NoError(b, err)
		b.Run(text, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := q.execute(execInput{docs: docs}, pageRequest{maxItems: defaultPageSize}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCandidateQuery measures the provider's cross-partition candidate
// queries (the work item fetch's and the orchestration fetch's, with the
// dispatch slot filter of a worker holding 128 of the 256 slots) through the
// SDK, over a container shaped like a busy provider's: 1,000 instances,
// each with its instance document and 30 history events, 100 visible work
// items and 20 orchestrator messages.
func BenchmarkCandidateQuery(b *testing.B) {
	e := newEnv(b)
	c := e.container("bench", nil)
	for n := 0; n < 1000; n++ {
		pk := fmt.Sprint("inst-", n)
		batch := c.NewTransactionalBatch(azcosmos.NewPartitionKeyString(pk))
		batch.CreateItem([]byte(fmt.Sprintf(`{"id":"instance","pk":%q,"type":"instance","dispatchSlot":%d,"status":"Running"}`, pk, n%256)), nil)
		for i := 0; i < 30; i++ {
			batch.CreateItem(benchDoc(pk, i), nil)
		}
		if n%10 == 0 {
			batch.CreateItem([]byte(fmt.Sprintf(`{"id":"w-1","pk":%q,"type":"worker_queue","visibleAt":0,"lockedUntil":0,"dispatchSlot":%d,"enqueuedAt":%d,"seq":1}`, pk, n%256, n)), nil)
		}
		if n%50 == 0 {
			batch.CreateItem([]byte(fmt.Sprintf(`{"id":"o-1","pk":%q,"type":"orch_queue","visibleAt":0,"lockedUntil":0,"dispatchSlot":%d,"enqueuedAt":%d,"seq":1}`, pk, n%256, n)), nil)
		}
		r, err := c.ExecuteTransactionalBatch(e.ctx, batch, nil)
		require.NoError(b, err)
		require.True(b, r.Success)
	}
	var slots []string
	for s := 0; s < 256; s += 2 {
		slots = append(slots, fmt.Sprint(s))
	}
	in := " AND c.dispatchSlot IN (" + strings.Join(slots, ",") + ")"
	params := &azcosmos.QueryOptions{QueryParameters: []azcosmos.QueryParameter{{Name: "@now", Value: 1}}}
	for name, q := range map[string]string{
		"work-item": "SELECT c.id, c.instanceId, c.type, c.enqueuedAt, c.seq, c._etag, c.sessionId, c.ownerId, c.lockedUntil, c.createdAt, c.dispatchSlot FROM c WHERE " +
			"((c.type = 'worker_queue' AND c.visibleAt <= @now AND c.lockedUntil <= @now AND IS_NULL(c.sessionId)))" + in,
		"orchestration": "SELECT c.instanceId, c.enqueuedAt, c.seq FROM c WHERE c.type = 'orch_queue' AND c.visibleAt <= @now AND c.lockedUntil <= @now" + in,
	} {
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				pager := c.NewQueryItemsPager(q, azcosmos.NewPartitionKey(), params)
				if _, err := pager.NextPage(e.ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
