package plans

import (
	"math"
	"slices"
	"testing"
)

// The statistical tests below use fixed seeds, so they are deterministic;
// their bounds are what theory allows a correct generator, wide enough that
// one fails with a probability of about 10⁻⁸ or less (six standard
// deviations, or a KS critical value at α = 10⁻⁶), so a seed that passes
// says nothing lucky, and narrow enough to catch a wrong law (a gap law off
// by 1% in scale moves the KS statistic over its bound at these sizes).

// ksExp is the Kolmogorov–Smirnov statistic of xs against Exp(1), and the
// critical value at α = 10⁻⁶ for their number: P(√n·D > x) ≈ 2e^(−2x²),
// so x = √(ln(2/α)/2) ≈ 2.69.
func ksExp(xs []float64) (d, crit float64) {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := float64(len(s))
	for i, x := range s {
		f := 1 - math.Exp(-x)
		d = max(d, f-float64(i)/n, float64(i+1)/n-f)
	}
	return d, math.Sqrt(math.Log(2/1e-6)/2) / math.Sqrt(n)
}

func meanVar(xs []float64) (mean, variance float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		variance += (x - mean) * (x - mean)
	}
	return mean, variance / float64(len(xs)-1)
}

// TestPoissonPure: the same (seed, client, k) gives the same arrival,
// bit for bit, whatever was computed before; another seed or client gives
// another process.
func TestPoissonPure(t *testing.T) {
	p := poissonArrivals{seed: 42, client: 7}
	for _, k := range []uint64{0, 1, 255, 256, 257, 100_000, 1 << 40, 1<<62 + 12345} {
		a := p.poissonAt(k)
		poissonArrivals{seed: 1, client: 2}.poissonAt(k + 1) // unrelated work in between
		if b := (poissonArrivals{seed: 42, client: 7}).poissonAt(k); math.Float64bits(a) != math.Float64bits(b) {
			t.Errorf("S(%d) = %v then %v", k, a, b)
		}
		if b := (poissonArrivals{seed: 43, client: 7}).poissonAt(k); a == b {
			t.Errorf("S(%d) = %v for seeds 42 and 43", k, a)
		}
		if b := (poissonArrivals{seed: 42, client: 8}).poissonAt(k); a == b {
			t.Errorf("S(%d) = %v for clients 7 and 8", k, a)
		}
		if k > 1000 && math.Abs(a-float64(k+1)) > 8*math.Sqrt(float64(k+1)) {
			t.Errorf("S(%d) = %v: more than 8σ from k+1", k, a)
		}
	}
}

// TestPoissonSequentialIsRandomAccess: a cursor walking from 0, and cursors
// started anywhere, give exactly poissonAt, and arrivals never go back.
func TestPoissonSequentialIsRandomAccess(t *testing.T) {
	p := poissonArrivals{seed: 3, client: 1}
	c := p.cursor(0)
	prev := 0.0
	for k := uint64(0); k < 5000; k++ {
		u := c.next()
		if u < prev {
			t.Fatalf("S(%d) = %v < S(%d) = %v", k, u, k-1, prev)
		}
		prev = u
		if k%97 == 0 || k%poissonBlock == 0 || k%poissonBlock == poissonBlock-1 {
			if r := p.poissonAt(k); math.Float64bits(r) != math.Float64bits(u) {
				t.Fatalf("S(%d): iterated %v, random access %v", k, u, r)
			}
		}
	}
	for _, k0 := range []uint64{255, 256, 1000, 1<<33 - 3} {
		c := p.cursor(k0)
		for k := k0; k < k0+600; k++ {
			u := c.next()
			if k%50 == 0 || k%poissonBlock <= 1 || k%poissonBlock == poissonBlock-1 {
				if r := p.poissonAt(k); math.Float64bits(r) != math.Float64bits(u) {
					t.Fatalf("S(%d) from a cursor at %d: %v, random access %v", k, k0, u, r)
				}
			}
		}
	}
}

// poissonSample is the arrivals of one client up to operational time T.
func poissonSample(p poissonArrivals, T float64) []float64 {
	var out []float64
	c := p.cursor(0)
	for {
		u := c.next()
		if u >= T {
			return out
		}
		out = append(out, u)
	}
}

