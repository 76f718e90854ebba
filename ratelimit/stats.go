package ratelimit

import (
	"context"

	"github.com/mcrib/mcrib/hitrate"
)

// Counters are one memcached node's counters, as package hitrate measures
// them; an alias, so that callers of Tick and StatsFunc name either.
type Counters = hitrate.Counters

// StatsFunc reads the counters of every serving memcached node and of
// every warm source (marked Counters.WarmSourceOf), keyed by node ID, and
// says how many serving nodes could not be read. It marks Planned the
// nodes of the slots planned moves touch. It should return when ctx ends.
type StatsFunc func(ctx context.Context) (nodes map[string]Counters, unreadable int)
