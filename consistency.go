package cdb

import (
	"errors"
	"fmt"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/duroxide-go/duroxide-cdb/internal/session"
	"go.uber.org/zap"
)

// Consistency: the session container every client of the provider needs,
// and the account checks of New (README, "Consistency").

// SessionTokenPolicy returns a new HTTP pipeline policy that keeps the
// client's session, which azcosmos v1.5.0 leaves to its caller: it records
// the x-ms-session-token of every response per container and partition key
// range (merged by LSN, as the .NET and Java SDKs do) and sends the
// container's tokens on every read (point reads, queries, ReadMany,
// change-feed pages) that carries none of its own. On an account with
// Session consistency (the default), a read is served by one replica of
// the partition, which may trail the primary; with the token it is served
// only by a replica that has every write this client saw, so the process
// reads its own writes. Without it, an instance just started may read as
// missing, and a turn may be fetched without the history its last ack
// wrote.
//
// New adds one to the clients it builds. A ready client passed in
// Config.Client needs one (its own: one policy per client) in its
// ClientOptions.PerCallPolicies, beside PartitionKeyHeaderPolicy.
func SessionTokenPolicy() policy.Policy { return session.NewPolicy() }

// ErrMultiRegionWrites is what New wraps (errors.Is) when the account
// takes writes in more than one region: each region then checks ETag
// conditions against its own copy and resolves conflicts last-writer-wins,
// so two processes writing through two regions could both lock one
// instance. Use an account (or a failover priority) with one write region;
// reads from other regions (azcosmos ClientOptions.PreferredRegions) are
// fine.
var ErrMultiRegionWrites = errors.New("the account takes writes in more than one region")

// checkAccount refuses an account with multi-region writes and warns of a
// consistency level under which a process may not read its own writes,
// from the account document the client read (GET / of the endpoint, which
// azcosmos reads before its first request); with a ready Config.Client the
// provider does not see it and checks nothing.
func (p *Provider) checkAccount() error {
	if p.session == nil {
		return nil
	}
	a := p.session.Account()
	if a == nil {
		p.log.Warn("the account document was not seen: its regions and consistency are not checked")
		return nil
	}
	if a.MultiRegionWrites() {
		names := make([]string, len(a.WritableLocations))
		for i, l := range a.WritableLocations {
			names[i] = l.Name
		}
		return fmt.Errorf("cdb: %s: %w (%s): ETag locks hold per region only; configure the account with a single write region",
			p.cfg.Endpoint, ErrMultiRegionWrites, strings.Join(names, ", "))
	}
	switch level := a.Consistency.DefaultConsistencyLevel; level {
	case "ConsistentPrefix", "Eventual":
		p.log.Warn("the account's consistency ignores session tokens: a process may not read its own writes (status reads may lag; work is still never lost or duplicated); use Session or stronger",
			zap.String("consistency", level))
	}
	return nil
}
