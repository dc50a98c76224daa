package doccheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeFileMapMatchesTheTree: README's "What is here" names every
// directory that holds a public package (at its first level below the
// module, or its own row) and every command, and docs/DEVELOPMENT.md (the
// source map) names every internal package and every source file of the
// root package, so that a newcomer finds each one.
func TestReadmeFileMapMatchesTheTree(t *testing.T) {
	t.Parallel()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	readme, devmap := read("README.md"), read("docs/DEVELOPMENT.md")
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
		if !strings.Contains(devmap, "`"+name+"`") {
			t.Errorf("docs/DEVELOPMENT.md's map of package cdb does not name %s", name)
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
	for _, c := range []struct{ dir, doc, text string }{
		{"cmd", "README's \"What is here\"", readme},
		{"internal", "docs/DEVELOPMENT.md", devmap},
	} {
		entries, err := os.ReadDir(filepath.Join(root, c.dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() && !strings.Contains(c.text, "`"+c.dir+"/"+e.Name()+"/`") {
				t.Errorf("%s does not name %s/%s/", c.doc, c.dir, e.Name())
			}
		}
	}
}
