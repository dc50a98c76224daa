package cosmos

import (
	"errors"
	"sync/atomic"
)

// Keeping transport failures from azcosmos's own retries.
//
// azcosmos v1.5.0 retries a request that got no answer inside its
// pipeline, whatever the client's retry options say: three times against
// the same endpoint and once more for a "cross-region failover", one
// second apart. Against a stopped store every request then takes 4 s
// before the provider even sees its error, so a call "tried once" (Ping)
// takes 4 s and a call retried by the provider takes ten times that. The
// provider retries transport failures itself (knowing which writes are
// safe to repeat, within its retry budget), so its per-try pipeline policy
// hides them from the SDK (HideFromSDK: an error the SDK's classifier
// does not recognise, which it returns as it is), and its per-call policy,
// outside the SDK's retry loop, reveals them again (Reveal) before any of
// the provider's code sees them: errors.Is and errors.As then find the
// transport error (syscall.ECONNREFUSED, *net.DNSError ...) as before.

// sdkHidden is a transport error the SDK's retry policy cannot classify
// until it is revealed.
type sdkHidden struct {
	err      error
	revealed atomic.Bool
}

func (h *sdkHidden) Error() string { return h.err.Error() }

// Unwrap returns the transport error once revealed, nil before.
func (h *sdkHidden) Unwrap() error {
	if h.revealed.Load() {
		return h.err
	}
	return nil
}

// HideFromSDK returns err (a transport failure: a request that got no
// answer) in a form azcosmos's retry policy does not retry; Reveal undoes
// it. A nil err stays nil.
func HideFromSDK(err error) error {
	if err == nil {
		return nil
	}
	return &sdkHidden{err: err}
}

// Reveal makes the transport errors HideFromSDK hid anywhere in err's chain
// visible to errors.Is and errors.As again, and returns err.
func Reveal(err error) error {
	for e := err; e != nil; {
		var h *sdkHidden
		if !errors.As(e, &h) || h.revealed.Swap(true) {
			return err
		}
		e = h.err
	}
	return err
}
