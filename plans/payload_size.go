package plans

import (
	"math"
	"strconv"
)

// Header placements (publish.header): where a message carries its
// measurement header, so that a payload a rule engine parses can stay
// pure JSON.
const (
	// HeaderPrefix puts the 16 binary header bytes before the payload
	// (the default without %h).
	HeaderPrefix = "prefix"
	// HeaderProperty carries the header as an MQTT 5 user property
	// (HeaderPropertyName, HeaderHexLen hex digits), leaving the payload
	// to the template alone.
	HeaderProperty = "property"
	// HeaderField carries the header in the template's %h field (the
	// default with %h).
	HeaderField = "field"
)

// HeaderPropertyName is the user property key of header: property.
const HeaderPropertyName = "mqplan"

// SizeDist is a binary payload's size drawn per message: uniform in
// [Min, Max], or one of Choices by weight. Like template values it is a
// pure function of (seed, publisher, sequence), so the receiver knows
// the size a message must have.
type SizeDist struct {
	// Min and Max bound a uniform size (both set, Choices empty).
	Min int `json:"min,omitempty"`
	Max int `json:"max,omitempty"`
	// Choices are sizes with integer weights.
	Choices []SizeChoice `json:"choices,omitempty"`
}

// SizeChoice is one weighted size.
type SizeChoice struct {
	Size   int `json:"size"`
	Weight int `json:"weight"`
}

// sizeHole keys the size draw apart from the template's holes (1..256).
const sizeHole = 1 << 32

// Size returns message k's payload size.
func (d *SizeDist) Size(k PayloadKey) int {
	x := draw(k, sizeHole, 0)
	if len(d.Choices) == 0 {
		return d.Min + int(below(x, uint64(d.Max-d.Min)+1))
	}
	w := below(x, uint64(d.totalWeight()))
	for _, c := range d.Choices {
		if w < uint64(c.Weight) {
			return c.Size
		}
		w -= uint64(c.Weight)
	}
	return d.Choices[len(d.Choices)-1].Size
}

func (d *SizeDist) totalWeight() int64 {
	var t int64
	for _, c := range d.Choices {
		t += int64(c.Weight)
	}
	return t
}

// Bounds returns the smallest and largest size and the mean, for explain
// and for the planned bytes (messages × mean).
func (d *SizeDist) Bounds() (lo, hi int, mean float64) {
	if len(d.Choices) == 0 {
		return d.Min, d.Max, float64(d.Min+d.Max) / 2
	}
	lo, hi = d.Choices[0].Size, d.Choices[0].Size
	var sum float64
	for _, c := range d.Choices {
		lo, hi = min(lo, c.Size), max(hi, c.Size)
		sum += float64(c.Size) * float64(c.Weight)
	}
	return lo, hi, sum / float64(d.totalWeight())
}

// String describes the distribution as explain shows it.
func (d *SizeDist) String() string {
	lo, hi, mean := d.Bounds()
	kind := "uniform"
	if len(d.Choices) > 0 {
		kind = strconv.Itoa(len(d.Choices)) + " weighted sizes"
	}
	return kind + " " + strconv.Itoa(lo) + "-" + strconv.Itoa(hi) + "B, mean " + strconv.FormatFloat(mean, 'f', 0, 64) + "B"
}

// publishSize is a client's largest payload and its mean payload bytes.
// A template's mean is taken as its longest rendering: the digits of a
// sequence or a random number vary, and an exact mean would take work per
// message.
func publishSize(pub *Publish, v TemplateVars) (size int, mean float64) {
	switch {
	case pub.Payload != nil:
		size = pub.Payload.MaxLen(v)
		if pub.Header == HeaderPrefix || pub.Header == "" {
			size += HeaderSize
		}
		return size, float64(size)
	case pub.Sizes != nil:
		_, hi, m := pub.Sizes.Bounds()
		return hi, m
	}
	return pub.Size, float64(pub.Size)
}

// meanBytes is n messages of mean bytes each, rounded, saturating.
func meanBytes(n int64, mean float64) int64 {
	b := float64(n) * mean
	if b >= 1<<62 {
		return 1 << 62
	}
	return int64(math.Round(b))
}
