package main

import "strings"

// closest returns the candidate an operator most likely meant by word, for
// a "did you mean" line: the candidate word is a prefix of (at least three
// letters, one candidate only), else the one at the smallest edit distance
// (insertions, deletions, substitutions and swaps of two neighbours, so
// "stauts" is one edit from "status") when that distance is at most a
// third of word's length, and at least 1. ok is false when no candidate is
// near enough or two are equally near.
func closest(word string, candidates []string) (best string, ok bool) {
	word = strings.ToLower(word)
	if len(word) >= 3 {
		var prefixed []string
		for _, c := range candidates {
			if strings.HasPrefix(c, word) && c != word {
				prefixed = append(prefixed, c)
			}
		}
		if len(prefixed) == 1 {
			return prefixed[0], true
		}
	}
	limit := max(1, len(word)/3)
	bestDist, ties := limit+1, 0
	for _, c := range candidates {
		d := editDistance(word, c)
		switch {
		case d < bestDist:
			best, bestDist, ties = c, d, 1
		case d == bestDist:
			ties++
		}
	}
	if bestDist > limit || ties != 1 {
		return "", false
	}
	return best, true
}

// editDistance returns the optimal string alignment distance between a and
// b, byte by byte: the fewest insertions, deletions, substitutions and
// swaps of two neighbouring bytes that turn a into b.
func editDistance(a, b string) int {
	// d[i][j] is the distance between a[:i] and b[:j].
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
