package duroxide

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Version is a semantic version (semver.org 2.0.0): MAJOR.MINOR.PATCH with
// an optional pre-release and build metadata, ordered as the Rust semver
// crate orders them (see Compare).
type Version struct {
	Major, Minor, Patch uint64
	Pre                 string // pre-release, without the leading '-'
	Build               string // build metadata, without the leading '+'
}

// ParseVersion parses s as a semantic version such as "1.2.3",
// "0.1.26-rc.1" or "1.0.0+build.5". It returns an error for anything else
// (missing parts, leading zeros, empty identifiers, identifiers with other
// characters than ASCII letters, digits and '-'), as the semver crate does.
func ParseVersion(s string) (Version, error) {
	var v Version
	rest := s
	if i := strings.IndexByte(rest, '+'); i >= 0 {
		v.Build = rest[i+1:]
		rest = rest[:i]
		if err := checkIdentifiers(v.Build, false); err != nil {
			return Version{}, fmt.Errorf("duroxide: invalid version %q: build metadata: %w", s, err)
		}
	}
	if i := strings.IndexByte(rest, '-'); i >= 0 {
		v.Pre = rest[i+1:]
		rest = rest[:i]
		if err := checkIdentifiers(v.Pre, true); err != nil {
			return Version{}, fmt.Errorf("duroxide: invalid version %q: pre-release: %w", s, err)
		}
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 {
		return Version{}, fmt.Errorf("duroxide: invalid version %q: want MAJOR.MINOR.PATCH", s)
	}
	nums := make([]uint64, 3)
	for i, p := range parts {
		if p == "" || (len(p) > 1 && p[0] == '0') {
			return Version{}, fmt.Errorf("duroxide: invalid version %q: bad number %q", s, p)
		}
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return Version{}, fmt.Errorf("duroxide: invalid version %q: %w", s, err)
		}
		nums[i] = n
	}
	v.Major, v.Minor, v.Patch = nums[0], nums[1], nums[2]
	return v, nil
}

// checkIdentifiers checks dot-separated semver identifiers: non-empty,
// made of [0-9A-Za-z-]; with numeric set (pre-release), an all-digit
// identifier must not have a leading zero.
func checkIdentifiers(s string, numeric bool) error {
	for _, id := range strings.Split(s, ".") {
		if id == "" {
			return errors.New("empty identifier")
		}
		digits := true
		for _, c := range []byte(id) {
			switch {
			case c >= '0' && c <= '9':
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '-':
				digits = false
			default:
				return fmt.Errorf("invalid character %q in identifier %q", c, id)
			}
		}
		if numeric && digits && len(id) > 1 && id[0] == '0' {
			return fmt.Errorf("leading zero in numeric identifier %q", id)
		}
	}
	return nil
}

// MustParseVersion is ParseVersion for constants known to be valid; it
// panics on a malformed version, so use it only with literals.
func MustParseVersion(s string) Version {
	v, err := ParseVersion(s)
	if err != nil {
		panic(err)
	}
	return v
}

// String formats the version back to its text.
func (v Version) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	if v.Pre != "" {
		s += "-" + v.Pre
	}
	if v.Build != "" {
		s += "+" + v.Build
	}
	return s
}

// Compare returns -1, 0 or +1 as v precedes, equals or follows o in the
// Rust semver crate's total order: semver precedence (a pre-release
// precedes its release), then build metadata as a last tie-breaker
// (a version without it first), so that Compare agrees with duroxide's
// SemverRange::contains.
func (v Version) Compare(o Version) int {
	if c := cmp.Compare(v.Major, o.Major); c != 0 {
		return c
	}
	if c := cmp.Compare(v.Minor, o.Minor); c != 0 {
		return c
	}
	if c := cmp.Compare(v.Patch, o.Patch); c != 0 {
		return c
	}
	switch {
	case v.Pre == o.Pre:
		return compareBuild(v.Build, o.Build)
	case v.Pre == "":
		return 1
	case o.Pre == "":
		return -1
	}
	return compareIDs(v.Pre, o.Pre)
}

// compareIDs compares dot-separated identifier lists as semver orders
// pre-release identifiers: field by field, then the longer list last.
func compareIDs(x, y string) int {
	a, b := strings.Split(x, "."), strings.Split(y, ".")
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := comparePreID(a[i], b[i]); c != 0 {
			return c
		}
		if c := strings.Compare(a[i], b[i]); c != 0 {
			return c // equal numbers written with different leading zeros
		}
	}
	return cmp.Compare(len(a), len(b))
}

// compareBuild orders build metadata as the Rust semver crate's total
// order does (duroxide's SemverRange::contains uses it): no metadata sorts
// first, then identifier by identifier. Semver precedence ignores build
// metadata, but the crate's Ord does not, so neither does this port.
func compareBuild(x, y string) int {
	switch {
	case x == y:
		return 0
	case x == "":
		return -1
	case y == "":
		return 1
	}
	return compareIDs(x, y)
}

func comparePreID(a, b string) int {
	na, ea := strconv.ParseUint(a, 10, 64)
	nb, eb := strconv.ParseUint(b, 10, 64)
	switch {
	case ea == nil && eb == nil:
		return cmp.Compare(na, nb)
	case ea == nil:
		return -1 // numeric identifiers precede alphanumeric ones
	case eb == nil:
		return 1
	}
	return strings.Compare(a, b)
}

// CurrentBuildVersion returns DuroxideVersion parsed (duroxide's
// current_build_version).
func CurrentBuildVersion() Version { return MustParseVersion(DuroxideVersion) }

// SemverRange is an inclusive version range [Min, Max] (duroxide's
// SemverRange).
type SemverRange struct {
	Min Version
	Max Version
}

// Contains reports whether Min <= v <= Max.
func (r SemverRange) Contains(v Version) bool {
	return v.Compare(r.Min) >= 0 && v.Compare(r.Max) <= 0
}

// DefaultSemverRange returns [0.0.0, CurrentBuildVersion()]: a runtime can
// replay any execution pinned at or below its own version.
func DefaultSemverRange() SemverRange {
	return SemverRange{Min: Version{}, Max: CurrentBuildVersion()}
}

// DispatcherCapabilityFilter is what the orchestration dispatcher passes to
// FetchOrchestrationItem so that the provider returns only instances whose
// pinned duroxide version it can replay (duroxide's
// DispatcherCapabilityFilter). A nil filter means "any item" (legacy
// behaviour). An execution without a pinned version is always compatible.
type DispatcherCapabilityFilter struct {
	// SupportedDuroxideVersions: an execution is compatible when its pinned
	// version falls in any of these ranges.
	SupportedDuroxideVersions []SemverRange
}

// IsCompatible reports whether v falls in one of the filter's ranges.
// Providers apply only the first range when fetching (see
// Provider.FetchOrchestrationItem); this method is the general check.
func (f DispatcherCapabilityFilter) IsCompatible(v Version) bool {
	for _, r := range f.SupportedDuroxideVersions {
		if r.Contains(v) {
			return true
		}
	}
	return false
}

// DefaultCapabilityFilter returns the filter for the current build:
// one range, DefaultSemverRange().
func DefaultCapabilityFilter() DispatcherCapabilityFilter {
	return DispatcherCapabilityFilter{SupportedDuroxideVersions: []SemverRange{DefaultSemverRange()}}
}
