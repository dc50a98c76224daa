// Package session is the client side of Cosmos DB's Session consistency,
// which azcosmos (Go) leaves to its caller: a session container that keeps
// the newest session token seen for every partition key range of every
// container (as the .NET and Java SDKs do), and the HTTP pipeline policy
// that records the token of every response and sends the container's
// tokens on every read, so that a process reads its own writes on an
// account whose reads are served by a replica that may trail the primary.
// The policy also keeps what the account said of itself (its regions, its
// consistency) when the client read it, for the provider's checks at New.
package session

import (
	"strconv"
	"strings"
)

// Token is one partition key range's session token, in either of the
// service's forms: the vector form "<pkRangeId>:<version>#<globalLSN>"
// followed by "#<regionId>=<localLSN>" per region of a multi-region
// account, or the older simple form "<pkRangeId>:<lsn>".
type Token struct {
	// Range is the partition key range's id.
	Range string
	// Simple is true for the "<pkRangeId>:<lsn>" form (Version and
	// Regions unused).
	Simple bool
	// Version is the replica set's version (vector form).
	Version int64
	// LSN is the global logical sequence number the token guarantees.
	LSN int64
	// Regions are the local LSNs per region id, in the order they came
	// (vector form of a multi-region account).
	Regions []RegionLSN
}

// RegionLSN is one region's local LSN in a vector session token.
type RegionLSN struct {
	Region int64
	LSN    int64
}

// ParseToken parses one range's token ("0:1#42#1=40", "3:17"); ok is
// false when s is not in either form.
func ParseToken(s string) (Token, bool) {
	rng, rest, found := strings.Cut(strings.TrimSpace(s), ":")
	if !found || rng == "" || rest == "" {
		return Token{}, false
	}
	parts := strings.Split(rest, "#")
	if len(parts) == 1 {
		lsn, err := strconv.ParseInt(parts[0], 10, 64)
		if err != nil {
			return Token{}, false
		}
		return Token{Range: rng, Simple: true, LSN: lsn}, true
	}
	v, err1 := strconv.ParseInt(parts[0], 10, 64)
	lsn, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil {
		return Token{}, false
	}
	t := Token{Range: rng, Version: v, LSN: lsn}
	for _, p := range parts[2:] {
		r, l, found := strings.Cut(p, "=")
		if !found {
			return Token{}, false
		}
		ri, err1 := strconv.ParseInt(r, 10, 64)
		li, err2 := strconv.ParseInt(l, 10, 64)
		if err1 != nil || err2 != nil {
			return Token{}, false
		}
		t.Regions = append(t.Regions, RegionLSN{Region: ri, LSN: li})
	}
	return t, true
}

// ParseTokens parses a session token header: one range's token, or
// several separated by commas (a query or read feed across ranges). Parts
// in neither form are skipped.
func ParseTokens(h string) []Token {
	var out []Token
	for _, part := range strings.Split(h, ",") {
		if t, ok := ParseToken(part); ok {
			out = append(out, t)
		}
	}
	return out
}

// String formats t in the form it came in.
func (t Token) String() string {
	var b strings.Builder
	b.WriteString(t.Range)
	b.WriteByte(':')
	if t.Simple {
		b.WriteString(strconv.FormatInt(t.LSN, 10))
		return b.String()
	}
	b.WriteString(strconv.FormatInt(t.Version, 10))
	b.WriteByte('#')
	b.WriteString(strconv.FormatInt(t.LSN, 10))
	for _, r := range t.Regions {
		b.WriteByte('#')
		b.WriteString(strconv.FormatInt(r.Region, 10))
		b.WriteByte('=')
		b.WriteString(strconv.FormatInt(r.LSN, 10))
	}
	return b.String()
}

// Merge returns the token at least as new as both t and o, two tokens of
// one range, as the .NET SDK's VectorSessionToken.Merge does: the higher
// version's regions, each at the highest local LSN either token has for
// it, and the highest global LSN. A simple token merges by LSN alone (with
// a vector token, the vector token is kept, at the higher global LSN).
func (t Token) Merge(o Token) Token {
	if t.Simple && o.Simple {
		if o.LSN > t.LSN {
			return o
		}
		return t
	}
	if t.Simple || o.Simple {
		v := t
		if t.Simple {
			v = o
		}
		v.LSN = max(t.LSN, o.LSN)
		return v
	}
	hi, lo := t, o
	if o.Version > t.Version {
		hi, lo = o, t
	}
	out := Token{Range: hi.Range, Version: hi.Version, LSN: max(t.LSN, o.LSN)}
	for _, r := range hi.Regions {
		l := r.LSN
		for _, lr := range lo.Regions {
			if lr.Region == r.Region {
				l = max(l, lr.LSN)
			}
		}
		out.Regions = append(out.Regions, RegionLSN{Region: r.Region, LSN: l})
	}
	return out
}
