package runtime

import "time"

// WithCleanupHeadroom returns o with the total deadline of Shutdown and
// ShutdownWithGrace d after their grace deadline instead of 5 s
// (cleanupHeadroom): for tests of a shutdown that must give up on code
// that blocks, which would otherwise wait the 5 s out.
func WithCleanupHeadroom(o Options, d time.Duration) Options {
	o.cleanupHeadroom = d
	return o
}
