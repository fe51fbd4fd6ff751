// Package suggest finds the name a user most likely meant by a misspelt
// one, for "did you mean" hints: plan keys, metric, group and phase names.
// It owns the edit distance and the ranking of candidates, so that every
// hint of mqplan is found the same way; it does not word messages or know
// what the names are, and it imports nothing of mqplan.
package suggest

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// maxRunes bounds the words Distance compares: names are short, and a
// longer input is no typo of one (it also keeps the quadratic table small
// whatever a user passes).
const maxRunes = 64

// Distance is the edit distance between a and b in runes, counting an
// insertion, a deletion, a substitution or a swap of two neighbours (the
// commonest typo: nmae) as one edit (the optimal string alignment
// distance). Words over 64 runes are 64 apart from everything, since no
// name is that long.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > maxRunes || len(rb) > maxRunes {
		return maxRunes
	}
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// Limit is the largest distance at which a candidate is still a likely
// typo of word: 1 for up to 4 runes, 2 for up to 8, 3 beyond, but never
// more than most. Short words need a tight limit (any two 3-letter names
// are 3 edits apart); callers whose names are all short cap it lower.
func Limit(word string, most int) int {
	limit := 1
	switch n := utf8.RuneCountInString(word); {
	case n > 8:
		limit = 3
	case n > 4:
		limit = 2
	}
	return min(limit, most)
}

// Ties says which of several candidates equally near a word wins.
type Ties int

const (
	// First keeps the candidate listed first: the order of the list is
	// meaningful (plan keys are listed as the docs list them).
	First Ties = iota
	// Similar prefers the candidate sharing the longer prefix with the
	// word, then the one whose trailing number is nearer (p98 suggests
	// p99, not p90), then the one listed first.
	Similar
)

// Closest returns the candidate nearest to word by Distance, or "" when
// none is within limit (see Limit); ties decides between equally near
// candidates.
func Closest(word string, cands []string, limit int, ties Ties) string {
	best, bestKey := "", [3]int{limit + 1, 0, 0}
	for _, cand := range cands {
		d := Distance(word, cand)
		if d > limit {
			continue
		}
		key := [3]int{d, 0, 0}
		if ties == Similar {
			key[1], key[2] = -commonPrefix(word, cand), numberGap(word, cand)
		}
		if best == "" || less(key, bestKey) {
			best, bestKey = cand, key
		}
	}
	return best
}

// less orders rank keys lexicographically.
func less(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// commonPrefix is the length in bytes of the prefix a and b share.
func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// numberGap is the distance between the trailing numbers of a and b (98
// and 99 → 1), large when either has none.
func numberGap(a, b string) int {
	tail := func(s string) (int, bool) {
		i := len(s)
		for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
			i--
		}
		if i == len(s) || len(s)-i > 9 {
			return 0, false
		}
		n, err := strconv.Atoi(s[i:])
		return n, err == nil
	}
	x, ok1 := tail(a)
	y, ok2 := tail(b)
	if !ok1 || !ok2 {
		return math.MaxInt32
	}
	if x > y {
		return x - y
	}
	return y - x
}
