package candidates

// Walk is one fetch attempt's way through the candidates of a view: it
// says, step by step, whether the fetch should query the view's slots
// (refresh it) or try to lock a candidate, and when to stop. The fetch
// does what the Step says and asks for the next one; the Walk holds no
// callback, so the fetch reads top to bottom.
//
// The policy: query first when the view is stale (Pool.Stale); try the
// view's candidates oldest first, up to max; when the view offers
// nothing, query every page if its last query stopped at a full page
// (Pool.Partial), or one page if no query ran yet in this walk and the
// fetch must answer now (final) or the view is not fresh (Pool.Fresh);
// otherwise stop.
type Walk struct {
	pool   *Pool
	v      *View
	scope  string
	owner  *string
	accept func(*Entry) bool
	final  bool
	max    int

	started, queried, queriedAll bool
	tries                        int
}

// Step is what a fetch does next in a Walk: Refresh the view (All pages or
// one; Stale when it is the safety query of a view whose answer aged), or
// Try to lock Candidate and then give it back with Pool.Release; neither
// means stop, nothing was locked.
type Step struct {
	Refresh, All, Stale bool
	Try                 bool
	Candidate           Entry
}

// Walk starts a walk over v's candidates for a fetch of skip scope scope
// (see Pool.Pick), of the fetching worker's session owner (nil: items with
// a session are not eligible), with the fetch's own filter accept (nil:
// any), trying at most max candidates; final says the fetch must answer
// now.
func (p *Pool) Walk(v *View, scope string, owner *string, accept func(*Entry) bool, final bool, max int) *Walk {
	return &Walk{pool: p, v: v, scope: scope, owner: owner, accept: accept, final: final, max: max}
}

// Next returns the next step at nowMs. After a Refresh step whose query
// failed, the fetch stops (the walk does not retry it).
func (w *Walk) Next(nowMs int64) Step {
	if !w.started {
		w.started = true
		if w.pool.Stale(w.v) {
			w.queried = true
			return Step{Refresh: true, Stale: true}
		}
	}
	if w.tries >= w.max {
		return Step{}
	}
	c, ok := w.pool.Pick(w.v, nowMs, w.scope, w.owner, w.accept)
	if ok {
		w.tries++
		return Step{Try: true, Candidate: c}
	}
	switch {
	case w.pool.Partial(w.v) && !w.queriedAll:
		w.queried, w.queriedAll = true, true
		return Step{Refresh: true, All: true}
	case !w.queried && (w.final || !w.pool.Fresh(w.v)):
		w.queried = true
		return Step{Refresh: true}
	}
	return Step{}
}
