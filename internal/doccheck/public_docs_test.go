package doccheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// forbiddenInDocs are texts a user of the module cannot follow: paths of
// this repository's tooling and design notes, which a module download does
// not contain.
var forbiddenInDocs = []string{"seeds/", "../shared", "ARCHITECTURE.md"}

// goFileName matches a Go source file name.
var goFileName = regexp.MustCompile(`\b[A-Za-z0-9_]+\.go\b`)

// publicPackageDirs are the directories, relative to the module root, of
// the packages a user imports: everything but internal/, cmd/, examples/
// and the test-only e2e.
func publicPackageDirs(t *testing.T, root string) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		switch {
		case rel == "internal" || rel == "cmd" || rel == "examples" || rel == "e2e" || strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata":
			return filepath.SkipDir
		}
		if hasNonTestGo(path) {
			dirs = append(dirs, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

func hasNonTestGo(dir string) bool {
	m, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, f := range m {
		if !strings.HasSuffix(f, "_test.go") {
			return true
		}
	}
	return false
}

// unexportedNames returns the package's unexported top-level funcs, types
// and methods whose names a reader could mistake for API: camelCase ones
// (a lower-case first letter and an upper-case letter later), so that
// plain words are not matched.
func unexportedNames(t *testing.T, dir string) []string {
	t.Helper()
	pkgs, err := parser.ParseDir(token.NewFileSet(), dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var names []string
	add := func(n string) {
		if len(n) > 0 && unicode.IsLower(rune(n[0])) && strings.IndexFunc(n, unicode.IsUpper) > 0 && !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					add(d.Name.Name)
				case *ast.GenDecl:
					for _, s := range d.Specs {
						if ts, ok := s.(*ast.TypeSpec); ok {
							add(ts.Name.Name)
						}
					}
				}
			}
		}
	}
	return names
}

// TestPublicDocsAreSelfContained runs go doc -all on every public package
// and fails on what a user of the module cannot follow: paths of this
// repository's tooling (seeds/, ../shared), Go file names, and the package's
// unexported identifiers. A doc names the duroxide contract rule or an
// upstream document by its public location instead.
func TestPublicDocsAreSelfContained(t *testing.T) {
	t.Parallel()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dirs := publicPackageDirs(t, root)
	if len(dirs) < 5 {
		t.Fatalf("found only %d public packages under %s: %v", len(dirs), root, dirs)
	}
	for _, dir := range dirs {
		t.Run(dir, func(t *testing.T) {
			t.Parallel()
			checkPublicDoc(t, root, dir)
		})
	}
}

// checkPublicDoc is TestPublicDocsAreSelfContained for the package in dir
// (relative to root).
func checkPublicDoc(t *testing.T, root, dir string) {
	cmd := exec.Command("go", "doc", "-all", "./"+dir)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go doc -all ./%s: %v\n%s", dir, err, out)
	}
	// One pattern for all the package's unexported names, each as a
	// whole word (a regexp per name and line cost seconds of CPU).
	var unexported *regexp.Regexp
	if names := unexportedNames(t, filepath.Join(root, dir)); len(names) > 0 {
		for i, n := range names {
			names[i] = regexp.QuoteMeta(n)
		}
		unexported = regexp.MustCompile(`\b(?:` + strings.Join(names, "|") + `)\b`)
	}
	for i, line := range strings.Split(string(out), "\n") {
		for _, bad := range forbiddenInDocs {
			if strings.Contains(line, bad) {
				t.Errorf("./%s doc line %d names %q: %s", dir, i+1, bad, strings.TrimSpace(line))
			}
		}
		if m := goFileName.FindString(line); m != "" {
			t.Errorf("./%s doc line %d names the file %s: %s", dir, i+1, m, strings.TrimSpace(line))
		}
		if unexported == nil {
			continue
		}
		seen := map[string]bool{}
		for _, n := range unexported.FindAllString(line, -1) {
			if !seen[n] {
				seen[n] = true
				t.Errorf("./%s doc line %d names the unexported %s: %s", dir, i+1, n, strings.TrimSpace(line))
			}
		}
	}
}

// TestReadmeNamesNoToolingPaths: README is read on the module's page, where
// the repository's tooling and design notes do not exist.
func TestReadmeNamesNoToolingPaths(t *testing.T) {
	t.Parallel()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"README.md", "CHANGELOG.md"} {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, bad := range forbiddenInDocs {
				if strings.Contains(line, bad) {
					t.Errorf("%s line %d names %q: %s", name, i+1, bad, strings.TrimSpace(line))
				}
			}
		}
	}
}
