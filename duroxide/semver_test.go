package duroxide

import (
	"slices"
	"testing"
)

func TestParseVersion(t *testing.T) {
	good := map[string]Version{
		"0.1.26":                   {Major: 0, Minor: 1, Patch: 26},
		"1.2.3-rc.1":               {Major: 1, Minor: 2, Patch: 3, Pre: "rc.1"},
		"1.0.0+build.5":            {Major: 1, Build: "build.5"},
		"1.0.0-alpha+001":          {Major: 1, Pre: "alpha", Build: "001"},
		"10.20.30":                 {Major: 10, Minor: 20, Patch: 30},
		"18446744073709551615.0.0": {Major: 18446744073709551615},
		"1.0.0-x-y.z":              {Major: 1, Pre: "x-y.z"},
		"0.0.0":                    {},
	}
	for text, want := range good {
		v, err := ParseVersion(text)
		mustNoError(t, err, text)
		checkEqual(t, want, v, text)
		checkEqual(t, text, v.String(), text)
	}
	bad := []string{
		"", "1", "1.2", "1.2.3.4", "01.2.3", "1.02.3", "1.2.03", "a.b.c", "1.2.x",
		"1.2.3-", "1.2.3-a..b", "1.2.3+", "-1.2.3", "1.2.3 ", " 1.2.3",
		"18446744073709551616.0.0",
		// identifiers the semver crate refuses
		"1.0.0-01", "1.0.0-a b", "1.0.0-é", "1.0.0+a..b", "1.0.0+a_b", "1.0.0-rc.1+",
	}
	for _, text := range bad {
		_, err := ParseVersion(text)
		mustError(t, err, text)
	}
}

func TestMustParseVersion(t *testing.T) {
	checkEqual(t, Version{Major: 2}, MustParseVersion("2.0.0"))
	defer func() {
		if recover() == nil {
			t.Error("MustParseVersion did not panic on a malformed version")
		}
	}()
	MustParseVersion("2.0")
}

// TestVersionPrecedence checks the example chain of semver.org 2.0.0 §11:
// 1.0.0-alpha < 1.0.0-alpha.1 < 1.0.0-alpha.beta < 1.0.0-beta <
// 1.0.0-beta.2 < 1.0.0-beta.11 < 1.0.0-rc.1 < 1.0.0, plus numeric parts.
func TestVersionPrecedence(t *testing.T) {
	chain := []string{
		"0.9.99", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta",
		"1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.2.0", "1.10.0", "2.0.0",
	}
	for i := range chain {
		for j := range chain {
			a, b := MustParseVersion(chain[i]), MustParseVersion(chain[j])
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := a.Compare(b); got != want {
				t.Errorf("%s.Compare(%s) = %d, want %d", a, b, got, want)
			}
		}
	}
	// Build metadata breaks ties last, as in the Rust semver crate's Ord:
	// none first, then identifier by identifier.
	checkEqual(t, -1, MustParseVersion("1.0.0+a").Compare(MustParseVersion("1.0.0+b")))
	checkEqual(t, 1, MustParseVersion("1.0.0-rc.1+a").Compare(MustParseVersion("1.0.0-rc.1")))
	checkEqual(t, -1, MustParseVersion("1.0.0+2").Compare(MustParseVersion("1.0.0+10")))
	checkEqual(t, -1, MustParseVersion("1.0.0+9").Compare(MustParseVersion("1.0.0+a")))
	checkEqual(t, 0, MustParseVersion("1.0.0+a.1").Compare(MustParseVersion("1.0.0+a.1")))
	checkEqual(t, -1, MustParseVersion("1.0.0-rc.1+z").Compare(MustParseVersion("1.0.0")))
}

func TestCurrentBuildVersion(t *testing.T) {
	checkEqual(t, DuroxideVersion, CurrentBuildVersion().String())
	checkEqual(t, Version{Major: 0, Minor: 1, Patch: 31}, CurrentBuildVersion())
}

func TestSemverRangeContains(t *testing.T) {
	r := SemverRange{Min: MustParseVersion("0.1.0"), Max: MustParseVersion("0.1.26")}
	in := []string{"0.1.0", "0.1.5", "0.1.26", "0.1.0+build"}
	// 0.1.26+build sorts after 0.1.26 in the semver crate's total order, so
	// duroxide's SemverRange::contains leaves it out, and so does this port.
	out := []string{"0.0.9", "0.1.0-rc.1", "0.1.27", "0.2.0", "1.0.0", "0.1.27-alpha", "0.1.26+build"}
	for _, s := range in {
		if !r.Contains(MustParseVersion(s)) {
			t.Errorf("[0.1.0, 0.1.26] should contain %s", s)
		}
	}
	for _, s := range out {
		if r.Contains(MustParseVersion(s)) {
			t.Errorf("[0.1.0, 0.1.26] should not contain %s", s)
		}
	}
	d := DefaultSemverRange()
	checkEqual(t, Version{}, d.Min)
	checkEqual(t, CurrentBuildVersion(), d.Max)
	if !d.Contains(MustParseVersion("0.0.1")) || d.Contains(MustParseVersion("0.1.32")) {
		t.Error("DefaultSemverRange is not [0.0.0, current]")
	}
}

func TestDispatcherCapabilityFilter(t *testing.T) {
	f := DispatcherCapabilityFilter{SupportedDuroxideVersions: []SemverRange{
		{Min: MustParseVersion("0.1.0"), Max: MustParseVersion("0.1.9")},
		{Min: MustParseVersion("0.3.0"), Max: MustParseVersion("0.3.5")},
	}}
	var compatible []string
	for _, s := range []string{"0.0.9", "0.1.0", "0.1.9", "0.2.0", "0.3.0", "0.3.5", "0.3.6"} {
		if f.IsCompatible(MustParseVersion(s)) {
			compatible = append(compatible, s)
		}
	}
	checkEqual(t, []string{"0.1.0", "0.1.9", "0.3.0", "0.3.5"}, compatible)

	if (DispatcherCapabilityFilter{}).IsCompatible(MustParseVersion("0.1.0")) {
		t.Error("a filter without ranges accepted a version")
	}

	def := DefaultCapabilityFilter()
	checkEqual(t, []SemverRange{DefaultSemverRange()}, def.SupportedDuroxideVersions)
	if !def.IsCompatible(CurrentBuildVersion()) || def.IsCompatible(MustParseVersion("0.1.32")) {
		t.Error("DefaultCapabilityFilter does not accept exactly [0.0.0, current]")
	}
	if !slices.ContainsFunc(def.SupportedDuroxideVersions, func(r SemverRange) bool { return r.Contains(Version{}) }) {
		t.Error("DefaultCapabilityFilter does not accept 0.0.0")
	}
}
