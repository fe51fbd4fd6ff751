package plans

import (
	"math"
	"math/bits"
)

// Poisson arrivals: the process behind `publish.arrival: poisson`
// (arrival.go wires it into Schedule: At, Messages and LastAt).
//
// A client's Poisson schedule is a unit-rate Poisson process in operational
// time u = N(t) (N as in Schedule), mapped back through N⁻¹: arrival k at
// u = S(k) is sent at N⁻¹(S(k)), so the profile shapes the rate and the
// process supplies the randomness. For schedules to stay pure, S(k) must be
// a function of (seed, client, k) alone, reachable without drawing S(0) …
// S(k-1): a plan's explain and the run's accounting count messages in a
// window without walking them, and a client that reconnects resumes at k.
//
// The construction is exact in law (up to floating point), not an
// approximation:
//
//   - Arrivals come in blocks of poissonBlock. The span of block j (from
//     arrival jB−1 to arrival jB+B−1, S(−1) = 0) is a sum of B independent
//     Exp(1) gaps: Gamma(B). The blocks are grouped in levels: level 0 is
//     block 0, level L ≥ 1 blocks [2^(L−1), 2^L). A level's span is one
//     Gamma(blocks·B) draw, and it is split in two halves by a
//     Beta(half·B, half·B) fraction, recursively down to one block: for
//     independent Gamma(a) X and Gamma(b) Y, X/(X+Y) is Beta(a, b) and
//     independent of X+Y, so the halves are independent Gamma(half·B)
//     spans, exactly as if their gaps had been drawn one by one. The end
//     of block j is the sum of the levels below its own plus the left
//     halves on the way down: O(log j) draws.
//   - Inside a block, given its span G, the B gaps are G·(X₁, …, X_B)/ΣX
//     for independent Exp(1) Xᵢ: normalised exponential spacings are
//     Dirichlet(1, …, 1), which is the law of a Poisson process's gaps
//     given their sum. The last arrival of a block is the block's end as
//     the tree gives it, so that random access and sequential iteration
//     agree bit for bit and arrivals never go backwards.
//
// Every draw comes from a counter-based generator: SplitMix64 started at a
// hash of (seed, client, node), where a node is a level's span, a split or
// a block's inside. Nothing depends on the order of evaluation, so any
// arrival can be computed alone (poissonAt) and a cursor (poissonCursor)
// walks them in O(1) amortised: O(log j + B) per block of B arrivals, and
// log₂ j ≤ 64 < B.
//
// Times are float64: far out their resolution shows in the gaps (at
// u = 2⁴⁰ a gap is a multiple of 2⁻¹², at 10¹⁵ of 1/8), which a schedule
// of that many messages per client would have to accept.
//
// The samplers are written here (Box–Muller normals, Marsaglia–Tsang gammas
// with the log1p form of their acceptance test, which stays accurate for
// the shape parameters of 10¹⁸ that deep levels use) rather than taken from
// math/rand/v2, whose algorithms may change between Go releases: the same
// seed must give the same schedule on every build.
type poissonArrivals struct {
	seed, client uint64
}

// poissonBlock is the number of arrivals a block holds: large enough that
// the O(log j) tree walk per block is noise when iterating, small enough
// that random access (two passes over a block) stays cheap.
const poissonBlock = 256

// node kinds, hashed into a draw's key.
const (
	nodeLevel = iota + 1
	nodeSplit
	nodeInside
)

// fmix64 is SplitMix64's output function, a bijective 64-bit mixer.
func fmix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// mixIn folds v into the hash h.
func mixIn(h, v uint64) uint64 { return fmix64(h ^ fmix64(v+0x9e3779b97f4a7c15)) }

// splitmix is a SplitMix64 stream: the counter-based generator of one node.
type splitmix struct{ s uint64 }

func (p poissonArrivals) stream(kind, a, b uint64) splitmix {
	return splitmix{mixIn(mixIn(mixIn(mixIn(p.seed, p.client), kind), a), b)}
}

func (r *splitmix) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	return fmix64(r.s)
}

// uniform is in the open interval (0, 1), so that its log is finite.
func (r *splitmix) uniform() float64 { return (float64(r.next()>>11) + 0.5) / (1 << 53) }

func (r *splitmix) exp() float64 { return -math.Log(r.uniform()) }

