package cdbtest

import (
	cdb "github.com/duroxide-go/duroxide-cdb"
)

// Option adjusts NewProvider.
type Option func(*options)

type options struct {
	account   *Account
	configure []func(*cdb.Config)
}

// OnAccount makes NewProvider use a (for instance one shared by a whole
// test binary, opened in TestMain) instead of opening an Account of its own.
func OnAccount(a *Account) Option {
	return func(o *options) { o.account = a }
}

// WithConfig lets f change the provider's configuration (concurrency,
// leases, logger, clock...) before the provider is opened. f receives the
// Config of a fresh container (Account.Config); several WithConfig options
// apply in order.
func WithConfig(f func(*cdb.Config)) Option {
	return func(o *options) { o.configure = append(o.configure, f) }
}

// NewProvider returns a provider on a fresh container, closed when the test
// ends: on the embedded emulator (a new one for this provider, unless
// OnAccount names an Account), or on the account COSMOS_ENDPOINT names,
// where the container is deleted at the end. It fails the test when the
// account cannot be opened or cdb.New fails.
func NewProvider(tb TB, opts ...Option) *cdb.Provider {
	tb.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	a := o.account
	if a == nil {
		if a = NewAccount(tb); a == nil {
			return nil
		}
	}
	cfg := a.Config()
	for _, f := range o.configure {
		f(&cfg)
	}
	return a.NewProvider(tb, cfg)
}
