package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// exportDocument is the file export writes for one instance: every
// execution stored, in ascending order, each with its history in
// duroxide's serde JSON (duroxide.Event's encoding, readable by the Rust
// runtime). The field names are the file format; a reader needs no other
// type than duroxide.Event.
type exportDocument struct {
	InstanceID string            `json:"instance_id"`
	Executions []exportExecution `json:"executions"`
}

// exportExecution is one execution of an exportDocument.
type exportExecution struct {
	ExecutionID uint64           `json:"execution_id"`
	Events      []duroxide.Event `json:"events"`
}

// exportedJSON is one exported instance in export's answer under -json.
type exportedJSON struct {
	InstanceID string `json:"instance_id"`
	File       string `json:"file"`
	Executions int    `json:"executions"`
	Events     int    `json:"events"`
}

// exportDetails is the file format and naming, printed by export -h.
const exportDetails = `Each instance goes to its own file in DIR (created if missing; an
existing file of the same name is replaced, never left half written), one
JSON document:

  {"instance_id": "orders/42",
   "executions": [
     {"execution_id": 1, "events": [<event>, ...]},
     {"execution_id": 2, "events": [...]}]}

with every execution still stored, in ascending order, each event in
duroxide's serde JSON (what history -json prints, readable by the Rust
runtime).

The file name is the id with every byte other than an ASCII letter, a
digit, '-' or '_' (and '.' after the first byte) written as %XX, then
".json": orders/42 -> orders%2F42.json; the first letter of a Windows
device name is written so too (con -> %63on.json). A name longer than 200
bytes, or one that differs only in letter case from another of the same
export, is shortened to the first 100 bytes of the encoded id, "~" and 16
hex digits of the id's SHA-256. The id in the document is always exact.

Without ids: every instance, or only those with -status, or whose id
starts with -prefix (with both, those that match both). Named ids are
all checked first: an unknown one writes nothing (exit status 3). Each
execution is read whole; a Running instance is exported as it is at that
moment. -timeout bounds the whole export: raise it for many instances. A
failure stops the export and says how many instances were exported
before it.`

// exportCommand writes the histories of instances to files:
// ListInstances or ListInstancesByStatus to select (unless ids are
// given), then ListExecutions and ReadWithExecution per instance.
var exportCommand = command{
	name:     "export",
	synopsis: "[-o DIR] <instance>... | [-o DIR] [-status S] [-prefix P]",
	summary:  "write instances' histories (every execution) to DIR, one JSON file per instance",
	details:  exportDetails,
	setup: func(fs *flag.FlagSet) action {
		dir := fs.String("o", ".", "write the files to this directory")
		status := fs.String("status", "", "without ids: only instances with this status")
		prefix := fs.String("prefix", "", "without ids: only instances whose id starts with this")
		return func(ctx context.Context, s *session, args []string) error {
			if len(args) > 0 && (*status != "" || *prefix != "") {
				return usagef("export: pass instance ids or -status/-prefix, not both")
			}
			if err := requireArgs("export", args, 0, -1, "<instance>..."); err != nil {
				return err
			}
			if *dir == "" {
				return usagef("export: -o must name a directory")
			}
			want, err := parseStatus(*status, statuses)
			if err != nil {
				return err
			}
			p, err := s.provider(ctx)
			if err != nil {
				return err
			}
			ids := uniqueSorted(args)
			if len(ids) > 0 {
				for _, id := range ids { // every id before any file
					execs, err := p.ListExecutions(ctx, id)
					if err != nil {
						return fmt.Errorf("list the executions of %s: %w", quoteIfNeeded(id), err)
					}
					if len(execs) == 0 {
						return notFoundf("instance %s not found (cdb-admin list shows the instances); nothing was written", quoteIfNeeded(id))
					}
				}
			} else if ids, err = selectInstances(ctx, p, want, *prefix); err != nil {
				return err
			}
			if err := os.MkdirAll(*dir, 0o755); err != nil {
				return failedf("export: create %s: %v", *dir, err)
			}
			names := exportFileNames(ids)
			out := make([]exportedJSON, 0, len(ids))
			for _, id := range ids { // one instance in memory at a time
				doc, err := readExport(ctx, p, id)
				if err != nil {
					return fmt.Errorf("%w (%d instance(s) exported before it)", err, len(out))
				}
				if len(doc.Executions) == 0 {
					continue // deleted since the listing
				}
				file := filepath.Join(*dir, names[id])
				if err := writeExport(file, doc); err != nil {
					return fmt.Errorf("%w (%d instance(s) exported before it)", err, len(out))
				}
				events := 0
				for _, e := range doc.Executions {
					events += len(e.Events)
				}
				out = append(out, exportedJSON{InstanceID: doc.InstanceID, File: file, Executions: len(doc.Executions), Events: events})
			}
			if s.flags.json {
				return printJSON(s.io.stdout, out)
			}
			rows := make([][]string, len(out))
			for i, o := range out {
				rows[i] = []string{idCell(o.InstanceID, s.flags.verbose), strconv.Itoa(o.Executions), strconv.Itoa(o.Events), o.File}
			}
			if err := printTable(s.io.stdout, []string{"INSTANCE", "EXECUTIONS", "EVENTS", "FILE"}, rows); err != nil {
				return err
			}
			_, err = fmt.Fprintf(s.io.stdout, "exported %d instance(s) to %s\n", len(out), *dir)
			return err
		}
	},
}

