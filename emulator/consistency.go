package emulator

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// Consistency is an Azure Cosmos DB consistency level: the account's
// default (Options.Consistency, reported by the account document as
// userConsistencyPolicy.defaultConsistencyLevel) or one request's
// (x-ms-consistency-level, which may only weaken the account's). The
// values are the service's names.
type Consistency string

// The five consistency levels, strongest first (Azure Cosmos DB
// documentation "Consistency levels in Azure Cosmos DB"). Strong and
// BoundedStaleness reads see the primary replica of a partition, so
// every committed write; Session, ConsistentPrefix and Eventual reads are
// served by one replica chosen at random, which may trail the primary by
// up to Options.ReplicaLag, unless the request's session token requires
// a replica at least that far.
const (
	ConsistencyStrong           Consistency = "Strong"
	ConsistencyBoundedStaleness Consistency = "BoundedStaleness"
	ConsistencySession          Consistency = "Session"
	ConsistencyConsistentPrefix Consistency = "ConsistentPrefix"
	ConsistencyEventual         Consistency = "Eventual"
)

// The environment variables Start reads when the corresponding Options
// fields are zero, so that any embedded emulator (tests, examples, a
// user's program) runs with lagging replicas without a code change.
const (
	// EnvConsistency names the account's default consistency level
	// (ParseConsistency: "session", "Session", "consistent-prefix", ...).
	EnvConsistency = "CDB_EMULATOR_CONSISTENCY"
	// EnvReplicaLag is how far a secondary replica may trail its primary,
	// a Go duration such as "20ms".
	EnvReplicaLag = "CDB_EMULATOR_REPLICA_LAG"
)

// defaultConsistency is the account's level when neither
// Options.Consistency nor EnvConsistency sets one and no replica lag is
// set: Strong, the behaviour of the emulator before replicas existed. With
// a lag (Options.ReplicaLag or EnvReplicaLag) and no level the account is
// Session (laggingConsistency), a real account's default, so that the
// lag asked for is seen by reads.
const (
	defaultConsistency = ConsistencyStrong
	laggingConsistency = ConsistencySession
)

// ParseConsistency parses a consistency level by its service name, in any
// case, with or without '-' or '_' between words ("session",
// "BoundedStaleness", "consistent-prefix"). It fails on anything else.
func ParseConsistency(s string) (Consistency, error) {
	norm := strings.ToLower(strings.NewReplacer("-", "", "_", "", " ", "").Replace(s))
	for _, c := range []Consistency{ConsistencyStrong, ConsistencyBoundedStaleness, ConsistencySession, ConsistencyConsistentPrefix, ConsistencyEventual} {
		if strings.ToLower(string(c)) == norm {
			return c, nil
		}
	}
	return "", fmt.Errorf("emulator: unknown consistency level %q (Strong, BoundedStaleness, Session, ConsistentPrefix or Eventual)", s)
}

// strength orders the levels: higher is stronger; 0 for an unknown one.
func (c Consistency) strength() int {
	switch c {
	case ConsistencyStrong:
		return 5
	case ConsistencyBoundedStaleness:
		return 4
	case ConsistencySession:
		return 3
	case ConsistencyConsistentPrefix:
		return 2
	case ConsistencyEventual:
		return 1
	}
	return 0
}

// readsPrimary reports whether reads at this level see the primary.
func (c Consistency) readsPrimary() bool {
	return c.strength() >= ConsistencyBoundedStaleness.strength()
}

// consistencyFromEnv fills the zero consistency options from the
// environment (EnvConsistency, EnvReplicaLag), then the defaults, and
// validates them; opts.Consistency ends in its service name.
func consistencyFromEnv(opts *Options) error {
	if opts.ReplicaLag == 0 {
		if v := os.Getenv(EnvReplicaLag); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				return fmt.Errorf("emulator: %s: %w", EnvReplicaLag, err)
			}
			opts.ReplicaLag = d
		}
	}
	if opts.ReplicaLag < 0 {
		return fmt.Errorf("emulator: ReplicaLag %v is negative", opts.ReplicaLag)
	}
	if opts.Consistency == "" {
		switch v := os.Getenv(EnvConsistency); {
		case v != "":
			c, err := ParseConsistency(v)
			if err != nil {
				return fmt.Errorf("emulator: %s: %w", EnvConsistency, err)
			}
			opts.Consistency = c
		case opts.ReplicaLag > 0:
			opts.Consistency = laggingConsistency
		default:
			opts.Consistency = defaultConsistency
		}
	}
	// A level spelt another way ("session", "consistent-prefix") is kept
	// as the service names it: reads and the account document compare it
	// by that name.
	c, err := ParseConsistency(string(opts.Consistency))
	if err != nil {
		return err
	}
	opts.Consistency = c
	return nil
}

