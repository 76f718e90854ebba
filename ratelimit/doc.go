// Package ratelimit is mcrib's boot limiter: it protects the database
// behind a cold cache by limiting how many client boots (the most expensive
// request) happen per second, and lets the limit rise again only as fast as
// the cache refills.
//
// The parts:
//
//   - HitRateMeter turns the memcached nodes' get_hits and get_misses into
//     the pool's smoothed hit rate.
//   - Controller is the adaptive controller: a pure state machine that
//     takes the hit rate and the time and moves the limit.
//   - Admitter enforces a limit with a golang.org/x/time/rate token bucket.
//   - Store keeps the boot-limit document in Consul KV with check-and-set.
//   - Service ties them together for mcrib serve (POST /v1/boot,
//     GET and PUT /v1/ratelimit). Run drives it with goroutines; a
//     simulation drives it on one goroutine with its synchronous steps
//     (Sync, Tick, Admit) over a DocumentStore of its own.
//   - Client is embedded by web applications: it follows the published
//     document and enforces the application's share locally, the limit
//     divided by the largest count of the application's instances in the
//     last 10 minutes (a count that is unknown, zero or late never lets the
//     pool admit more).
//
// # Hit rate
//
// Every stats interval (--stats-interval) the counters of each serving
// memcached are read. Per node, the increase of get_hits and get_misses
// since its previous reading is taken; a new pid, a smaller uptime or a
// smaller counter means memcached restarted, and its counters themselves
// are the increase. A node seen for the first time only sets a baseline; a
// node that cannot be read is left out and counted; a node missing for 10
// readings is forgotten. The interval's hit rate (hits / (hits + misses)
// summed over the nodes) is folded into an exponentially weighted moving
// average with weight 0.5 at the pool's usual traffic; an interval with less
// traffic than usual weighs proportionally less (usual traffic is a moving
// average of requests per second with weight 0.2), and an interval without
// any traffic leaves the value as it was. So one quiet interval does not
// move the limit, while a collapse at full traffic halves the distance to
// the new hit rate within one interval. An interval without any gets is no
// reading at all: the controller holds, and the hit rate is unknown (null
// in the status and the boot-limit document) until an interval has gets
// again.
//
// During a warm move the hit rate counts what applications see: a get
// that misses a warming slot's new holder and hits its warm source is one
// get and one hit; the warm source's own gets are not counted again
// (warmpair.go says how, from what the clients do on a warm read). The
// controller's input, and the slow start's, leave out the nodes of the
// slots a planned move touched (a drain or return step, a replace, a
// maintenance move: while the slot warms and a few intervals after the move
// or its warming's end, also for a cold move), so that no planned move cuts
// the limit by itself, while a fall of the other slots' hit rate still
// does.
//
// # Controller
//
// With I the stats interval, Low the --hit-rate-low and Target the
// --hit-rate-target, each observation does at most one thing:
//
//   - Collapse: the hit rate fell by (Target - Low) / 2 or more (5 points
//     with the defaults) from the highest value observed within the collapse
//     window of 2 × I (and since the last cut), at any level, even above
//     Target. The cache went cold (a flush, a restart of the tier, a
//     partition) and every waiting client is about to boot into it: cut
//     straight to --boot-limit-min, without a cooldown, and start the next
//     recovery with full steps. The level alone is too late a sign: boots
//     read the hottest keys, which refill first, so a cold start can keep
//     the hit rate above Low while it floods the database.
//   - Hit rate below Low: cut the limit to half (never below
//     --boot-limit-min), at most once per cut cooldown of 2 × I.
//   - Hit rate from Low up to Target: hold.
//   - Hit rate at or above Target: raise the limit by one step, but at most
//     to twice the limit (so a recovery from the floor goes 10, 20, 40, 80,
//     160, 260, ...) and never above --boot-limit-max, and only once the
//     raise wait of 3 × I has passed since the last change of any kind, so
//     the effect of each step on the hit rate is seen before the next. The
//     first step is a tenth of the ceiling.
//   - Relapse: a hit rate below Low within the relapse window of 6 × I after
//     a raise is blamed on that raise (this rule comes before the collapse
//     rule). The limit is cut to min(0.5 × limit, 0.9 × the level before
//     the raise) (not below the floor), and the step is halved (not below a hundredth of the ceiling,
//     or 1 boot/s). When a raise reaches the ceiling the step is reset to a
//     tenth of the ceiling for the next recovery.
//   - A limit outside the floor and the ceiling (the flags changed) is moved
//     inside first.
//
// In short, for the README (I = --stats-interval):
//
//	cut cooldown    2 × I   least time between two cuts
//	raise wait      3 × I   least time between any change and the next raise
//	relapse window  6 × I   a cut this soon after a raise is a relapse
//	collapse window 2 × I   a fall of (target - low) / 2 within it cuts to the floor
//
// Limits are kept to hundredths of a boot per second. Every change carries
// one reason sentence, for example "hit rate fell from 0.97 to 0.91 within
// 10s: cut from 1000 to the floor of 10", "hit rate 0.72 below 0.80: cut
// from 500 to 250", "hit rate 0.95 at or above target 0.90: raised from 250
// to 350" or "hit rate 0.70 fell below 0.80 after raising from 250 to 350:
// cut to 175, next steps 50". In auto mode the burst is DefaultBurst(limit), a
// tenth of a second's worth of boots.
//
// # Boot surges: the slow start
//
// A healthy pool sits at the ceiling, and the hit rate shows a cold cache
// only at the next stats reading, up to an interval later. When every
// client asks to boot at once (a cold start of the tier, or a deploy), a
// controller driven by the hit rate alone would admit them at the ceiling
// before it could see anything. So the effective admission rate may not
// jump far above the recent admissions without a reading having seen the
// cache take it (SlowStart, in front of the Admitter in Service.Admit, on
// the leader, which every replica forwards its boots to):
//
//   - A surge is a second with more boot requests than max(floor, 1,
//     4 × the boots admitted per second between the last two readings),
//     while the limit is more than twice the slow-start level.
//   - From then on admissions are capped by an allowance that starts at
//     max(floor, 1, that admitted rate) and doubles every third of the
//     interval, twice (10, 20, 40 boots/s at the defaults), then holds.
//   - The first reading with a hit rate at least half an interval into the
//     surge judges it by that interval's own hit rate (not the smoothed
//     one: with every client waiting to boot, the interval has little
//     traffic and barely moves the smoothed rate). No fall: the surge is
//     released to the controller's limit, and no new surge begins before
//     the next reading. A fall: the controller takes over from the
//     slow-start level, not from the ceiling: below Low it halves that
//     level; a collapse above Low holds at it (the waiting clients are
//     already held there; the collapse rule's cut to the floor is for a
//     limit at the ceiling) and counts as a cut, so the smoothed rate
//     catching up with the same fall is not a new collapse; the raises
//     resume after the raise wait.
//   - Without a readable hit rate a surge ends after 3 intervals.
//   - Nothing is a surge before two readings have measured the admitted
//     rate: a new process, or a process that has just become the leader
//     (its followers' boots went to the old leader), takes no steady load
//     for a surge. A process that does not lead keeps its slow start
//     reset, so a newly elected leader admits at the stored limit and
//     burst from its first boot.
//
// The cost for a deploy of every client with a warm cache is at most about
// one interval: the first interval at the slow start, then the limit.
// Manual mode has no slow start (an operator's limit is exact). The slow
// start is the leader's live state, not stored: GET /v1/ratelimit shows
// "slow_start": true, "effective_limit" (the allowance; "limit" stays the
// controller's) and a reason starting "boot surge: slow start at 10
// boots/s until the hit rate is read". A follower cut off from the leader
// admits its share of the stored limit (invariant 8), without a slow start.
//
// # Modes and the stored document
//
// The boot-limit document lives at <kv-prefix>/<pool>/bootlimit (Key), so
// every replica and a restarted process agree. A new pool starts in auto
// mode at the ceiling; a restarted process keeps the stored document. In
// manual mode the operator's limit is enforced (a manual limit above the
// ceiling, --boot-limit-max, is refused with a sentence naming it) and the
// controller keeps
// computing what it would do, published as auto_limit and auto_reason;
// switching back to auto resumes from the current limit (held inside the
// floor and the ceiling). Only the leader runs the controller; every change
// is written with check-and-set and re-read on conflict.
//
// # Enforcement
//
// Admitter keeps a rate.Limiter equal to the limit and burst; during a
// boot surge the slow start's own bucket decides first. A cut lowers
// the burst too, so the tokens already in the bucket cannot exceed the new
// limit's burst. Times passed to the limiter never go backwards
// (golang/go#65508: an older time would mint tokens). Refusals come with a
// Retry-After of whole seconds, at least 1. A limit of 0 admits nothing.
package ratelimit