// selectInstances lists the instances with status (any when "") whose id
// starts with prefix, sorted.
func selectInstances(ctx context.Context, p *cdb.Provider, status, prefix string) ([]string, error) {
	ids, err := listInstances(ctx, p, status, false)
	if err != nil {
		return nil, err
	}
	ids = slices.DeleteFunc(ids, func(id string) bool { return !strings.HasPrefix(id, prefix) })
	return uniqueSorted(ids), nil
}

// readExport reads every execution of the instance (none when it does not
// exist).
func readExport(ctx context.Context, p *cdb.Provider, id string) (exportDocument, error) {
	doc := exportDocument{InstanceID: id, Executions: []exportExecution{}}
	execs, err := p.ListExecutions(ctx, id)
	if err != nil {
		return doc, fmt.Errorf("list the executions of %s: %w", quoteIfNeeded(id), err)
	}
	for _, e := range execs {
		events, err := p.ReadWithExecution(ctx, id, e)
		if err != nil {
			return doc, fmt.Errorf("read the history of %s execution %d: %w", quoteIfNeeded(id), e, err)
		}
		if events == nil {
			events = []duroxide.Event{}
		}
		doc.Executions = append(doc.Executions, exportExecution{ExecutionID: e, Events: events})
	}
	return doc, nil
}

// writeExport writes doc to file through a temporary file in the same
// directory, renamed into place, so that file is never seen half written.
func writeExport(file string, doc exportDocument) error {
	tmp, err := os.CreateTemp(filepath.Dir(file), ".export-*.tmp")
	if err != nil {
		return failedf("export: %v", err)
	}
	defer os.Remove(tmp.Name()) // after a failure; the rename moved it otherwise
	enc := json.NewEncoder(tmp)
	enc.SetEscapeHTML(false) // serde_json's bytes: '<', '>', '&' as they are
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("export %s: encode: %w", quoteIfNeeded(doc.InstanceID), err)
	}
	if err := tmp.Close(); err != nil {
		return failedf("export: write %s: %v", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return failedf("export %s: %v", quoteIfNeeded(doc.InstanceID), err)
	}
	return nil
}

// File names of export: see exportDetails.
const (
	// maxExportName is the longest file name export writes in bytes,
	// ".json" included (most file systems allow 255).
	maxExportName = 200
	// shortenedPrefix is how much of the encoded id a shortened name keeps.
	shortenedPrefix = 100
)

// windowsDeviceNames are the names Windows reserves, whatever the
// extension and letter case.
var windowsDeviceNames = map[string]bool{
	"CON": true, "PRN": true, "AUX": true, "NUL": true,
	"COM0": true, "COM1": true, "COM2": true, "COM3": true, "COM4": true,
	"COM5": true, "COM6": true, "COM7": true, "COM8": true, "COM9": true,
	"LPT0": true, "LPT1": true, "LPT2": true, "LPT3": true, "LPT4": true,
	"LPT5": true, "LPT6": true, "LPT7": true, "LPT8": true, "LPT9": true,
}

// exportFileNames returns the file name of every id (sorted), distinct
// even on a file system that ignores letter case: an id whose name
// differs only in case from an earlier one's gets the shortened name.
func exportFileNames(ids []string) map[string]string {
	names := make(map[string]string, len(ids))
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		name := exportFileName(id)
		if seen[strings.ToLower(name)] {
			name = shortenedFileName(id)
		}
		seen[strings.ToLower(name)] = true
		names[id] = name
	}
	return names
}

// exportFileName returns id's file name on its own: the id encoded
// (encodeFileName) and ".json", or the shortened name when that is too
// long.
func exportFileName(id string) string {
	enc := encodeFileName(id)
	if len(enc)+len(".json") > maxExportName {
		return shortenedFileName(id)
	}
	return enc + ".json"
}

// encodeFileName writes every byte of id other than an ASCII letter, a
// digit, '-', '_' and a '.' after the first byte as %XX, and the first
// letter of a Windows device name too: the result is a valid file name
// everywhere, never hidden, and decodes back to the id.
func encodeFileName(id string) string {
	base, _, _ := strings.Cut(id, ".")
	device := windowsDeviceNames[strings.ToUpper(base)]
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case i == 0 && device:
			fmt.Fprintf(&b, "%%%02X", c)
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.' && i > 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// shortenedFileName is the start of id's encoding (cut between escapes),
// "~" (which the encoding never writes), 16 hex digits of the id's SHA-256
// and ".json".
func shortenedFileName(id string) string {
	enc := encodeFileName(id)
	if len(enc) > shortenedPrefix {
		cut := shortenedPrefix
		if i := strings.LastIndexByte(enc[:cut], '%'); i >= cut-2 {
			cut = i // do not split a %XX
		}
		enc = enc[:cut]
	}
	sum := sha256.Sum256([]byte(id))
	return enc + "~" + hex.EncodeToString(sum[:8]) + ".json"
}
