// Package slogzap is a zap core that writes through a log/slog handler, so
// that the provider's zap logs and the runtime's slog logs come out in one
// format, through one handler: by default slog.Default()'s (cdb's
// DefaultLogger), or any handler a program gives (cdb.SlogLogger).
//
// Each zap entry becomes one slog record: zap's debug and info levels map
// to slog's, warn to Warn, error and above to Error; the logger's name is
// the attribute "logger"; the fields (the logger's, then the entry's)
// follow as attributes, encoded as zap encodes them for a map (an error
// as its message), sorted by key.
package slogzap

import (
	"context"
	"log/slog"
	"slices"

	"go.uber.org/zap/zapcore"
)

// Core returns a zapcore.Core that writes the entries level enables to h.
func Core(h slog.Handler, level zapcore.LevelEnabler) zapcore.Core {
	return &core{h: h, level: level}
}

// core is the zapcore.Core of Core.
type core struct {
	h      slog.Handler
	level  zapcore.LevelEnabler
	fields []zapcore.Field
}

// Level maps a zap level to slog's.
func Level(l zapcore.Level) slog.Level {
	switch {
	case l <= zapcore.DebugLevel:
		return slog.LevelDebug
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	}
	return slog.LevelError
}

func (c *core) Enabled(l zapcore.Level) bool {
	return c.level.Enabled(l) && c.h.Enabled(context.Background(), Level(l))
}

func (c *core) With(fields []zapcore.Field) zapcore.Core {
	return &core{h: c.h, level: c.level, fields: append(slices.Clip(c.fields), fields...)}
}

func (c *core) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *core) Write(e zapcore.Entry, fields []zapcore.Field) error {
	r := slog.NewRecord(e.Time, Level(e.Level), e.Message, 0)
	if e.LoggerName != "" {
		r.AddAttrs(slog.String("logger", e.LoggerName))
	}
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range c.fields {
		f.AddTo(enc)
	}
	for _, f := range fields {
		f.AddTo(enc)
	}
	keys := make([]string, 0, len(enc.Fields))
	for k := range enc.Fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		r.AddAttrs(slog.Any(k, enc.Fields[k]))
	}
	return c.h.Handle(context.Background(), r)
}

func (c *core) Sync() error { return nil }
