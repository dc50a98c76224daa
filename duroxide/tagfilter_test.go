package duroxide

import (
	"strings"
	"testing"
)

func TestTagFilterMatches(t *testing.T) {
	gpu, io, other := StringPtr("gpu"), StringPtr("io"), StringPtr("other")
	tags, err := TagFilterTags("gpu", "io")
	mustNoError(t, err)
	defaultAnd, err := TagFilterDefaultAnd("gpu")
	mustNoError(t, err)

	// The truth table of duroxide's TagFilter::matches.
	cases := []struct {
		name   string
		filter TagFilter
		tag    *string
		want   bool
	}{
		{"DefaultOnly untagged", TagFilterDefaultOnly(), nil, true},
		{"DefaultOnly tagged", TagFilterDefaultOnly(), gpu, false},
		{"zero value is DefaultOnly, untagged", TagFilter{}, nil, true},
		{"zero value is DefaultOnly, tagged", TagFilter{}, gpu, false},
		{"Tags untagged", tags, nil, false},
		{"Tags member", tags, gpu, true},
		{"Tags other member", tags, io, true},
		{"Tags non-member", tags, other, false},
		{"DefaultAnd untagged", defaultAnd, nil, true},
		{"DefaultAnd member", defaultAnd, gpu, true},
		{"DefaultAnd non-member", defaultAnd, io, false},
		{"Any untagged", TagFilterAny(), nil, true},
		{"Any tagged", TagFilterAny(), other, true},
		{"None untagged", TagFilterNone(), nil, false},
		{"None tagged", TagFilterNone(), gpu, false},
		{"empty tag string is a tag", TagFilterDefaultOnly(), StringPtr(""), false},
	}
	for _, c := range cases {
		if got := c.filter.Matches(c.tag); got != c.want {
			t.Errorf("%s: Matches = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestTagFilterModesAndAccessors(t *testing.T) {
	tags, err := TagFilterTags("io", "gpu", "io")
	mustNoError(t, err)
	checkEqual(t, TagFilterModeTags, tags.Mode())
	checkEqual(t, []string{"gpu", "io"}, tags.Tags())
	checkEqual(t, "Tags[gpu io]", tags.String())
	checkEqual(t, false, tags.AcceptsUntagged())

	// Tags returns a copy: changing it does not change the filter.
	got := tags.Tags()
	got[0] = "changed"
	checkEqual(t, []string{"gpu", "io"}, tags.Tags())
	if !tags.Matches(StringPtr("gpu")) {
		t.Error("filter changed through the slice Tags returned")
	}

	da, err := TagFilterDefaultAnd("gpu")
	mustNoError(t, err)
	checkEqual(t, TagFilterModeDefaultAnd, da.Mode())
	checkEqual(t, true, da.AcceptsUntagged())
	checkEqual(t, "DefaultAnd[gpu]", da.String())

	checkEqual(t, TagFilterModeDefaultOnly, TagFilterDefaultOnly().Mode())
	checkEqual(t, TagFilterModeAny, TagFilterAny().Mode())
	checkEqual(t, TagFilterModeNone, TagFilterNone().Mode())
	checkEqual(t, "DefaultOnly", TagFilterDefaultOnly().String())
	checkEqual(t, "Any", TagFilterAny().String())
	checkEqual(t, "None", TagFilterNone().String())
	checkEqual(t, true, TagFilterAny().AcceptsUntagged())
	checkEqual(t, false, TagFilterNone().AcceptsUntagged())
	checkEqual(t, 0, len(TagFilterAny().Tags()))
	checkEqual(t, "TagFilterMode(9)", TagFilterMode(9).String())
}

func TestTagFilterLimits(t *testing.T) {
	five := []string{"a", "b", "c", "d", "e"}
	for name, build := range map[string]func(...string) (TagFilter, error){
		"Tags": TagFilterTags, "DefaultAnd": TagFilterDefaultAnd,
	} {
		f, err := build(five...)
		mustNoError(t, err, name+" with MaxWorkerTags tags")
		checkEqual(t, MaxWorkerTags, len(f.Tags()), name)

		// Duplicates collapse before the limit is checked.
		_, err = build(append(five, "a", "b")...)
		mustNoError(t, err, name+" with duplicates")

		_, err = build(append(five, "f")...)
		mustError(t, err, name+" with 6 tags")

		_, err = build()
		mustError(t, err, name+" with no tags")

		_, err = build("ok", "")
		mustError(t, err, name+" with an empty tag")

		_, err = build(strings.Repeat("x", MaxTagNameBytes))
		mustNoError(t, err, name+" with a tag of MaxTagNameBytes")
		_, err = build(strings.Repeat("x", MaxTagNameBytes+1))
		mustError(t, err, name+" with a tag over MaxTagNameBytes")
	}
}
