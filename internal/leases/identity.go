package leases

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/google/uuid"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/duroxide-go/duroxide-cdb/internal/cosmos"
)

// A Provider's identity among the owners of a container's slots.
//
// With a stable identity (Config.Owner: cdb.Config.ProcessID, by default
// the host name and the program's name), a process restarted after a
// crash registers under its predecessor's owner id, and the slot documents
// that name that id are its own at once: it does not wait for the dead
// owner's lease to expire (LeaseExpiry, 30 s), nor for its slots to be
// suspected (two heartbeats, 10 s). Two live processes must never share
// an identity, or both would query the same slots believing them theirs
// (safe, since locks are ETag-based, but each lost race costs requests,
// and neither would take the other's slots when it dies). So the first
// registration creates the owner document, and when one exists already
// (the identity's last holder did not Close), it reads who wrote it:
//
//   - another Provider of this process (the same Process): this one takes
//     a random id (Info);
//   - a process on this host whose pid is alive and not this one's: a live
//     twin (two replicas of one program on one host); this one takes a
//     random id and warns, naming Config.ProcessID;
//   - anything else (a pid no longer alive, this very pid in a new run of
//     the process, as in a restarted container, or another host when
//     ProcessID was set so): the dead predecessor, whose document and
//     slots this Provider takes over.
//
// A twin the first registration could not see (two hosts with one name)
// shows itself later: its renewal replaces the owner document under this
// Provider's ETag, and this Provider's next renewal fails its If-Match
// (412) on a document another Provider wrote; that one takes a random id
// and warns.

// Self is who a Provider is: what its owner document records so that
// the next holder of its identity tells a dead predecessor from a live
// twin.
type Self struct {
	// Host is the host name (os.Hostname).
	Host string
	// PID is the process id (os.Getpid).
	PID int
	// Process is an id unique to this run of the process, shared by its
	// Providers.
	Process string
	// Instance is an id unique to this Provider; "" makes New draw one.
	Instance string
	// Alive reports whether a process with pid runs on this host now; nil
	// takes every pid for alive (no predecessor on this host is taken
	// over, but one whose pid is this process's own).
	Alive func(pid int) bool
}

// maxOwnerID bounds an owner id, so that the owner document's id stays
// far within the service's 255 characters.
const maxOwnerID = 100

// OwnerID makes identity a valid owner id: the characters Cosmos DB
// refuses in ids (/ \ ? #) and control characters become '_', and an
// identity longer than 100 characters is cut and ends with a hash of the
// whole.
func OwnerID(identity string) string {
	id := strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(`/\?#`, r) {
			return '_'
		}
		return r
	}, identity)
	if len(id) > maxOwnerID {
		sum := sha256.Sum256([]byte(identity))
		id = strings.ToValidUTF8(id[:maxOwnerID-17], "") + "-" + hex.EncodeToString(sum[:8])
	}
	return id
}

// id returns this Provider's owner id.
func (c *Coordinator) id() string { return *c.owner.Load() }

// Owner returns this Provider's owner id (the stable identity, or the
// random id it took because a live process shares the identity).
func (c *Coordinator) Owner() string { return c.id() }

// register writes this Provider's first owner document under its stable
// identity: a creation when no owner document has the identity (one
// request), otherwise the document is read and its writer judged (see
// above). It returns the new document's ETag. The caller holds beatMu.
func (c *Coordinator) register(ctx context.Context, want [2]bool) (string, error) {
	etag, err := c.store.Create(ctx, c.ownerDoc(want).body())
	if !cosmos.IsStatus(err, http.StatusConflict) {
		if err == nil {
			c.checked = true
		}
		return etag, err
	}
	prev, found, err := c.readOwner(ctx)
	if err != nil {
		return "", err
	}
	c.checked = true
	if found && prev.Instance != c.self.Instance {
		switch {
		case prev.Process != "" && prev.Process == c.self.Process:
			c.becomeRandom(zapcore.InfoLevel, "another Provider of this process on this container has the same ProcessID; this one uses a random owner id")
		case prev.Host == c.self.Host && prev.PID != c.self.PID && c.alive(prev.PID):
			c.becomeRandom(zapcore.WarnLevel, "a live process on this host has the same ProcessID (two replicas of one program on one host?); this one uses a random owner id, and a restart of it waits for its slots' lease to expire: set Config.ProcessID to tell them apart",
				zap.Int("other_pid", prev.PID))
		default:
			fields := []zap.Field{zap.String("owner", c.id()), zap.String("previous_host", prev.Host), zap.Int("previous_pid", prev.PID)}
			if prev.Beat > 0 {
				fields = append(fields, zap.Duration("last_renewed_ago", time.Since(time.UnixMilli(prev.Beat)).Round(time.Millisecond)))
			}
			c.log.Info("taking over the dispatch slots of this process's predecessor (same ProcessID) at once", fields...)
		}
	}
	return c.store.Upsert(ctx, c.ownerDoc(want).body())
}

// twinWrote reads the owner document after a renewal failed its If-Match
// (412) and reports whether another Provider wrote it: a live twin, from
// which this one moves to a random id. A document this Provider wrote (a
// renewal whose answer was lost, sent again) or a deleted one is not a
// twin's. The caller holds beatMu.
func (c *Coordinator) twinWrote(ctx context.Context) (bool, error) {
	d, found, err := c.readOwner(ctx)
	if err != nil || !found || d.Instance == c.self.Instance || d.Instance == "" {
		return false, err
	}
	c.becomeRandom(zapcore.WarnLevel, "another live process renews the owner document of this Provider's ProcessID (the same host name on two machines?); this one uses a random owner id: set Config.ProcessID to tell them apart",
		zap.String("other_host", d.Host), zap.Int("other_pid", d.PID))
	return true, nil
}

// readOwner reads the owner document of this Provider's id (one query).
func (c *Coordinator) readOwner(ctx context.Context) (leaseDoc, bool, error) {
	raws, err := c.store.Query(ctx, "SELECT * FROM c WHERE c.id = @id", []azcosmos.QueryParameter{{Name: "@id", Value: "owner-" + c.id()}})
	if err != nil || len(raws) == 0 {
		return leaseDoc{}, false, err
	}
	var d leaseDoc
	if err := json.Unmarshal(raws[0], &d); err != nil {
		return leaseDoc{}, false, nil
	}
	return d, true, nil
}

// becomeRandom moves this Provider to a random owner id, logging why at
// level; its next owner document is a creation. The caller holds beatMu.
func (c *Coordinator) becomeRandom(level zapcore.Level, why string, fields ...zap.Field) {
	prev := c.id()
	id := uuid.NewString()
	c.owner.Store(&id)
	c.mu.Lock()
	c.ownerETag = ""
	c.mu.Unlock()
	c.log.Log(level, why, append(fields, zap.String("process_id", prev), zap.String("owner", id))...)
}

// alive reports whether pid runs on this host (Self.Alive).
func (c *Coordinator) alive(pid int) bool {
	if c.self.Alive == nil {
		return true
	}
	return c.self.Alive(pid)
}
