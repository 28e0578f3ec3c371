package sdnlb

import (
	"math"
	"time"
)

// Seconds is a duration written as a number of seconds, fractions allowed
// (0.2 is 200 ms), as LBaaS writes monitor delays and timeouts.
type Seconds float64

// Duration converts s, rounded to the nearest microsecond.
func (s Seconds) Duration() time.Duration {
	return time.Duration(math.Round(float64(s)*1e6)) * time.Microsecond
}
