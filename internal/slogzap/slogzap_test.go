package slogzap

import (
	"bytes"
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// TestZapEntriesBecomeSlogRecords checks that a zap logger over Core
// writes through the slog handler: the level threshold, the logger's
// name, its fields and the entry's, an error as its message.
func TestZapEntriesBecomeSlogRecords(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	h := slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}})
	log := zap.New(Core(h, zapcore.WarnLevel)).Named("cdb").With(zap.String("endpoint", "http://x"))
	log.Info("not shown")
	log.Warn("cannot reach Cosmos DB yet; retrying", zap.Int("attempt", 1), zap.Error(errors.New("429")))
	log.Error("lost", zap.Bool("retry", false))
	assert.Equal(t, `level=WARN msg="cannot reach Cosmos DB yet; retrying" logger=cdb attempt=1 endpoint=http://x error=429`+"\n"+
		`level=ERROR msg=lost logger=cdb endpoint=http://x retry=false`+"\n", buf.String())
}
