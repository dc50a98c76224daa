package duroxide

// StoreHealthReporter is implemented by providers that watch their store's
// health themselves: every request they send reports to one tracker, and
// an outage is logged once, at its first failed request, with its cause,
// then on a backoff, and its end only once a request succeeded
// (duroxide-cdb's Provider). A runtime on such a provider logs its
// dispatchers' failed fetches at Debug, and no "store reachable again" of
// its own: a fetch can succeed without sending a request (from what the
// provider holds), and would end an outage the store is still in.
type StoreHealthReporter interface {
	// ReportsStoreHealth reports whether the provider logs its store's
	// outages itself.
	ReportsStoreHealth() bool
}
