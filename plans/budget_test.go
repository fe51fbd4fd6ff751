package plans

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// budgetPlans are adversarial plans at or past the limits of limits.go:
// the largest a plan may be in each direction, and far past it. Each must
// be loaded and compiled (or refused) within the memory budget.
func budgetPlans() []struct{ name, yaml string } {
	filters := func(n int, f string) string {
		var b strings.Builder
		b.WriteString("[")
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, f, i)
		}
		b.WriteString("]")
		return b.String()
	}
	var manyGroups strings.Builder
	manyGroups.WriteString("duration: 720h\ngroups:\n")
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&manyGroups, "  - {name: g%d, client_id: \"c%d-%%i\", subscribe: \"t/%d\", publish: {topic: \"t/%%i\", every: 1s}}\n", i, i, i)
	}
	long := strings.Repeat("x", 60000)
	return []struct{ name, yaml string }{
		{"half a million clients, one to one", `
duration: 720h
groups:
  - {name: sub, count: 250000, client_id: "s-%i", subscribe: "bench/%i"}
  - {name: pub, count: 250000, client_id: "p-%i", publish: {topic: "bench/%i", rate: 20000/s}}
`},
		{"half a million clients that publish and subscribe", `
duration: 720h
groups:
  - {name: both, count: 500000, client_id: "c-%i", subscribe: "bench/%i", publish: {topic: "bench/%i", every: 1s}}
`},
		{"800,000 subscriptions, distinct filters", `
duration: 1h
groups:
  - {name: sub, count: 400000, client_id: "s-%i", subscribe: ["a/%i", "b/%i/#"]}
`},
		{"past the client limit", `
duration: 1h
groups:
  - {name: sub, count: 1000000, client_id: "s-%i", subscribe: "a/%i"}
  - {name: pub, count: 1000000, client_id: "p-%i", publish: {topic: "a/%i", every: 1s}}
`},
		{"wildcard fan-out to every publisher", `
duration: 1h
groups:
  - {name: sub, count: 1000, client_id: "s-%i", subscribe: "#"}
  - {name: pub, count: 499000, client_id: "p-%i", publish: {topic: "t/%i", every: 1s}}
`},
		{"several-filter clients fan out to every publisher", `
duration: 1h
groups:
  - {name: sub, count: 1000, client_id: "s-%i", subscribe: ["#", "+/+", "t/#"]}
  - {name: pub, count: 499000, client_id: "p-%i", publish: {topic: "t/%i", every: 1s}}
`},
		{"several-filter clients matched by every topic", `
duration: 1h
groups:
  - {name: sub, count: 400, client_id: "s-%i", subscribe: ` + filters(2000, `"+/%d/#"`) + `}
  - {name: pub, count: 1000, client_id: "p-%i", publish: {topic: "t/%i/x", every: 1s}}
`},
		{"a million subscribers times twenty thousand filters", `
duration: 1h
groups:
  - {name: sub, count: 1000000, subscribe: ` + filters(20000, `"f/%d"`) + `}
`},
		{"long templates up to the text limit", `
duration: 1h
groups:
  - {name: sub, count: 500, client_id: "` + long + `%i", subscribe: "a/%c"}
`},
		{"long templates past the MQTT limit", `
duration: 1h
groups:
  - {name: sub, count: 1000000, client_id: "` + long + `%i", subscribe: "%c/%c/%c/%c/%c/%c/%c/%c/%c/%c"}
`},
		{"three thousand groups", manyGroups.String()},
		{"a year at a billion messages a second", `
duration: 8000h
warmup: 700h
groups:
  - {name: sub, count: 1000, subscribe: "#"}
  - {name: pub, count: 1000, publish: {topic: "t/%i", rate: 1000000000/s, size: 256MiB}}
`},
		{"timeline overflow", `
warmup: 2000000h
ramp: 2000000h
duration: 2000000h
drain: 2000000h
groups:
  - {name: pub, count: 1000000, connect_rate: 1/h, publish: {topic: "t", rate: 1/h, count: 2000000000}}
`},
	}
}

// budgetBytes is what loading and compiling one plan may allocate in all
// (garbage included, so the peak heap is below it whatever the GC does).
const budgetBytes = 512 << 20

// TestCompileBudget loads and compiles each adversarial plan and checks
// that it allocates less than budgetBytes: the plan either compiles
// within it or is refused before the work. Allocation, not time, is
// measured: it does not depend on how busy the machine is. The times of
// the same plans are BenchmarkCompileBudget's.
func TestCompileBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("loads plans of a million clients")
	}
	for _, tc := range budgetPlans() {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			prog, err := loadAndCompile(tc.yaml)
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			clients := 0
			if prog != nil {
				clients = len(prog.Clients)
			}
			msg := "compiled"
			if err != nil {
				msg = firstLine(err.Error())
			}
			t.Logf("%d MiB allocated, %d clients: %s", alloc>>20, clients, msg)
			if alloc > budgetBytes {
				t.Errorf("allocated %d MiB, more than the budget of %d MiB", alloc>>20, budgetBytes>>20)
			}
		})
	}
}

func loadAndCompile(yaml string) (*Program, error) {
	p, err := LoadBytes("budget.yaml", []byte(yaml), LoadOptions{LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		return nil, err
	}
	return Compile(p, CompileOptions{})
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}

// BenchmarkCompileBudget times loading and compiling each adversarial
// plan (the target: none takes more than 10 s).
func BenchmarkCompileBudget(b *testing.B) {
	for _, tc := range budgetPlans() {
		b.Run(strings.ReplaceAll(tc.name, " ", "_"), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				loadAndCompile(tc.yaml)
			}
		})
	}
}

// soakPlan is a 30-day soak at 20,000 messages a second: 200 publishers
// and subscribers one to one, 100 msg/s each.
const soakPlan = `
warmup: 1h
ramp: 1h
duration: 720h
groups:
  - {name: sub, count: 200, client_id: "s-%i", subscribe: {topic: "soak/%i", qos: 1}}
  - {name: pub, count: 200, client_id: "p-%i", publish: {topic: "soak/%i", qos: 1, rate: 20000/s, size: 1KB}}
thresholds:
  - p99 < 50ms and loss_rate == 0
`

// BenchmarkValidateSoak is what `mqplan validate` does with a 30-day plan
// at 20k msg/s (target: under 100 ms; it walked 5·10¹⁰ messages before).
func BenchmarkValidateSoak(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := loadAndCompile(soakPlan); err != nil {
			b.Fatal(err)
		}
	}
}
