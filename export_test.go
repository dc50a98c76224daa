package cdb

// SetFetchTracer makes p report every step of its fetches to f; call it
// before p's first fetch.
func SetFetchTracer(p *Provider, f func(event string)) {
	p.fetchTracer = func(ev fetchEvent) { f(string(ev)) }
}
