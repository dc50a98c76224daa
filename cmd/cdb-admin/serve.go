package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/dashboard"
)

// envDashboardToken is the environment variable serve -rw reads its token
// from (never a flag: a flag shows in the process list).
const envDashboardToken = "DASHBOARD_TOKEN"

// serveShutdownGrace bounds how long serve waits for requests in flight
// when it stops.
const serveShutdownGrace = 5 * time.Second

// serveCommand serves the web dashboard (package dashboard) for the
// container until interrupted. It is read-only unless -rw, which needs
// DASHBOARD_TOKEN: the actions (raise an event, cancel, delete, prune)
// then ask for that token (sign-in page, or an Authorization: Bearer
// header). -timeout bounds the connection to Cosmos DB, not the serving.
var serveCommand = command{
	name:      "serve",
	synopsis:  "[-addr 127.0.0.1:8088] [-prefix /path] [-rw]",
	summary:   "serve the web dashboard for the container until interrupted (-rw: actions, with $" + envDashboardToken + ")",
	noTimeout: true,
	details: "The dashboard's pages are not authenticated: keep -addr on loopback, or put it behind\n" +
		"an authenticating proxy. With -rw, the actions (raise an event, cancel, delete, prune)\n" +
		"need the token in $" + envDashboardToken + " (typed in on the sign-in page, or sent as\n" +
		"Authorization: Bearer <token>).",
	setup: func(fs *flag.FlagSet) action {
		addr := fs.String("addr", "127.0.0.1:8088", "listen on this address")
		prefix := fs.String("prefix", "", "serve the dashboard under this path (\"/dashboard\"; default the root)")
		rw := fs.Bool("rw", false, "enable the actions; needs $"+envDashboardToken)
		return func(ctx context.Context, s *session, args []string) error {
			if err := requireArgs("serve", args, 0, 0, "[-addr A] [-prefix P] [-rw]"); err != nil {
				return err
			}
			token := s.io.getenv(envDashboardToken)
			if *rw && len(token) < 8 {
				return usagef("serve -rw needs a token of 8 characters or more in $%s", envDashboardToken)
			}
			if *prefix != "" && !strings.HasPrefix(*prefix, "/") {
				return usagef("serve: -prefix must start with /, not %q", *prefix)
			}
			connectCtx, cancel := context.WithTimeout(ctx, s.flags.timeout)
			p, err := s.provider(connectCtx)
			cancel()
			if err != nil {
				return err
			}
			h, err := newDashboard(p, *rw, token, *prefix)
			if err != nil {
				return failedf("serve: %v", err)
			}
			defer h.Close()
			ln, err := net.Listen("tcp", *addr)
			if err != nil {
				return usagef("serve: listen on %s: %v", *addr, err)
			}
			mode := "read-only"
			if *rw {
				mode = "read-write (actions need $" + envDashboardToken + ")"
			}
			fmt.Fprintf(s.io.stderr, "cdb-admin: serving the dashboard, %s, on http://%s%s/\n", mode, ln.Addr(), strings.TrimRight(*prefix, "/"))
			return serveUntilDone(ctx, ln, h, *prefix)
		}
	},
}

// newDashboard builds serve's handler over p: read-only, or read-write
// behind token.
func newDashboard(p *cdb.Provider, rw bool, token, prefix string) (*dashboard.Handler, error) {
	opts := dashboard.Options{Admin: p, Prefix: prefix, ReadWrite: rw}
	if rw {
		opts.BearerToken = token
	}
	return dashboard.NewHandler(opts)
}

// serveUntilDone serves h on ln until ctx ends, then shuts the server down
// gracefully.
func serveUntilDone(ctx context.Context, ln net.Listener, h http.Handler, prefix string) error {
	mux := http.NewServeMux()
	prefix = strings.TrimRight(prefix, "/")
	mux.Handle(prefix+"/", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return failedf("serve: %v", err)
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), serveShutdownGrace)
	defer cancel()
	_ = srv.Shutdown(shut)
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return failedf("serve: %v", err)
	}
	return nil
}
