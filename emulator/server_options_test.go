package emulator

import (
	"strings"
	"testing"
)

func TestStartRefusesInvalidOptions(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string]Options{
		"key not base64":         {Key: "not base64!"},
		"negative partitions":    {PhysicalPartitions: -1},
		"too many partitions":    {PhysicalPartitions: MaxPhysicalPartitions + 1},
		"listen address invalid": {Addr: "not-an-address"},
	} {
		s, err := Start(opts)
		if err == nil {
			_ = s.Close()
			t.Errorf("%s: Start accepted %+v", name, opts)
			continue
		}
		if !strings.HasPrefix(err.Error(), "emulator: ") {
			t.Errorf("%s: error %q does not say where it comes from", name, err)
		}
	}
	s, err := Start(Options{PhysicalPartitions: MaxPhysicalPartitions})
	if err != nil {
		t.Fatalf("the largest partition count is refused: %v", err)
	}
	_ = s.Close()
}
