package main

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slashID is an instance id with '/' in it, which no file name can hold.
const slashID = "orders/2026/42"

// filesIn returns the names of the files in dir, sorted.
func filesIn(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names
}

// keysOf returns the keys of a JSON object, sorted.
func keysOf(t *testing.T, raw []byte) []string {
	t.Helper()
	var obj map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &obj), "%s", raw)
	return slices.Sorted(maps.Keys(obj))
}

func TestExportWritesEveryExecutionAsItIsStored(t *testing.T) {
	t.Parallel()
	f := openFixture(t)
	t.Cleanup(func() { _ = f.p.Close() })
	f.runWorkload([]start{{slashID, "Eternal", "2"}, {helloID, "Hello", "World"}}) // Eternal from "2" continues as new once
	dir := filepath.Join(t.TempDir(), "out")

	r := f.admin("", "export", "-o", dir, slashID)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, []string{"orders%2F2026%2F42.json"}, filesIn(t, dir), "one file, no temporary file left")
	file := filepath.Join(dir, "orders%2F2026%2F42.json")
	assert.Regexp(t, `(?m)^orders/2026/42\s+2\s+\d+\s+`+regexp.QuoteMeta(file)+`$`, r.stdout)
	assert.True(t, strings.HasSuffix(r.stdout, "exported 1 instance(s) to "+dir+"\n"), r.stdout)

	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	var doc exportDocument
	require.NoError(t, json.Unmarshal(raw, &doc), "%s", raw)
	assert.Equal(t, slashID, doc.InstanceID)
	require.Len(t, doc.Executions, 2)
	for i, e := range doc.Executions {
		assert.Equal(t, uint64(i+1), e.ExecutionID)
		want, err := f.p.ReadWithExecution(context.Background(), slashID, e.ExecutionID)
		require.NoError(t, err)
		require.NotEmpty(t, want)
		assert.Equal(t, want, e.Events, "execution %d decodes to what ReadWithExecution returns", e.ExecutionID)
	}

	// The format other readers rely on: these keys and no others.
	assert.Equal(t, []string{"executions", "instance_id"}, keysOf(t, raw))
	var generic struct {
		Executions []json.RawMessage `json:"executions"`
	}
	require.NoError(t, json.Unmarshal(raw, &generic))
	for _, e := range generic.Executions {
		assert.Equal(t, []string{"events", "execution_id"}, keysOf(t, e))
	}
}

func TestExportSelectsByStatusAndPrefix(t *testing.T) {
	f := sharedFixture(t)
	for _, c := range []struct {
		args  []string
		files []string
	}{
		{[]string{"-status", "failed"}, []string{"fail-1.json"}},
		{[]string{"-prefix", "parent"}, []string{"parent-1-child.json", "parent-1.json"}},
		{[]string{"-prefix", "e", "-status", "Completed"}, []string{"eternal-1.json"}},
		{[]string{"-prefix", "nothing-starts-so"}, []string{}},
		{nil, []string{"eternal-1.json", "fail-1.json", "hello-1.json", "parent-1-child.json", "parent-1.json", "wait-1.json"}},
	} {
		dir := t.TempDir()
		got := decode[[]exportedJSON](t, f.admin("", append([]string{"export", "-json", "-o", dir}, c.args...)...))
		assert.Equal(t, c.files, filesIn(t, dir), c.args)
		require.Len(t, got, len(c.files), c.args)
		for _, e := range got {
			assert.Equal(t, filepath.Join(dir, exportFileName(e.InstanceID)), e.File, c.args)
			assert.Equal(t, e.InstanceID, readExportID(t, e.File), c.args)
			assert.Positive(t, e.Executions)
			assert.Positive(t, e.Events)
		}
	}
	eternal := decode[[]exportedJSON](t, f.admin("", "export", "-json", "-o", t.TempDir(), eternalID))
	assert.Equal(t, 3, eternal[0].Executions, "every execution of an instance that continued as new")
}

// readExportID returns the instance id an export file holds.
func readExportID(t *testing.T, file string) string {
	t.Helper()
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	var doc exportDocument
	require.NoError(t, json.Unmarshal(raw, &doc))
	return doc.InstanceID
}

func TestExportChecksEveryIDBeforeWritingAny(t *testing.T) {
	f := sharedFixture(t)
	dir := filepath.Join(t.TempDir(), "out")
	r := f.admin("", "export", "-o", dir, helloID, "nope")
	assert.Equal(t, exitNotFound, r.code)
	assert.Contains(t, r.stderr, "instance nope not found (cdb-admin list shows the instances); nothing was written")
	assert.NoDirExists(t, dir)

	mixed := f.admin("", "export", "-o", dir, helloID, "-status", "Failed")
	assert.Equal(t, exitUsage, mixed.code)
	assert.Contains(t, mixed.stderr, "export: pass instance ids or -status/-prefix, not both")
	assert.NoDirExists(t, dir)
}

func TestExportStopsAtAFailureAndSaysHowManyWereExported(t *testing.T) {
	f := sharedFixture(t)
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "hello-1.json"), 0o755), "a directory where hello-1's file goes")
	r := f.admin("", "export", "-o", dir, helloID, failID, parentID)
	assert.Equal(t, exitFailed, r.code)
	assert.Contains(t, r.stderr, "export hello-1: rename ")
	assert.Contains(t, r.stderr, "(1 instance(s) exported before it)")
	assert.Equal(t, []string{"fail-1.json", "hello-1.json"}, filesIn(t, dir), "fail-1 first, in id order; no temporary file left")
}

func TestExportFileNamesAreValidAndDistinctForAnyID(t *testing.T) {
	t.Parallel()
	for id, want := range map[string]string{
		"hello-1":        "hello-1.json",
		"orders/2026/42": "orders%2F2026%2F42.json",
		`a\b?c#d:e*f`:    "a%5Cb%3Fc%23d%3Ae%2Af.json",
		"trailing ":      "trailing%20.json",
		"tab\there":      "tab%09here.json",
		"café":           "caf%C3%A9.json",
		".hidden":        "%2Ehidden.json",
		"..":             "%2E..json",
		"v1.2":           "v1.2.json",
		"100%":           "100%25.json",
		"~x":             "%7Ex.json",
	} {
		assert.Equal(t, want, exportFileName(id), "%q", id)
	}

	assert.Equal(t, "%63on.json", exportFileName("con"), "a Windows device name has its first letter encoded")
	assert.Equal(t, "%43OM1.txt.json", exportFileName("COM1.txt"))
	assert.Equal(t, "%25COM1.json", exportFileName("%COM1"))

	long := strings.Repeat("/", 1000)
	name := exportFileName(long)
	assert.LessOrEqual(t, len(name), maxExportName)
	assert.Regexp(t, `^(%2F){33}~[0-9a-f]{16}\.json$`, name, "cut between escapes")
	assert.NotEqual(t, name, exportFileName(long+"/"), "shortened names stay distinct")

	names := exportFileNames([]string{"Order-1", "order-1", "ORDER-1"})
	assert.Equal(t, "Order-1.json", names["Order-1"])
	lower := map[string]bool{}
	for _, n := range names {
		assert.False(t, lower[strings.ToLower(n)], "%s differs from another name only in case", n)
		lower[strings.ToLower(n)] = true
	}
}
