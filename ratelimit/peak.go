package ratelimit

import "github.com/mcrib/mcrib/internal/peak"

// PeakWindow is how long a Client remembers the instance counts it saw:
// while the current count is unknown, zero or late (smaller than one seen
// in the last PeakWindow), it shares the limit as if the pool had the
// largest of them.
const PeakWindow = peak.Window
