package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
)

// treeJSON is one node of tree's answer under -json.
type treeJSON struct {
	InstanceID        string     `json:"instance_id"`
	OrchestrationName string     `json:"orchestration_name"`
	Status            string     `json:"status"`
	Children          []treeJSON `json:"children"`
}

// treeCommand prints an instance and its sub-orchestrations, depth first:
// ListChildren per node and GetInstanceInfo for its status.
var treeCommand = command{
	name:     "tree",
	synopsis: "<instance>",
	summary:  "the instance and its sub-orchestrations, with their statuses",
	setup: func(fs *flag.FlagSet) action {
		return func(ctx context.Context, s *session, args []string) error {
			if err := requireArgs("tree", args, 1, 1, "<instance>"); err != nil {
				return err
			}
			p, err := s.provider(ctx)
			if err != nil {
				return err
			}
			var build func(id string, seen map[string]bool) (treeJSON, error)
			build = func(id string, seen map[string]bool) (treeJSON, error) {
				seen[id] = true
				info, err := instanceInfo(ctx, p, id)
				if err != nil {
					return treeJSON{}, err
				}
				node := treeJSON{InstanceID: id, OrchestrationName: info.OrchestrationName, Status: info.Status, Children: []treeJSON{}}
				children, err := p.ListChildren(ctx, id)
				if err != nil {
					return treeJSON{}, fmt.Errorf("list the children of %s: %w", quoteIfNeeded(id), err)
				}
				sort.Strings(children)
				for _, c := range children {
					if seen[c] {
						continue
					}
					child, err := build(c, seen)
					if exitCode(err) == exitNotFound {
						continue // a child being deleted
					}
					if err != nil {
						return treeJSON{}, err
					}
					node.Children = append(node.Children, child)
				}
				return node, nil
			}
			root, err := build(args[0], map[string]bool{})
			if err != nil {
				return err
			}
			if s.flags.json {
				return printJSON(s.io.stdout, root)
			}
			printTree(s.io.stdout, root, "", "")
			return nil
		}
	},
}

// printTree writes node and its descendants with box-drawing branches.
func printTree(w io.Writer, node treeJSON, first, rest string) {
	fmt.Fprintf(w, "%s%s  %s  %s\n", first, quoteIfNeeded(node.InstanceID), nameCell(node.OrchestrationName, true), node.Status)
	for i, c := range node.Children {
		if i == len(node.Children)-1 {
			printTree(w, c, rest+"└── ", rest+"    ")
		} else {
			printTree(w, c, rest+"├── ", rest+"│   ")
		}
	}
}
