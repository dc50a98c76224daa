// Package docs holds the pieces of the provider's document models (package
// cdb's models.go, DESIGN.md §2.2) that its machinery under internal/ needs
// too, so that no internal package imports the root: the pinned duroxide
// version an execution carries.
package docs

import "github.com/duroxide-go/duroxide-cdb/duroxide"

// PinnedVersion is the duroxide version an execution is pinned to, for
// capability filtering, as the instance and execution documents store it
// (pinnedDuroxideVersion).
type PinnedVersion struct {
	Major uint64 `json:"major"`
	Minor uint64 `json:"minor"`
	Patch uint64 `json:"patch"`
}

// ToVersion returns v as a duroxide.Version.
func (v *PinnedVersion) ToVersion() duroxide.Version {
	return duroxide.Version{Major: v.Major, Minor: v.Minor, Patch: v.Patch}
}

// PinnedFrom returns v as stored; nil for nil.
func PinnedFrom(v *duroxide.Version) *PinnedVersion {
	if v == nil {
		return nil
	}
	return &PinnedVersion{Major: v.Major, Minor: v.Minor, Patch: v.Patch}
}
