package testparallel

import (
	"flag"
	"testing"
)

func TestDefaultSetsParallelUnlessGiven(t *testing.T) {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	before := flag.Lookup("test.parallel").Value.String()
	if err := Default(5); err != nil {
		t.Fatal(err)
	}
	got := flag.Lookup("test.parallel").Value.String()
	switch {
	case given && got != before:
		t.Fatalf("-parallel was given as %s, Default changed it to %s", before, got)
	case !given && got != "5":
		t.Fatalf("test.parallel = %s, want 5", got)
	}
}
