package emulator

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParallelScanMatchesSequential runs the same queries with the parallel
// scan forced on and off and requires identical pages and continuations.
func TestParallelScanMatchesSequential(t *testing.T) {
	e := newEngineStore(t)
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 3000; i++ {
		var doc string
		switch i % 4 {
		case 0:
			doc = fmt.Sprintf(`{"id":"%d","pk":"p","n":%d,"s":"s%03d","tags":["a","b%d"]}`, i, rng.Intn(50), rng.Intn(100), i%7)
		case 1:
			doc = fmt.Sprintf(`{"id":"%d","pk":"p","n":"%d","o":{"v":%d}}`, i, rng.Intn(50), rng.Intn(10))
		case 2:
			doc = fmt.Sprintf(`{"id":"%d","pk":"p","nul":null,"o":{"v":%d}}`, i, rng.Intn(10))
		default:
			doc = fmt.Sprintf(`{"id":"%d","pk":"p","n":%d.5,"flag":%v}`, i, rng.Intn(50), i%2 == 0)
		}
		e.write([]byte(doc), nil)
	}
	docs := e.c.snapshot(nil)
	queries := []string{
		"SELECT * FROM c WHERE c.n > 10",
		"SELECT VALUE c.id FROM c WHERE c.n < 25 AND IS_NUMBER(c.n)",
		"SELECT TOP 37 c.id, c.n FROM c WHERE c.o.v >= 3",
		"SELECT VALUE c.id FROM c WHERE ARRAY_CONTAINS(c.tags, 'b3') OFFSET 5 LIMIT 40",
		"SELECT * FROM c WHERE c.n >= 5 ORDER BY c.n DESC",
		"SELECT VALUE c.id FROM c WHERE IS_DEFINED(c.o) ORDER BY c.o.v, c.id",
		"SELECT TOP 11 * FROM c WHERE c.flag ORDER BY c.n",
		"SELECT VALUE COUNT(1) FROM c WHERE c.n > 20",
		"SELECT c.o.v AS v, COUNT(1) AS k FROM c WHERE IS_DEFINED(c.o) GROUP BY c.o.v",
		"SELECT DISTINCT VALUE c.s FROM c WHERE STARTSWITH(c.s, 's0')",
		"SELECT VALUE c.id FROM c WHERE c.id = @id",
		"SELECT VALUE c.id FROM c WHERE c.missing = @nope",
	}
	params := map[string]value{"@id": stringValue("1234")}
	run := func(text string, size int) ([]string, error) {
		q, err := parseQuery(text)
		require.NoError(t, err)
		var pages []string
		tok := ""
		for {
			pg, err := q.execute(execInput{docs: docs}, pageRequest{params: params, maxItems: size, token: tok})
			if err != nil {
				return pages, err
			}
			pages = append(pages, string(pg.buf)+"|"+fmt.Sprint(pg.count))
			if pg.next == "" {
				return pages, nil
			}
			tok = pg.next
		}
	}
	defer func(old int) { parallelMinDocs = old }(parallelMinDocs)
	defer func(old int) { streamChunk = old }(streamChunk)
	for _, text := range queries {
		for _, size := range []int{7, 100, -1} {
			parallelMinDocs = 1 << 30
			seq, errSeq := run(text, size)
			parallelMinDocs, streamChunk = 1, 64
			par, errPar := run(text, size)
			assert.Equal(t, errSeq, errPar, text)
			assert.Equal(t, seq, par, "%s (page size %d)", text, size)
		}
	}
}
