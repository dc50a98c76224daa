package duroxide

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// fakeAdmin is a ProviderAdmin over a parent → children map. It implements
// what GetInstanceTree and DeleteInstance use and takes every other method
// from the embedded nil interface (calling one would fail the test with a
// nil dereference).
type fakeAdmin struct {
	ProviderAdmin
	children     map[string][]string
	failChildren string // ListChildren of this instance fails
	failParent   bool
	deleted      [][]string // arguments of each DeleteInstancesAtomic call
	forced       []bool
	pruned       []string // instances of each PruneExecutions call
}

func (f *fakeAdmin) ListChildren(_ context.Context, instance string) ([]string, error) {
	if instance == f.failChildren {
		return nil, NewRetryableError("list_children", "throttled")
	}
	return f.children[instance], nil
}

func (f *fakeAdmin) GetParentID(_ context.Context, instance string) (string, bool, error) {
	if f.failParent {
		return "", false, NewRetryableError("get_parent_id", "throttled")
	}
	for parent, kids := range f.children {
		for _, k := range kids {
			if k == instance {
				return parent, true, nil
			}
		}
	}
	return "", false, nil
}

func (f *fakeAdmin) GetInstanceTree(ctx context.Context, instance string) (InstanceTree, error) {
	return GetInstanceTree(ctx, f, instance)
}

func (f *fakeAdmin) DeleteInstancesAtomic(_ context.Context, ids []string, force bool) (DeleteInstanceResult, error) {
	f.deleted = append(f.deleted, ids)
	f.forced = append(f.forced, force)
	return DeleteInstanceResult{InstancesDeleted: uint64(len(ids)), EventsDeleted: 10 * uint64(len(ids))}, nil
}

func (f *fakeAdmin) PruneExecutions(_ context.Context, instance string, _ PruneOptions) (PruneResult, error) {
	if instance == "fails" {
		return PruneResult{}, NewRetryableError("prune_executions", "throttled")
	}
	f.pruned = append(f.pruned, instance)
	return PruneResult{InstancesProcessed: 1, ExecutionsDeleted: 2, EventsDeleted: 7}, nil
}

func newFakeAdmin() *fakeAdmin {
	return &fakeAdmin{children: map[string][]string{
		"root":         {"root::sub::2", "root::sub::3"},
		"root::sub::2": {"root::sub::2::sub::1"},
	}}
}

func TestGetInstanceTree(t *testing.T) {
	ctx := context.Background()
	f := newFakeAdmin()

	tree, err := GetInstanceTree(ctx, f, "root")
	mustNoError(t, err)
	// duroxide's default pops the last pushed id first (a stack).
	checkEqual(t, InstanceTree{RootID: "root", AllIDs: []string{"root", "root::sub::3", "root::sub::2", "root::sub::2::sub::1"}}, tree)
	checkEqual(t, 4, tree.Size())
	checkEqual(t, false, tree.IsRootOnly())

	leaf, err := GetInstanceTree(ctx, f, "lonely")
	mustNoError(t, err)
	checkEqual(t, InstanceTree{RootID: "lonely", AllIDs: []string{"lonely"}}, leaf)
	checkEqual(t, true, leaf.IsRootOnly())

	sub, err := GetInstanceTree(ctx, f, "root::sub::2")
	mustNoError(t, err)
	checkEqual(t, []string{"root::sub::2", "root::sub::2::sub::1"}, sub.AllIDs)

	// A cycle in corrupt data ends instead of looping.
	f.children["root::sub::2::sub::1"] = []string{"root"}
	cyc, err := GetInstanceTree(ctx, f, "root")
	mustNoError(t, err)
	checkEqual(t, 4, cyc.Size())

	f.failChildren = "root::sub::2"
	_, err = GetInstanceTree(ctx, f, "root")
	var pe *ProviderError
	if !errors.As(err, &pe) || pe.Operation != "list_children" {
		t.Errorf("ListChildren's error was not returned: %v", err)
	}
}

func TestDeleteInstance(t *testing.T) {
	ctx := context.Background()
	f := newFakeAdmin()

	res, err := DeleteInstance(ctx, f, "root", true)
	mustNoError(t, err)
	checkEqual(t, DeleteInstanceResult{InstancesDeleted: 4, EventsDeleted: 40}, res)
	checkEqual(t, [][]string{{"root", "root::sub::3", "root::sub::2", "root::sub::2::sub::1"}}, f.deleted)
	checkEqual(t, []bool{true}, f.forced)

	// A sub-orchestration cannot be deleted on its own.
	_, err = DeleteInstance(ctx, f, "root::sub::2", false)
	var pe *ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("want a ProviderError, got %v", err)
	}
	checkEqual(t, "delete_instance", pe.Operation)
	checkEqual(t, false, pe.Retryable)
	if !strings.Contains(pe.Message, "Cannot delete sub-orchestration root::sub::2 directly") {
		t.Errorf("unexpected message %q", pe.Message)
	}
	checkEqual(t, 1, len(f.deleted)) // nothing more was deleted

	// Errors of the primitives are passed on, and nothing is deleted.
	f.failParent = true
	_, err = DeleteInstance(ctx, f, "root", false)
	if !IsRetryable(err) || err == nil {
		t.Errorf("GetParentID's retryable error was not returned: %v", err)
	}
	f.failParent = false
	f.failChildren = "root"
	_, err = DeleteInstance(ctx, f, "root", false)
	mustError(t, err)
	checkEqual(t, 1, len(f.deleted))
}

