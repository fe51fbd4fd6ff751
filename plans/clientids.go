package plans

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// idDecl is a group's explicit client_id, where the plan writes it.
type idDecl struct {
	group int // index in the plan's groups
	pos   Pos
	path  string
	shape idShape
}

// idShape is a client id template with %u replaced by the user name
// template: literal text and %i (the only value that varies) in order.
// lits has one more element than the number of %i: lits[0] %i lits[1] ...
type idShape struct {
	lits []string
}

// key identifies the shape: templates with equal keys give equal ids for
// equal client numbers, and different ids for different ones (the digits
// of %i sit at the same places for numbers of the same length, and a
// longer number makes a longer id).
func (s idShape) key() string { return strings.Join(s.lits, "\x00") } // NUL cannot occur: control characters are refused

func (s idShape) varies() bool { return len(s.lits) > 1 }

func (s idShape) expand(n int) string {
	var b strings.Builder
	d := strconv.Itoa(n)
	for i, l := range s.lits {
		if i > 0 {
			b.WriteString(d)
		}
		b.WriteString(l)
	}
	return b.String()
}

// number returns the client number n for which the shape expands to id,
// if there is one.
func (s idShape) number(id string) (int, bool) {
	k := len(s.lits) - 1
	fixed := 0
	for _, l := range s.lits {
		fixed += len(l)
	}
	if k == 0 {
		return 0, id == s.lits[0]
	}
	if len(id) < fixed || (len(id)-fixed)%k != 0 {
		return 0, false
	}
	w := (len(id) - fixed) / k
	if !strings.HasPrefix(id, s.lits[0]) || w == 0 || w > maxDigits {
		return 0, false
	}
	d := id[len(s.lits[0]) : len(s.lits[0])+w]
	n, err := strconv.Atoi(d)
	if err != nil || n < 0 || strconv.Itoa(n) != d {
		return 0, false
	}
	return n, s.expand(n) == id
}

// idShapeOf builds the shape of a group's client id; ok is false when the
// id uses %u without a user name (reported elsewhere).
func idShapeOf(g *Group) (idShape, bool) {
	s := idShape{lits: []string{""}}
	var add func(t Template) bool
	add = func(t Template) bool {
		for _, p := range t.parts {
			switch p.verb {
			case 0:
				s.lits[len(s.lits)-1] += p.lit
			case 'i':
				s.lits = append(s.lits, "")
			case 'u':
				if g.Username.IsZero() {
					return false
				}
				if !add(g.Username) {
					return false
				}
			default:
				return false
			}
		}
		return true
	}
	return s, add(g.ClientID)
}

// maxIDChecks bounds the pairs of templates compared, and the ids
// expanded to compare groups whose client id templates differ but could
// still give the same id ("a-1%i" and "a-%i" both give a-12): far more
// than a plan's clients, so it only cuts the check short (it is best
// effort past it) for a plan with thousands of distinct templates.
const maxIDChecks = 2_000_000

// checkClientIDs reports client ids that the plan makes collide: a fixed
// client_id in a group of several clients, and two groups (or one group
// twice) giving the same id. A broker keeps one connection per client id,
// so colliding clients would take each other's sessions over all run
// long. Both places are named. Default ids are unique per run and group.
// Ids are compared by template and range, not expanded, except for groups
// whose different templates could still meet.
func (l *loader) checkClientIDs(groups []Group) {
	where := func(d idDecl) string {
		if d.pos.Line == 0 {
			return d.path
		}
		return fmt.Sprintf("%s at %s", d.path, d.pos)
	}
	byShape := map[string][]idDecl{}
	var shapes []string
	for _, d := range l.ids {
		g := &groups[d.group]
		if !d.shape.varies() && g.Count > 1 {
			l.errs = append(l.errs, &Error{Pos: d.pos, Path: d.path, Msg: fmt.Sprintf(
				"%q is the same for all %d clients of the group: a broker keeps one connection per client id; add %%i", d.shape.lits[0], g.Count)})
		}
		k := d.shape.key()
		if _, ok := byShape[k]; !ok {
			shapes = append(shapes, k)
		}
		byShape[k] = append(byShape[k], d)
	}
	reported := map[[2]int]bool{}
	report := func(a, b idDecl, id string) {
		if reported[[2]int{a.group, b.group}] {
			return
		}
		reported[[2]int{a.group, b.group}] = true
		l.errs = append(l.errs, &Error{Pos: b.pos, Path: b.path, Msg: fmt.Sprintf(
			"gives the client id %q, which %s gives too: a broker keeps one connection per client id; use another prefix or start", id, where(a))})
	}
	// The same shape: ids meet exactly where the number ranges overlap.
	for _, k := range shapes {
		ds := append([]idDecl(nil), byShape[k]...) // reordered and overwritten below
		sort.SliceStable(ds, func(i, j int) bool { return groups[ds[i].group].Start < groups[ds[j].group].Start })
		for i := 1; i < len(ds); i++ {
			prev, cur := ds[i-1], ds[i]
			pg, cg := &groups[prev.group], &groups[cur.group]
			if cg.Start <= pg.Start+pg.Count-1 {
				first, second := prev, cur
				if first.group > second.group {
					first, second = second, first
				}
				report(first, second, cur.shape.expand(cg.Start))
			}
			if pg.Start+pg.Count > cg.Start+cg.Count { // keep the longer range for the next comparison
				ds[i] = prev
			}
		}
	}
	// Different shapes can meet only where one's literal prefix starts the
	// other's, and likewise for the suffixes; those pairs are checked by
	// expanding the smaller group and parsing its ids with the other shape.
	budget := maxIDChecks
	for i := 0; i < len(shapes) && budget > 0; i++ {
		for j := i + 1; j < len(shapes) && budget > 0; j++ {
			budget-- // a plan of many distinct templates costs pairs, not ids
			a, b := byShape[shapes[i]], byShape[shapes[j]]
			sa, sb := a[0].shape, b[0].shape
			if !compatible(sa.lits[0], sb.lits[0], strings.HasPrefix) ||
				!compatible(sa.lits[len(sa.lits)-1], sb.lits[len(sb.lits)-1], strings.HasSuffix) {
				continue
			}
			for _, da := range a {
				for _, db := range b {
					budget -= l.meet(groups, da, db, report, budget)
				}
			}
		}
	}
}

// compatible reports whether one of a and b starts (or ends) the other.
func compatible(a, b string, has func(s, affix string) bool) bool {
	return has(a, b) || has(b, a)
}

// meet expands the smaller of two groups with different id shapes and
// looks for an id the other gives; it returns the ids it expanded.
func (l *loader) meet(groups []Group, a, b idDecl, report func(a, b idDecl, id string), budget int) int {
	ga, gb := &groups[a.group], &groups[b.group]
	small, other, gs, gother := a, b, ga, gb
	if ga.Count > gb.Count {
		small, other, gs, gother = b, a, gb, ga
	}
	n := min(gs.Count, budget)
	for k := 0; k < n; k++ {
		id := small.shape.expand(gs.Start + k)
		if m, ok := other.shape.number(id); ok && m >= gother.Start && m < gother.Start+gother.Count {
			first, second := a, b
			if first.group > second.group {
				first, second = second, first
			}
			report(first, second, id)
			break
		}
	}
	return n
}
