package emulator

import (
	"runtime"
	"sync"
)

// Large scans evaluate WHERE (and ORDER BY keys) on several cores. Results
// are identical to the sequential path: workers only compute per-document
// booleans and keys, and the page is assembled sequentially in rid order.
var (
	parallelMinDocs = 16384 // below this a scan is not worth the goroutines (a variable for tests)
	streamChunk     = 8192  // documents prefiltered at a time by streaming queries
)

func parallelWorkers() int {
	n := runtime.GOMAXPROCS(0)
	if n > 8 {
		n = 8
	}
	return n
}

// canPrefilter reports whether WHERE can be evaluated per stored document
// independently of the others, on n documents.
func (q *query) canPrefilter(in execInput, n int) bool {
	return q.where != nil && q.simpleFrom() && in.docs != nil && n >= parallelMinDocs && parallelWorkers() > 1
}

// parallelRange runs fn over [lo, hi) split into one contiguous span per
// worker, each with its own evaluator, and returns the first evaluation error.
func (q *query) parallelRange(params map[string]value, lo, hi int, fn func(ev *evaluator, a, b int)) error {
	workers := parallelWorkers()
	span := (hi - lo + workers - 1) / workers
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		a := lo + w*span
		b := a + span
		if b > hi {
			b = hi
		}
		if a >= b {
			break
		}
		wg.Add(1)
		go func(w, a, b int) {
			defer wg.Done()
			ev := &evaluator{params: params, names: q.aliases, rowBuf: make([]value, 1)}
			fn(ev, a, b)
			errs[w] = ev.err
		}(w, a, b)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// prefilter evaluates WHERE for in.docs[lo:hi] into pass[0:hi-lo].
func (q *query) prefilter(params map[string]value, in execInput, lo, hi int, pass []bool) error {
	return q.parallelRange(params, lo, hi, func(ev *evaluator, a, b int) {
		for i := a; i < b; i++ {
			ev.rowBuf[0] = docValue(in.docs[i])
			pass[i-lo] = ev.eval(q.where, ev.rowBuf).truthy()
		}
	})
}

// collectOrderedParallel returns the rows of in that pass WHERE, with their
// ORDER BY keys, computed on several cores (simple FROM only).
func (q *query) collectOrderedParallel(params map[string]value, in execInput) ([]resultRow, error) {
	n := in.len()
	pass := make([]bool, n)
	if err := q.prefilter(params, in, 0, n, pass); err != nil {
		return nil, err
	}
	idx := make([]int32, 0, n/4)
	for i, ok := range pass {
		if ok {
			idx = append(idx, int32(i))
		}
	}
	nk := len(q.orderBy)
	rows := make([]resultRow, len(idx))
	arena := make([]value, len(idx)*nk)
	err := q.parallelRange(params, 0, len(idx), func(ev *evaluator, a, b int) {
		for j := a; j < b; j++ {
			doc := in.docs[idx[j]]
			ev.rowBuf[0] = docValue(doc)
			keys := arena[j*nk : (j+1)*nk : (j+1)*nk]
			for k, o := range q.orderBy {
				keys[k] = ev.eval(o.e, ev.rowBuf)
			}
			rows[j] = resultRow{doc: doc, seq: doc.seq, keys: keys}
		}
	})
	return rows, err
}
