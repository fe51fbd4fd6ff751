package partial

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/mqplan/mqplan/stats"
)

// Cell is one stats.Metrics as a partial carries it: every raw counter by
// its Go field name (ReqResp's prefixed "ReqResp."), zeros left out, and
// every histogram encoded (encodeHist). The derived figures (Lost,
// LostOwn, ReqResp.Timeouts) are never written: a shard's own Lost means
// nothing when its publishers' subscribers live elsewhere, so the merge
// recomputes them once, from the summed counters (stats.FinishPhases).
//
// The fields are found by reflection, so that a counter added to
// stats.Metrics is carried without a change here (TestCellCarriesEveryField
// checks it): a hand-kept list would drop a new counter silently.
type Cell struct {
	Counters map[string]int64  `json:"counters,omitempty"`
	Hist     map[string]string `json:"hist,omitempty"`
}

// derived are the fields FinishPhases computes, never carried.
var derived = []string{"Lost", "LostOwn", "ReqResp.Timeouts"}

var (
	histType = reflect.TypeFor[*hdrhistogram.Histogram]()
)

// metricField is one carried field of stats.Metrics: its name and index
// path, and whether it is a histogram.
type metricField struct {
	name  string
	index []int
	hist  bool
}

// metricFields lists stats.Metrics' carried fields (int64, Duration and
// histogram fields, ReqResp's included), in declaration order.
var metricFields, fieldByName = func() ([]metricField, map[string]int) {
	var out []metricField
	var walk func(t reflect.Type, prefix string, index []int)
	walk = func(t reflect.Type, prefix string, index []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			idx := append(slices.Clone(index), i)
			name := prefix + f.Name
			switch {
			case f.Type == histType:
				out = append(out, metricField{name: name, index: idx, hist: true})
			case f.Type.Kind() == reflect.Struct:
				walk(f.Type, name+".", idx)
			case f.Type.Kind() == reflect.Int64 && !slices.Contains(derived, name):
				out = append(out, metricField{name: name, index: idx})
			case f.Type.Kind() == reflect.Int64:
			default:
				panic(fmt.Sprintf("partial: stats.Metrics.%s is a %s: teach Cell to carry it", name, f.Type))
			}
		}
	}
	walk(reflect.TypeFor[stats.Metrics](), "", nil)
	by := make(map[string]int, len(out))
	for i, f := range out {
		by[f.name] = i
	}
	return out, by
}()

// cellOf encodes m; nil when m holds nothing (most cells of a run).
func cellOf(m *stats.Metrics) (*Cell, error) {
	v := reflect.ValueOf(m).Elem()
	var c Cell
	for _, f := range metricFields {
		fv := v.FieldByIndex(f.index)
		if f.hist {
			s, err := encodeHist(fv.Interface().(*hdrhistogram.Histogram))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.name, err)
			}
			if s != "" {
				if c.Hist == nil {
					c.Hist = map[string]string{}
				}
				c.Hist[f.name] = s
			}
			continue
		}
		if n := fv.Int(); n != 0 {
			if c.Counters == nil {
				c.Counters = map[string]int64{}
			}
			c.Counters[f.name] = n
		}
	}
	if c.Counters == nil && c.Hist == nil {
		return nil, nil
	}
	return &c, nil
}

// metrics decodes c (nil is an empty Metrics). A field this mqplan does
// not know is an error: a newer mqplan wrote the file, and dropping the
// counter would change the figures without a word.
func (c *Cell) metrics() (stats.Metrics, error) {
	var m stats.Metrics
	if c == nil {
		return m, nil
	}
	v := reflect.ValueOf(&m).Elem()
	for name, n := range c.Counters {
		i, ok := fieldByName[name]
		if !ok || metricFields[i].hist {
			return m, fmt.Errorf("unknown counter %q (written by a newer mqplan?)", name)
		}
		v.FieldByIndex(metricFields[i].index).SetInt(n)
	}
	for name, s := range c.Hist {
		i, ok := fieldByName[name]
		if !ok || !metricFields[i].hist {
			return m, fmt.Errorf("unknown histogram %q (written by a newer mqplan?)", name)
		}
		h, err := decodeHist(s)
		if err != nil {
			return m, fmt.Errorf("%s: %w", name, err)
		}
		v.FieldByIndex(metricFields[i].index).Set(reflect.ValueOf(h))
	}
	return m, nil
}