// requestConsistency returns the level a request reads at: the account's,
// or the weaker one its x-ms-consistency-level header asks for. A header
// naming no level, or a level stronger than the account's, is refused
// with 400, as the service refuses it.
func (s *Server) requestConsistency(r *http.Request) (Consistency, *response) {
	h := firstHeader(r.Header, "X-Ms-Consistency-Level")
	if h == "" {
		return s.consistency, nil
	}
	c, err := ParseConsistency(h)
	if err != nil || !strings.EqualFold(string(c), h) {
		return "", badRequest("Invalid value '" + h + "' for header x-ms-consistency-level: Strong, BoundedStaleness, Session, ConsistentPrefix or Eventual.")
	}
	if c.strength() > s.consistency.strength() {
		return "", badRequest("ConsistencyLevel " + string(c) + " specified in the request is invalid when service is configured with consistency level " +
			string(s.consistency) + ". Ensure the request consistency level is not stronger than the service consistency level.")
	}
	return c, nil
}

// sessionNeed is what a request's session token requires of the replica
// serving a range: the highest LSN it names for the range or one of its
// parents (a split's children inherit their parent's session), 0 when it
// names none.
type sessionNeed map[string]uint64

// parseSessionToken parses x-ms-session-token: comma-separated
// "<pkRangeId>:<token>", where the token is the simple "<lsn>" of older
// services or the vector "<version>#<globalLsn>[#<region>=<lsn>...]" of
// today's (Azure Cosmos DB .NET SDK, VectorSessionToken). A token that
// does not parse is refused with 400, as the service does.
func parseSessionToken(h string) (sessionNeed, *response) {
	if h == "" {
		return nil, nil
	}
	need := sessionNeed{}
	for _, part := range strings.Split(h, ",") {
		part = strings.TrimSpace(part)
		id, tok, ok := strings.Cut(part, ":")
		if !ok || id == "" {
			return nil, badRequest("The session token provided '" + h + "' is invalid.")
		}
		lsnText := tok
		if strings.Contains(tok, "#") {
			fields := strings.Split(tok, "#")
			if _, err := strconv.ParseInt(fields[0], 10, 64); err != nil {
				return nil, badRequest("The session token provided '" + h + "' is invalid.")
			}
			lsnText = fields[1]
		}
		lsn, err := strconv.ParseInt(lsnText, 10, 64)
		if err != nil {
			return nil, badRequest("The session token provided '" + h + "' is invalid.")
		}
		if lsn > 0 && uint64(lsn) > need[id] {
			need[id] = uint64(lsn)
		}
	}
	return need, nil
}

// of returns the LSN the token requires of range r (its own id or a
// parent's).
func (n sessionNeed) of(r pkRange) uint64 {
	if len(n) == 0 {
		return 0
	}
	v := n[r.id]
	for _, p := range r.parents {
		v = max(v, n[p])
	}
	return v
}

// sessionToken renders the x-ms-session-token of a response: one
// "<pkRangeId>:-1#<lsn>" per range, comma-separated, the service's format
// for a single-region account.
func sessionToken(ranges []pkRange, lsn uint64) string {
	l := strconv.FormatUint(lsn, 10)
	var b strings.Builder
	for i, r := range ranges {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(r.id)
		b.WriteString(":-1#")
		b.WriteString(l)
	}
	return b.String()
}

// Consistency returns the account's default consistency level
// (Options.Consistency after the environment and defaults applied).
func (s *Server) Consistency() Consistency { return s.consistency }

// ReplicaLag returns how far a secondary replica may trail its primary
// (Options.ReplicaLag after the environment applied); 0 when they never do.
func (s *Server) ReplicaLag() time.Duration { return s.replicas.lag }

// firstHeader returns the first value of header key, given in its
// canonical form (a map lookup, without Header.Get's canonicalization).
func firstHeader(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}
