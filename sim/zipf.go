package sim

import (
	"math"
	"math/rand/v2"
)

// zipfKeys draws the workload's keys: key k of 0..n-1 with probability
// proportional to (k+1)^-s, the distribution of math/rand/v2's Zipf with
// v = 1, from tables built once per run. rand.Zipf computes an exp and a
// log per draw and rejects some draws: about a third of the simulator's
// time. Here the hot head of the keys (the first headKeys, about 90% of the
// draws at s = 1.2) is drawn by inverting its cumulative distribution
// through a small guide table, a few cached reads; only a draw from the
// long tail (which is, given the head's share, again a Zipf distribution,
// with v = headKeys + 1) goes to rand.Zipf. A table for the tail (an
// alias table) was tried: its one random read of tens of megabytes per
// draw cost more than rand.Zipf's arithmetic.
type zipfKeys struct {
	rng *rand.Rand
	// head: cum[k] is the weight of keys 0..k; guide[i] the first key
	// whose cum exceeds i/guideSize of the head's weight.
	cum   []float64
	guide []uint32
	scale float64 // guideSize / head weight
	// headShare is the head's share of the draws.
	headShare float64
	// tail draws keys headKeys..n-1 (as 0..n-1-headKeys), nil without a
	// tail.
	tail *rand.Zipf
}

const (
	// headKeys is the number of hot keys drawn by inversion (their
	// cumulative weights take 128 KiB, the guide 256 KiB).
	headKeys = 16384
	// guideSize is the number of guide entries over the head.
	guideSize = 1 << 16
)

func newZipfKeys(rng *rand.Rand, s float64, n int) *zipfKeys {
	h := min(n, headKeys)
	z := &zipfKeys{rng: rng, cum: make([]float64, h), guide: make([]uint32, guideSize+1)}
	head := 0.0
	for k := range h {
		head += math.Pow(float64(k)+1, -s)
		z.cum[k] = head
	}
	z.scale = guideSize / head
	k := 0
	for i := range guideSize {
		t := float64(i) / z.scale
		for k < h-1 && z.cum[k] <= t {
			k++
		}
		z.guide[i] = uint32(k)
	}
	z.guide[guideSize] = uint32(h - 1)
	z.headShare = 1
	if n > h {
		tail := 0.0
		for k := h; k < n; k++ {
			tail += math.Pow(float64(k)+1, -s)
		}
		z.headShare = head / (head + tail)
		// P(j) ∝ (h + 1 + j)^-s: key h + j's weight.
		z.tail = rand.NewZipf(rng, s, float64(h)+1, uint64(n-h-1))
	}
	return z
}

// next draws one key.
func (z *zipfKeys) next() uint32 {
	u := z.rng.Float64()
	if u >= z.headShare {
		return uint32(headKeys + z.tail.Uint64())
	}
	v := u / z.headShare * z.cum[len(z.cum)-1]
	i := min(int(v*z.scale), guideSize-1)
	lo, hi := z.guide[i], z.guide[i+1]
	for lo < hi {
		mid := lo + (hi-lo)/2
		if z.cum[mid] > v {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	// Rounding of v * scale can pick the neighbouring guide entry: the
	// key is the first whose cum exceeds v, whatever the guide said.
	for lo > 0 && z.cum[lo-1] > v {
		lo--
	}
	for int(lo) < len(z.cum)-1 && z.cum[lo] <= v {
		lo++
	}
	return lo
}
