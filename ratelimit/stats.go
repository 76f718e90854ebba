package ratelimit

import (
	"context"

	"github.com/mcrib/mcrib/hitrate"
)

// Counters are one memcached node's counters, as package hitrate measures
// them; an alias, so that callers of Tick and StatsFunc name either.
type Counters = hitrate.Counters

// Slots is what a stats reading knows of the pool's slots, as package
// hitrate counts them; an alias, like Counters.
type Slots = hitrate.Slots

// StatsFunc reads the counters of every served slot's holder and of every
// warm source (marked Counters.WarmSourceOf), keyed by node ID, and says
// what it knows of the slots: how many, how many have no live holder
// (vacant, or the holder unreachable by the pool's verdict: counted as all
// misses for their share of the gets) and how many served ones could not
// be read (hitrate.Slots). It marks Planned the nodes of the slots planned
// moves touch. It should return when ctx ends.
type StatsFunc func(ctx context.Context) (nodes map[string]Counters, slots Slots)
