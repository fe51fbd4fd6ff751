package brokerstat

import "fmt"

// ByName is a reading as its counters by name (clients,
// publish_received, ...), the form files keep it in (the JSON report,
// partial results); nil when the reading holds none.
func (cs Counters) ByName() map[string]int64 {
	if !cs.Sampled() {
		return nil
	}
	out := map[string]int64{}
	for c := range NumCounters {
		if v, ok := cs.Get(c); ok {
			out[c.String()] = v
		}
	}
	return out
}

// FromNames reads a reading back from ByName's form; an unknown name or a
// negative value is refused, as no reading holds one.
func FromNames(m map[string]int64) (Counters, error) {
	var cs Counters
	for name, v := range m {
		c, ok := CounterByName(name)
		if !ok {
			return cs, fmt.Errorf("unknown counter %q", name)
		}
		if v < 0 {
			return cs, fmt.Errorf("%s is %d: must not be negative", name, v)
		}
		cs.Put(c, v)
	}
	return cs, nil
}
