package dashboard

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestChartLabelsAreReadable checks the health charts' numbers: no
// exponent form ("2e+06"), thousands and millions as k and M.
func TestChartLabelsAreReadable(t *testing.T) {
	t.Parallel()
	for in, want := range map[float64]string{
		0: "0", 7: "7", 12.5: "12.5", 850: "850", 9999: "9999", 12500: "12.5k",
		2e6: "2M", 2.25e6: "2.2M", 151000: "151k", 3e9: "3G", 0.25: "0.25",
	} {
		assert.Equal(t, want, readableNumber(in), "%v", in)
	}
}
