package ratelimit_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"strconv"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/ratelimit"
)

// The controller through a cold cache: cut fast, raise slowly, and after
// a relapse cut below the level that caused it and take smaller steps.
func ExampleController() {
	cfg := ratelimit.ControllerConfig{Floor: 10, Ceiling: 1000, Low: 0.80, Target: 0.90, Interval: 5 * time.Second}
	start := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	c := ratelimit.NewController(cfg, ratelimit.InitialDocument(cfg, start.Add(-time.Hour)))

	hitRates := []float64{0.40, 0.45, 0.60, 0.85, 0.93, 0.95, 0.96, 0.97, 0.97, 0.72, 0.92, 0.95, 0.96}
	for i, h := range hitRates {
		now := start.Add(time.Duration(i+1) * cfg.Interval)
		if d := c.Observe(now, h); d.Changed {
			fmt.Printf("t=%-3s limit %-4v burst %-3d %s\n", strconv.Itoa((i+1)*5)+"s", d.Limit, d.Burst, d.Reason)
		}
	}
	// Output:
	// t=5s  limit 500  burst 50  hit rate 0.40 below 0.80: cut from 1000 to 500
	// t=15s limit 250  burst 25  hit rate 0.60 below 0.80: cut from 500 to 250
	// t=30s limit 350  burst 35  hit rate 0.95 at or above target 0.90: raised from 250 to 350
	// t=45s limit 450  burst 45  hit rate 0.97 at or above target 0.90: raised from 350 to 450
	// t=50s limit 225  burst 23  hit rate 0.72 fell below 0.80 after raising from 350 to 450: cut to 225, next steps 50
	// t=65s limit 275  burst 28  hit rate 0.96 at or above target 0.90: raised from 225 to 275
}

// A Limiter runs the whole boot limiter with the time as input, as the
// simulator runs it: a reading of the nodes' counters every stats
// interval, and the boots between readings. A cold cache cuts the limit
// to the floor at the next reading, and the boots beyond it are refused.
func ExampleLimiter() {
	cfg := ratelimit.ControllerConfig{Floor: 10, Ceiling: 1000, Low: 0.80, Target: 0.90, Interval: 5 * time.Second}
	start := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	lim := ratelimit.NewLimiter(cfg, ratelimit.InitialDocument(cfg, start))
	lim.Lead() // this process decides; Service leaves that to the election

	var mc ratelimit.Counters // one memcached, cumulative counters
	mc.PID, mc.Uptime = 1, time.Hour
	for i, gets := range [][2]uint64{{9700, 300}, {9700, 300}, {9700, 300}, {5000, 5000}} {
		now := start.Add(time.Duration(i) * cfg.Interval)
		mc.Hits, mc.Misses = mc.Hits+gets[0], mc.Misses+gets[1]
		lim.Observe(now, map[string]ratelimit.Counters{"mc-1": mc}, ratelimit.Slots{})
		admitted := 0
		for b := range 200 { // 40 boots/s until the next reading
			if ok, _ := lim.Admit(now.Add(time.Duration(b) * cfg.Interval / 200)); ok {
				admitted++
			}
		}
		fmt.Printf("t=%-3s limit %-4v admitted %3d of 200: %s\n", strconv.Itoa(i*5)+"s", lim.Limit(now), admitted, lim.Adopted().Reason)
	}
	// Output:
	// t=0s  limit 1000 admitted 200 of 200: new pool: starting in auto mode at the ceiling of 1000 boots/s
	// t=5s  limit 1000 admitted 200 of 200: new pool: starting in auto mode at the ceiling of 1000 boots/s
	// t=10s limit 1000 admitted 200 of 200: new pool: starting in auto mode at the ceiling of 1000 boots/s
	// t=15s limit 10   admitted  50 of 200: hit rate fell from 0.97 to 0.73 within 10s: cut from 1000 to the floor of 10
}

// An operator's setting arrives as the body of PUT /v1/ratelimit; a bad
// one is refused with one sentence.
func ExampleParseSetting() {
	for _, body := range []string{
		`{"mode": "manual", "limit": 50}`,
		`{"mode": "auto"}`,
		`{"mode": "manual", "limit": -5}`,
		`{"mode": "manual", "limit": 5, "rate": 2}`,
	} {
		st, err := ratelimit.ParseSetting([]byte(body))
		if err != nil {
			fmt.Println("400:", err)
			continue
		}
		fmt.Printf("ok: %+v\n", st)
	}
	// Output:
	// ok: {Mode:manual Limit:50 Burst:0}
	// ok: {Mode:auto Limit:0 Burst:0}
	// 400: limit must be a finite number of boots per second, at least 0
	// 400: unknown field "rate"; the fields are mode, limit and burst
}

// A cut also shrinks the bucket: the tokens gathered at the old limit do
// not leak through at the new one.
func ExampleAdmitter() {
	now := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	a := ratelimit.NewAdmitter(1000, 100)
	a.Set(5, 5, now)
	admitted := 0
	for range 40 {
		if a.Allow(now) {
			admitted++
		}
	}
	ok, retryAfter := a.Admit(now)
	fmt.Println(admitted, ok, retryAfter)
	// Output: 5 false 1s
}

// A web application embeds a Client: it follows the boot limit mcrib
// publishes in Consul and admits its share of client boots locally.
func ExampleClient() {
	consul, err := api.NewClient(api.DefaultConfig())
	if err != nil {
		log.Fatal(err)
	}
	boots, err := ratelimit.NewClient(ratelimit.ClientOptions{
		Consul:  consul,
		Key:     ratelimit.Key("mcrib", "default"), // --kv-prefix, --pool
		Service: "webapp",                          // this application's Consul service
	})
	if err != nil {
		log.Fatal(err)
	}
	go boots.Run(context.Background())

	http.HandleFunc("/api/client.boot", func(w http.ResponseWriter, r *http.Request) {
		if ok, retryAfter := boots.Admit(); !ok {
			w.Header().Set("Retry-After", strconv.Itoa(int(retryAfter/time.Second)))
			http.Error(w, "too many boots, try again later", http.StatusTooManyRequests)
			return
		}
		// ... the expensive boot ...
	})
}
