package doccheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeFileMapMatchesTheTree: README's "What is here" names every
// directory that holds a package (at its first level below the module, or
// its own row), and "Where is what in package cdb" names every source file
// of the root package, so that a newcomer finds each one.
func TestReadmeFileMapMatchesTheTree(t *testing.T) {
	t.Parallel()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	files, err := filepath.Glob(filepath.Join(root, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("only %d Go files at the module root", len(files))
	}
	for _, f := range files {
		name := filepath.Base(f)
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		if !strings.Contains(readme, "`"+name+"`") {
			t.Errorf("README's map of package cdb does not name %s", name)
		}
	}
	for _, dir := range publicPackageDirs(t, root) {
		if dir == "." {
			continue
		}
		if !strings.Contains(readme, "`"+strings.SplitN(dir, "/", 2)[0]+"/") {
			t.Errorf("README's \"What is here\" does not name %s/", dir)
		}
	}
	for _, dir := range []string{"internal", "cmd"} {
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() && !strings.Contains(readme, "`"+dir+"/"+e.Name()+"/`") {
				t.Errorf("README's \"What is here\" does not name %s/%s/", dir, e.Name())
			}
		}
	}
}