func TestDeleteTreesDeletesEachRootWithItsDescendants(t *testing.T) {
	ctx := context.Background()
	f := newFakeAdmin()
	f.children["other"] = nil
	res, err := DeleteTrees(ctx, f, []string{"root", "other"})
	mustNoError(t, err)
	checkEqual(t, DeleteInstanceResult{InstancesDeleted: 5, EventsDeleted: 50}, res)
	checkEqual(t, [][]string{{"root", "root::sub::3", "root::sub::2", "root::sub::2::sub::1"}, {"other"}}, f.deleted)
	checkEqual(t, []bool{true, true}, f.forced)

	f.failChildren = "other"
	res, err = DeleteTrees(ctx, f, []string{"root", "other"})
	mustError(t, err)
	checkEqual(t, uint64(4), res.InstancesDeleted) // the trees deleted before the error
}

func TestSystemMetricsCountInstanceByStatus(t *testing.T) {
	var m SystemMetrics
	for _, s := range []string{StatusRunning, StatusCompleted, StatusFailed, StatusRunning, StatusContinuedAsNew} {
		m.CountInstance(s)
	}
	checkEqual(t, SystemMetrics{TotalInstances: 5, RunningInstances: 2, CompletedInstances: 1, FailedInstances: 1}, m)
}

func TestDeleteInstanceResultAdd(t *testing.T) {
	r := DeleteInstanceResult{InstancesDeleted: 1, ExecutionsDeleted: 2, EventsDeleted: 3, QueueMessagesDeleted: 4}
	r.Add(DeleteInstanceResult{InstancesDeleted: 10, ExecutionsDeleted: 20, EventsDeleted: 30, QueueMessagesDeleted: 40})
	checkEqual(t, DeleteInstanceResult{InstancesDeleted: 11, ExecutionsDeleted: 22, EventsDeleted: 33, QueueMessagesDeleted: 44}, r)
}

// adminProvider is a Provider (nil methods) that is also a ProviderAdmin.
type adminProvider struct {
	Provider
	*fakeAdmin
}

// wrappedProvider exposes an admin through ManagementCapable.
type wrappedProvider struct {
	Provider
	admin ProviderAdmin
}

func (w wrappedProvider) ManagementCapability() ProviderAdmin { return w.admin }

// plainProvider is a Provider without admin support.
type plainProvider struct{ Provider }

func TestAsManagementCapability(t *testing.T) {
	fa := newFakeAdmin()
	ap := adminProvider{fakeAdmin: fa}
	admin, ok := AsManagementCapability(ap)
	checkEqual(t, true, ok)
	if a, _ := admin.(adminProvider); a.fakeAdmin != fa {
		t.Error("AsManagementCapability did not return the provider itself")
	}

	admin, ok = AsManagementCapability(wrappedProvider{admin: fa})
	checkEqual(t, true, ok)
	if admin != ProviderAdmin(fa) {
		t.Error("AsManagementCapability did not return ManagementCapability()")
	}

	_, ok = AsManagementCapability(wrappedProvider{})
	checkEqual(t, false, ok)
	_, ok = AsManagementCapability(plainProvider{})
	checkEqual(t, false, ok)
}

// TestHelpersRefuseNilAdmin checks that the default-method helpers return a
// permanent ProviderError for a nil admin instead of panicking.
func TestHelpersRefuseNilAdmin(t *testing.T) {
	ctx := context.Background()
	_, err := GetInstanceTree(ctx, nil, "root")
	var pe *ProviderError
	if !errors.As(err, &pe) || pe.Retryable || pe.Operation != "get_instance_tree" {
		t.Errorf("GetInstanceTree(nil admin): want a permanent get_instance_tree ProviderError, got %v", err)
	}
	_, err = DeleteInstance(ctx, nil, "root", true)
	if !errors.As(err, &pe) || pe.Retryable || pe.Operation != "delete_instance" {
		t.Errorf("DeleteInstance(nil admin): want a permanent delete_instance ProviderError, got %v", err)
	}
	_, err = DeleteTrees(ctx, nil, []string{"root"})
	if !errors.As(err, &pe) || pe.Retryable || pe.Operation != "delete_instance_bulk" {
		t.Errorf("DeleteTrees(nil admin): want a permanent delete_instance_bulk ProviderError, got %v", err)
	}
}

func TestPruneEachPrunesEveryInstanceAndSumsTheCounts(t *testing.T) {
	ctx := context.Background()
	f := newFakeAdmin()
	res, err := PruneEach(ctx, f, []string{"a", "b"}, PruneOptions{})
	mustNoError(t, err)
	if res != (PruneResult{InstancesProcessed: 2, ExecutionsDeleted: 4, EventsDeleted: 14}) {
		t.Fatalf("PruneEach = %+v", res)
	}
	res, err = PruneEach(ctx, f, []string{"c", "fails", "d"}, PruneOptions{})
	if !IsRetryable(err) || res.InstancesProcessed != 1 {
		t.Fatalf("PruneEach stops at the first error with what it pruned: %+v, %v", res, err)
	}
	if got := len(f.pruned); got != 3 {
		t.Fatalf("pruned %d instances, want 3 (a, b, c)", got)
	}
	if _, err := PruneEach(ctx, nil, []string{"a"}, PruneOptions{}); IsRetryable(err) || err == nil {
		t.Fatalf("a nil admin is a permanent error, got %v", err)
	}
}
