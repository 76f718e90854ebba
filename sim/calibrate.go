package sim

import "math"

// A live pool's hit rate is matched by the number of keys its simulated
// workload reads: with the Zipf exponent and the items the slot holders
// hold fixed, more keys mean a lower hit rate. keysFor finds the count by
// Che's approximation of an LRU cache (Che, Tung and Wang, 2002): a cache
// of C items under independent reads holds the keys read within a
// characteristic time T, found from Σ (1 − e^(−p_k T)) = C, and its hit
// rate is Σ p_k (1 − e^(−p_k T)). The keys are summed in buckets of keys
// of nearly equal popularity, so one estimate costs a few thousand terms.

// keysFor returns the number of keys, from capacity to 64 × capacity,
// whose reads (Zipf exponent s) an LRU of capacity items hits at
// hitRate.
func keysFor(hitRate float64, capacity int, s float64) int {
	lo, hi := float64(capacity), 64*float64(capacity)
	if lruHitRate(int(hi), capacity, s) >= hitRate {
		return int(hi)
	}
	for range 40 {
		mid := math.Sqrt(lo * hi)
		if lruHitRate(int(mid), capacity, s) > hitRate {
			lo = mid
		} else {
			hi = mid
		}
	}
	return int(math.Round(math.Sqrt(lo * hi)))
}

// keyBucket is a run of keys of nearly equal popularity: how many, and
// the popularity of each (normalized once the sum is known).
type keyBucket struct{ n, p float64 }

// lruHitRate returns Che's estimate of the hit rate of an LRU of
// capacity items under Zipf(s) reads of n keys (1 when they all fit).
func lruHitRate(n, capacity int, s float64) float64 {
	if n <= capacity {
		return 1
	}
	var bs []keyBucket
	sum := 0.0
	for k := 1; k <= n; {
		width := max(1, k/256) // exact for the hot keys, 0.4% wide after
		width = min(width, n-k+1)
		mid := float64(k) + float64(width-1)/2
		p := math.Pow(mid, -s)
		bs = append(bs, keyBucket{float64(width), p})
		sum += float64(width) * p
		k += width
	}
	for i := range bs {
		bs[i].p /= sum
	}
	held := func(t float64) float64 {
		h := 0.0
		for _, b := range bs {
			h += b.n * -math.Expm1(-b.p*t)
		}
		return h
	}
	lo, hi := 0.0, 1.0
	for held(hi) < float64(capacity) {
		hi *= 2
	}
	for range 60 {
		mid := (lo + hi) / 2
		if held(mid) < float64(capacity) {
			lo = mid
		} else {
			hi = mid
		}
	}
	t := (lo + hi) / 2
	hit := 0.0
	for _, b := range bs {
		hit += b.n * b.p * -math.Expm1(-b.p*t)
	}
	return hit
}
