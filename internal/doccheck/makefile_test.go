package doccheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestMakeExamplesRunsEveryExample checks that `make examples` runs every
// program under examples/ (a directory holding a main package) and nothing
// else, such as the examples' shared helper packages under
// examples/internal.
func TestMakeExamplesRunsEveryExample(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(root, "examples"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, "examples", e.Name(), "main.go"))
		if err == nil && strings.Contains(string(src), "package main") {
			want = append(want, e.Name())
		}
	}
	cmd := exec.Command("make", "-n", "--no-print-directory", "examples")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n examples: %v\n%s", err, out)
	}
	// The recipe is one shell loop: "for e in <names>; do ...".
	text := string(out)
	start := strings.Index(text, "for e in ")
	end := strings.Index(text, "; do")
	if start < 0 || end < start {
		t.Fatalf("make -n examples printed no loop over the examples:\n%s", out)
	}
	got := strings.Fields(text[start+len("for e in ") : end])
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("make examples runs %v, want every example program %v", got, want)
	}
}
