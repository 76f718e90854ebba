package sim

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Check is one target of docs/performance.md checked against a set of results.
type Check struct {
	Target string
	OK     bool
	// Detail gives the measured figures.
	Detail string
}

// find returns the result of scenario under policy.
func find(rs []Result, scenario, policy string) (Result, bool) {
	for _, r := range rs {
		if r.Scenario == scenario && r.Policy == policy {
			return r, true
		}
	}
	return Result{}, false
}

// Checks evaluates the targets whose runs are among rs.
func Checks(rs []Result) []Check {
	var out []Check
	if r, ok := find(rs, AgentRollout, PolicyMCrib); ok {
		drop := 100 * (r.Baseline - r.LowestHitRate)
		out = append(out, Check{
			Target: "agent-rollout under mcrib: 0 flushes, 0 replacements, hit rate at most 0.5 points below baseline, 0 s of database overload",
			OK:     r.Flushes == 0 && r.Replacements == 0 && drop <= 0.5 && r.OverloadSeconds == 0,
			Detail: fmt.Sprintf("%d flushes, %d replacements, %.2f points below baseline, %d s overload", r.Flushes, r.Replacements, drop, r.OverloadSeconds),
		})
	}
	if r, ok := find(rs, AgentRollout, PolicyImmediate); ok {
		drop := 100 * (r.Baseline - r.LowestHitRate)
		out = append(out, Check{
			Target: "agent-rollout under immediate: the damage shows (flushes and replacements)",
			OK:     r.Flushes > 0 && r.Replacements > 0,
			Detail: fmt.Sprintf("%d flushes, %d replacements, %.2f points below baseline, %d s overload", r.Flushes, r.Replacements, drop, r.OverloadSeconds),
		})
	}
	for _, sc := range []string{ObserverBlip, PacketLoss} {
		if r, ok := find(rs, sc, PolicyMCrib); ok {
			out = append(out, Check{
				Target: sc + " under mcrib: 0 flushes, 0 replacements",
				OK:     r.Flushes == 0 && r.Replacements == 0,
				Detail: fmt.Sprintf("%d flushes, %d replacements (immediate: %s)", r.Flushes, r.Replacements, immediateCost(rs, sc)),
			})
		}
	}
	if c, ok := coldStartCheck(rs); ok {
		out = append(out, c)
	}
	out = append(out, zoneDrainChecks(rs)...)
	out = append(out, growChecks(rs)...)
	return out
}

func immediateCost(rs []Result, sc string) string {
	r, ok := find(rs, sc, PolicyImmediate)
	if !ok {
		return "not run"
	}
	return fmt.Sprintf("%d flushes, %d replacements, lowest hit rate %.2f%%, %d s overload", r.Flushes, r.Replacements, 100*r.LowestHitRate, r.OverloadSeconds)
}

// coldStartCheck compares the adaptive limiter with the best static limit
// of the sweep in rs. The best static limit is the fastest one back to 95%
// that kept the database within its capacity (a static limit that
// overloads it is no candidate); the target also wants every static limit
// as fast as the adaptive one to overload the database.
func coldStartCheck(rs []Result) (Check, bool) {
	const target = "cold-start under adaptive: 0 s of database overload, back to 95% within 1.25× the best static:N of the sweep (the fastest with 0 s of overload), and every static:N as fast overloads the database"
	ad, ok := find(rs, ColdStart, PolicyAdaptive)
	if !ok {
		return Check{}, false
	}
	var statics []Result
	var best *Result
	for _, r := range rs {
		if r.Scenario != ColdStart || !strings.HasPrefix(r.Policy, policyStatic) {
			continue
		}
		statics = append(statics, r)
		if r.Recovered && r.OverloadSeconds == 0 && (best == nil || r.Recovery < best.Recovery) {
			best = &statics[len(statics)-1]
		}
	}
	if len(statics) == 0 {
		return Check{}, false
	}
	if best == nil {
		return Check{Target: target, Detail: fmt.Sprintf("adaptive: %d s overload, back in %s; no static limit of the sweep came back without overloading the database: sweep lower limits",
			ad.OverloadSeconds, fmtRecovery(ad))}, true
	}
	bound := time.Duration(math.Round(1.25 * float64(best.Recovery)))
	var asFast []string
	safeAsFast := false
	for _, r := range statics {
		if r.Recovered && ad.Recovered && r.Recovery <= ad.Recovery {
			asFast = append(asFast, fmt.Sprintf("%s %d s", r.Policy, r.OverloadSeconds))
			safeAsFast = safeAsFast || r.OverloadSeconds == 0
		}
	}
	return Check{
		Target: target,
		OK:     ad.OverloadSeconds == 0 && ad.Recovered && ad.Recovery <= bound && !safeAsFast,
		Detail: fmt.Sprintf("adaptive: %d s overload, back in %s; best static: %s back in %s, 1.25× = %s; static limits as fast as adaptive, with their overload: %s",
			ad.OverloadSeconds, fmtRecovery(ad), best.Policy, best.Recovery, bound, orNone(asFast)),
	}, true
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// targets renders Checks as a Markdown list.
func targets(rs []Result) string {
	var b strings.Builder
	for _, c := range Checks(rs) {
		mark := "met"
		if !c.OK {
			mark = "**not met**"
		}
		fmt.Fprintf(&b, "- %s — %s: %s.\n", c.Target, mark, c.Detail)
	}
	return b.String()
}