// TestPoissonCounts: the number of arrivals in each of M disjoint windows
// of length w is Poisson(w): independent, mean and variance w. The sample
// mean's standard deviation is √(w/M); the sample variance's is about
// √((w + 2w²)/M) (the fourth central moment of Poisson(w) is w + 3w²).
func TestPoissonCounts(t *testing.T) {
	const w, M = 64.0, 16384
	for _, seed := range []uint64{1, 2} {
		arr := poissonSample(poissonArrivals{seed: seed, client: 9}, w*M)
		counts := make([]float64, M)
		for _, u := range arr {
			counts[int(u/w)]++
		}
		mean, variance := meanVar(counts)
		if sd := math.Sqrt(w / M); math.Abs(mean-w) > 6*sd {
			t.Errorf("seed %d: mean count %v in windows of %v, want within %v", seed, mean, w, 6*sd)
		}
		if sd := math.Sqrt((w + 2*w*w) / M); math.Abs(variance-w) > 6*sd {
			t.Errorf("seed %d: count variance %v, want %v within %v", seed, variance, w, 6*sd)
		}
		t.Logf("seed %d: %d arrivals, mean %.4f, variance %.3f (w = %v)", seed, len(arr), mean, variance, w)
	}
}

// TestPoissonGaps: the gaps are Exp(1): all of them (2¹⁸), and separately
// those that cross a block boundary and the last inside a block, where the
// construction joins its pieces.
func TestPoissonGaps(t *testing.T) {
	const n = 1 << 18
	p := poissonArrivals{seed: 5, client: 0}
	c := p.cursor(0)
	var all, across, last []float64
	prev := 0.0
	for k := uint64(0); k < 16*n; k++ {
		u := c.next()
		g := u - prev
		prev = u
		if k < n {
			all = append(all, g)
		}
		switch k % poissonBlock {
		case 0:
			if k > 0 {
				across = append(across, g)
			}
		case poissonBlock - 1:
			last = append(last, g)
		}
	}
	for _, c := range []struct {
		name string
		gaps []float64
	}{{"all", all}, {"across blocks", across}, {"last in a block", last}} {
		d, crit := ksExp(c.gaps)
		if d > crit {
			t.Errorf("%s: KS statistic %v over %d gaps, critical %v at α=1e-6", c.name, d, len(c.gaps), crit)
		}
		mean, _ := meanVar(c.gaps)
		t.Logf("%s: %d gaps, mean %.4f, KS %.5f (critical %.5f)", c.name, len(c.gaps), mean, d, crit)
	}
}

// TestPoissonDeep: far out (k up to 2⁵⁰, where the tree is 42 splits deep
// and its Gamma shapes reach 10¹⁷), across 3,000 clients: S(k) − (k+1) is
// within its law's √(k+1) (standardised: mean 0 and variance 1, checked to
// six standard errors), S(2k+1) − S(k) likewise as Gamma(k+1), and the gap
// there, inside a block and across a boundary, is Exp(1) by KS, up to 2⁴⁰:
// beyond, float64 itself quantises the gaps (at 10¹⁵ to multiples of 1/8).
func TestPoissonDeep(t *testing.T) {
	const clients = 3000
	for _, k := range []uint64{3<<20 + 77, 3<<38 - 1, 1<<50 - 1} {
		var z, z2, inside, across []float64
		for cl := uint64(0); cl < clients; cl++ {
			p := poissonArrivals{seed: 11, client: cl}
			c := p.cursor(k)
			s := c.next()
			inside = append(inside, c.next()-s)
			z = append(z, (s-float64(k+1))/math.Sqrt(float64(k+1)))
			s2 := p.poissonAt(2*k + 1)
			z2 = append(z2, (s2-s-float64(k+1))/math.Sqrt(float64(k+1)))
			b := (k/poissonBlock + 1) * poissonBlock // the next block's first arrival
			across = append(across, p.poissonAt(b)-p.poissonAt(b-1))
		}
		for _, c := range []struct {
			name string
			z    []float64
		}{{"S(k)", z}, {"S(2k+1) − S(k)", z2}} {
			mean, variance := meanVar(c.z)
			if se := 1 / math.Sqrt(clients); math.Abs(mean) > 6*se {
				t.Errorf("k=%d: %s standardised mean %v, want 0 within %v", k, c.name, mean, 6*se)
			}
			if se := math.Sqrt(2.0 / clients); math.Abs(variance-1) > 6*se {
				t.Errorf("k=%d: %s standardised variance %v, want 1 within %v", k, c.name, variance, 6*se)
			}
		}
		if k > 1<<40 {
			continue
		}
		for _, c := range []struct {
			name string
			gaps []float64
		}{{"inside a block", inside}, {"across blocks", across}} {
			if d, crit := ksExp(c.gaps); d > crit {
				t.Errorf("k=%d: gap %s: KS %v, critical %v at α=1e-6", k, c.name, d, crit)
			}
		}
	}
}

// TestPoissonCursorAllocatesNothing: the runner would keep one cursor per
// client and call next once a message.
func TestPoissonCursorAllocatesNothing(t *testing.T) {
	c := poissonArrivals{seed: 1, client: 1}.cursor(0)
	if n := testing.AllocsPerRun(2000, func() { c.next() }); n != 0 {
		t.Errorf("next allocates %v times", n)
	}
}
