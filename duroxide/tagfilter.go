package duroxide

import (
	"fmt"
	"slices"
)

// TagFilterMode says which activity tags a TagFilter accepts.
type TagFilterMode int

// The modes of duroxide's TagFilter enum.
const (
	// TagFilterModeDefaultOnly accepts only untagged activities (the zero value).
	TagFilterModeDefaultOnly TagFilterMode = iota
	// TagFilterModeTags accepts only activities whose tag is in the set.
	TagFilterModeTags
	// TagFilterModeDefaultAnd accepts untagged activities and those whose tag
	// is in the set.
	TagFilterModeDefaultAnd
	// TagFilterModeAny accepts every activity.
	TagFilterModeAny
	// TagFilterModeNone accepts no activity (an orchestrator-only runtime).
	TagFilterModeNone
)

// String returns the Rust variant name of the mode.
func (m TagFilterMode) String() string {
	switch m {
	case TagFilterModeDefaultOnly:
		return "DefaultOnly"
	case TagFilterModeTags:
		return "Tags"
	case TagFilterModeDefaultAnd:
		return "DefaultAnd"
	case TagFilterModeAny:
		return "Any"
	case TagFilterModeNone:
		return "None"
	}
	return fmt.Sprintf("TagFilterMode(%d)", int(m))
}

// TagFilter selects which activities a worker fetches by their tag
// (duroxide's TagFilter). The zero value is DefaultOnly, duroxide's default.
// Build the others with TagFilterTags, TagFilterDefaultAnd, TagFilterAny and
// TagFilterNone; a TagFilter is immutable once built.
type TagFilter struct {
	mode TagFilterMode
	tags []string // sorted, unique; set only for Tags and DefaultAnd
}

// TagFilterDefaultOnly returns the filter that accepts only untagged
// activities.
func TagFilterDefaultOnly() TagFilter { return TagFilter{} }

// TagFilterAny returns the filter that accepts every activity.
func TagFilterAny() TagFilter { return TagFilter{mode: TagFilterModeAny} }

// TagFilterNone returns the filter that accepts no activity.
func TagFilterNone() TagFilter { return TagFilter{mode: TagFilterModeNone} }

// TagFilterTags returns the filter that accepts only activities tagged with
// one of tags. Duplicates collapse. It returns an error when no tag is given
// (use TagFilterNone), when more than MaxWorkerTags distinct tags are given,
// or when a tag is empty or longer than MaxTagNameBytes; duroxide panics in
// those cases.
func TagFilterTags(tags ...string) (TagFilter, error) {
	set, err := tagSet("TagFilterTags", tags)
	if err != nil {
		return TagFilter{}, err
	}
	return TagFilter{mode: TagFilterModeTags, tags: set}, nil
}

// TagFilterDefaultAnd returns the filter that accepts untagged activities and
// those tagged with one of tags, with the same limits as TagFilterTags.
func TagFilterDefaultAnd(tags ...string) (TagFilter, error) {
	set, err := tagSet("TagFilterDefaultAnd", tags)
	if err != nil {
		return TagFilter{}, err
	}
	return TagFilter{mode: TagFilterModeDefaultAnd, tags: set}, nil
}

func tagSet(fn string, tags []string) ([]string, error) {
	if len(tags) == 0 {
		return nil, fmt.Errorf("duroxide: %s requires at least one tag", fn)
	}
	set := slices.Clone(tags)
	slices.Sort(set)
	set = slices.Compact(set)
	if len(set) > MaxWorkerTags {
		return nil, fmt.Errorf("duroxide: %s: a worker can subscribe to at most %d tags, got %d", fn, MaxWorkerTags, len(set))
	}
	for _, t := range set {
		if t == "" || len(t) > MaxTagNameBytes {
			return nil, fmt.Errorf("duroxide: %s: tag %q must be 1 to %d bytes", fn, t, MaxTagNameBytes)
		}
	}
	return set, nil
}

// Mode returns the filter's mode.
func (f TagFilter) Mode() TagFilterMode { return f.mode }

// Tags returns a sorted copy of the filter's tags (empty unless the mode is
// Tags or DefaultAnd).
func (f TagFilter) Tags() []string { return slices.Clone(f.tags) }

// AcceptsUntagged reports whether untagged activities match.
func (f TagFilter) AcceptsUntagged() bool {
	return f.mode == TagFilterModeDefaultOnly || f.mode == TagFilterModeDefaultAnd || f.mode == TagFilterModeAny
}

// Matches reports whether an activity with tag (nil = untagged) passes the
// filter (duroxide's TagFilter::matches).
func (f TagFilter) Matches(tag *string) bool {
	switch f.mode {
	case TagFilterModeAny:
		return true
	case TagFilterModeNone:
		return false
	}
	if tag == nil {
		return f.AcceptsUntagged()
	}
	if f.mode == TagFilterModeDefaultOnly {
		return false
	}
	_, found := slices.BinarySearch(f.tags, *tag)
	return found
}

// String describes the filter, e.g. "Tags[gpu io]".
func (f TagFilter) String() string {
	if len(f.tags) == 0 {
		return f.mode.String()
	}
	return fmt.Sprintf("%s%v", f.mode, f.tags)
}
