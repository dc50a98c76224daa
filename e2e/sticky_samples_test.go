package e2e_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// onAndOffTest is the name of the test that runs every sample with the
// sticky cache on and off; stickyOff reads it in the subtests' names.
const onAndOffTest = "TestEverySampleDecidesTheSameWithTheStickyCacheOnAndOff"

// stickySamples lists every e2e sample (the TestSample functions of the
// samples_*_test.go files, duroxide's tests/e2e_samples.rs; README's
// table in duroxide/runtime has the Rust names).
// TestStickySamplesListsEverySample keeps it complete.
var stickySamples = []struct {
	name string
	run  func(*testing.T)
}{
	{"HelloWorld", TestSampleHelloWorld},
	{"BasicControlFlow", TestSampleBasicControlFlow},
	{"Loop", TestSampleLoop},
	{"ErrorHandling", TestSampleErrorHandling},
	{"TimeoutWithTimerRace", TestSampleTimeoutWithTimerRace},
	{"SelectActivityVsExternal", TestSampleSelectActivityVsExternal},
	{"GreetingsJoin", TestSampleGreetingsJoin},
	{"SystemActivities", TestSampleSystemActivities},
	{"StatusPolling", TestSampleStatusPolling},
	{"BasicErrorHandling", TestSampleBasicErrorHandling},
	{"NestedFunctionErrorHandling", TestSampleNestedFunctionErrorHandling},
	{"ErrorRecovery", TestSampleErrorRecovery},
	{"ConfigHotReloadPersistentEvents", TestSampleConfigHotReloadPersistentEvents},
	{"HeterogeneousWorkersWithTags", TestSampleHeterogeneousWorkersWithTags},
	{"StarvationSafeTaggedActivity", TestSampleStarvationSafeTaggedActivity},
	{"DualRuntimeTagCooperation", TestSampleDualRuntimeTagCooperation},
	{"KVRequestResponse", TestSampleKVRequestResponse},
	{"KVCrossOrchestrationRead", TestSampleKVCrossOrchestrationRead},
	{"KVReadModifyWriteCounter", TestSampleKVReadModifyWriteCounter},
	{"SubOrchestrationBasic", TestSampleSubOrchestrationBasic},
	{"SubOrchestrationFanOut", TestSampleSubOrchestrationFanOut},
	{"SubOrchestrationChained", TestSampleSubOrchestrationChained},
	{"DetachedOrchestrationScheduling", TestSampleDetachedOrchestrationScheduling},
	{"DetachedThenActivity", TestSampleDetachedThenActivity},
	{"ContinueAsNew", TestSampleContinueAsNew},
	{"VersioningStartLatestVsExact", TestSampleVersioningStartLatestVsExact},
	{"VersioningSubOrchestrationExplicitVsPolicy", TestSampleVersioningSubOrchestrationExplicitVsPolicy},
	{"VersioningContinueAsNewUpgrade", TestSampleVersioningContinueAsNewUpgrade},
	{"CancellationParentCascadesToChildren", TestSampleCancellationParentCascadesToChildren},
	{"SelfPruningEternalOrchestration", TestSampleSelfPruningEternalOrchestration},
	{"TypedActivityAndOrchestration", TestSampleTypedActivityAndOrchestration},
	{"TypedEvent", TestSampleTypedEvent},
	{"MixedStringAndTypedTypedOrchestration", TestSampleMixedStringAndTypedTypedOrchestration},
	{"MixedStringAndTypedStringOrchestration", TestSampleMixedStringAndTypedStringOrchestration},
}

// TestEverySampleDecidesTheSameWithTheStickyCacheOnAndOff runs every
// sample twice: with the sticky cache on, where each turn that resumes a
// cached execution is also decided by a full replay of the same fetched
// item and the two decisions (the events appended to the history, the
// work items, the metadata) must be the same JSON byte for byte (sample's
// start installs Options.StickyVerify), and with it off, replaying every
// turn in full. Each run's own assertions check its outcome and history.
//
// Two live runs are not compared with each other: their histories differ
// by timestamps, GUIDs and the order in which concurrent activities
// complete whatever the cache does; comparing each resumed turn with a
// full replay of the same input is the byte-for-byte check.
func TestEverySampleDecidesTheSameWithTheStickyCacheOnAndOff(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every sample twice; the samples themselves run in -short")
	}
	for _, mode := range []string{"on", "off"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel() // and each sample is parallel (newSample)
			for _, s := range stickySamples {
				t.Run(s.name, s.run)
			}
		})
	}
}

// TestStickySamplesListsEverySample checks that stickySamples names every
// TestSample function of the package's sample files.
func TestStickySamplesListsEverySample(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("samples_*_test.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no sample files: %v", err)
	}
	var want []string
	for _, f := range files {
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range parsed.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "TestSample") {
				want = append(want, strings.TrimPrefix(fn.Name.Name, "TestSample"))
			}
		}
	}
	var got []string
	for _, s := range stickySamples {
		got = append(got, s.name)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("stickySamples lists %v\nthe sample files define %v", got, want)
	}
}
