package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/emulator"
)

func TestSequentialModePrintsTimePerActivityForEachProviderAndN(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	code := run(t.Context(), []string{"-sequential", "3,6", "-progress=false"}, &out, &errb)
	report := out.String()
	require.Equal(t, exitOK, code, "report:\n%s\nstderr:\n%s", report, errb.String())
	require.Regexp(t, `sticky cache (on \(default\)|off \(DUROXIDE_STICKY=off\)); cdb eager dispatch (on \(default\)|off \(DUROXIDE_EAGER=off\))`, report)
	for _, provider := range []string{"memory", newCDBTarget(emulator.Latency{}).name()} {
		var rows [][]string
		for _, line := range strings.Split(report, "\n") {
			if strings.HasPrefix(line, provider+" ") {
				rows = append(rows, strings.Fields(strings.TrimPrefix(line, provider)))
			}
		}
		require.Len(t, rows, 2, "%s rows in:\n%s", provider, report)
		require.Equal(t, "3", rows[0][0])
		require.Equal(t, "6", rows[1][0])
		require.Equal(t, "1.00x", rows[0][3], "the first N is the reference")
	}
	if eagerOn() {
		require.Regexp(t, `Eager dispatch, cdb \(emulator\), N=6 \(its warm-up included\): turns \d+ handed, \d+ fallbacks; work items \d+ handed`, report)
	}
}

func TestParseSequentialRefusesNonPositiveCounts(t *testing.T) {
	t.Parallel()
	n, err := parseSequential("200, 2000")
	require.NoError(t, err)
	require.Equal(t, []int{200, 2000}, n)
	for _, bad := range []string{"0", "x", "200,", "-5"} {
		_, err := parseSequential(bad)
		require.Error(t, err, bad)
	}
}