// normal is one of Box–Muller's pair.
func (r *splitmix) normal() float64 {
	u, v := r.uniform(), r.uniform()
	return math.Sqrt(-2*math.Log(u)) * math.Cos(2*math.Pi*v)
}

// gamma draws Gamma(alpha, 1) for alpha ≥ 1 (Marsaglia and Tsang, 2000).
// The acceptance test log U < x²/2 + d(1 − v + log v) is computed as
// d(log1p(w) − w) with w = v − 1 formed without cancellation: for the huge
// shapes of deep levels w is about 10⁻⁹ and the plain form would lose it.
func (r *splitmix) gamma(alpha float64) float64 {
	d := alpha - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.normal()
		cx := c * x
		if cx <= -1 {
			continue
		}
		w := cx * (3 + cx*(3+cx)) // (1+cx)³ − 1
		v := 1 + w
		u := r.uniform()
		if x2 := x * x; u < 1-0.0331*x2*x2 || math.Log(u) < 0.5*x2+d*(math.Log1p(w)-w) {
			return d * v
		}
	}
}

// blockEnd is S(jB−1), where block j−1 ends and block j starts (0 for
// block 0): the spans of the levels before j's, plus the left halves on
// the way down to j inside its own level.
func (p poissonArrivals) blockEnd(j uint64) float64 {
	level := uint64(bits.Len64(j))
	var start float64
	for l := uint64(0); l < level; l++ {
		r := p.stream(nodeLevel, l, 0)
		start += r.gamma(levelBlocks(l) * poissonBlock)
	}
	if level == 0 {
		return 0
	}
	r := p.stream(nodeLevel, level, 0)
	total := r.gamma(levelBlocks(level) * poissonBlock)
	lo := uint64(1) << (level - 1)
	size := lo
	id := uint64(1) // heap numbering of the splits inside a level
	for size > 1 {
		half := size / 2
		r := p.stream(nodeSplit, level, id)
		a := float64(half) * poissonBlock
		x := r.gamma(a)
		y := r.gamma(a)
		left := total * (x / (x + y))
		if j < lo+half {
			total = left
			id = 2 * id
		} else {
			start += left
			total -= left
			lo += half
			id = 2*id + 1
		}
		size = half
	}
	// j == lo: block j starts here.
	return start
}

// levelBlocks is how many blocks level l holds.
func levelBlocks(l uint64) float64 {
	if l == 0 {
		return 1
	}
	return math.Ldexp(1, int(l-1))
}

// poissonAt is S(k), the operational time of arrival k (0-based) of the
// client's unit-rate Poisson process: O(log k + B).
func (p poissonArrivals) poissonAt(k uint64) float64 {
	c := p.cursor(k)
	return c.next()
}

// poissonCursor walks a client's arrivals in order; next costs O(1)
// amortised. It is a few words: the block's start and end, the sum of its
// exponentials, the running sum and the stream's position.
type poissonCursor struct {
	p          poissonArrivals
	k          uint64 // the arrival next returns
	start, end float64
	sum, part  float64
	r          splitmix
}

// cursor returns a cursor whose first next is S(k).
func (p poissonArrivals) cursor(k uint64) poissonCursor {
	c := poissonCursor{p: p, k: k}
	c.enter(k / poissonBlock)
	for i := uint64(0); i < k%poissonBlock; i++ {
		c.part += c.r.exp()
	}
	return c
}

// enter positions the cursor at the start of block j: its span from the
// tree, the sum of its exponentials (a first pass), the stream rewound.
func (c *poissonCursor) enter(j uint64) {
	if j > 0 && c.end != 0 && c.k == j*poissonBlock {
		c.start = c.end // the previous block's end, as the tree gave it
	} else {
		c.start = c.p.blockEnd(j)
	}
	c.end = c.p.blockEnd(j + 1)
	r := c.p.stream(nodeInside, j, 0)
	c.r = r
	c.sum = 0
	for i := 0; i < poissonBlock; i++ {
		c.sum += r.exp()
	}
	c.part = 0
}

// next returns the next arrival's operational time.
func (c *poissonCursor) next() float64 {
	i := c.k % poissonBlock
	var u float64
	if i == poissonBlock-1 {
		u = c.end
	} else {
		c.part += c.r.exp()
		u = min(c.start+(c.end-c.start)*(c.part/c.sum), c.end)
	}
	c.k++
	if c.k%poissonBlock == 0 {
		c.enter(c.k / poissonBlock)
	}
	return u
}
