package report

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/mqplan/mqplan/metric"
)

// FindMax is the outcome of mqplan find-max: every trial run, the knee
// the short trials found, and the answer with its confirmation. Like
// Result, it is a plain value the command fills and the writers only
// read; it is built from each trial's Result (FindMaxTrialOf), so the
// figures are those a plain run of the plan at that value reports.
type FindMax struct {
	// Plan is the plan's name; File the file it was read from.
	Plan, File string
	// BrokerURL is where the trials connected ("embedded" when each had
	// its own in-process broker).
	BrokerURL string
	// MqplanVersion is the mqplan that searched, as Result.MqplanVersion;
	// "" when not known, and then not shown.
	MqplanVersion string
	// Label is --label (Result.Label): shown after the plan's name, ""
	// when not given.
	Label string
	// Knob is the value searched (groups.pub.rate) and Unit what it counts.
	Knob, Unit string
	// From is the first value tried; Precision the relative width the
	// bisection stopped at.
	From, Precision float64
	// TrialDuration and ConfirmDuration are the measured (steady) length
	// of a trial and of a confirmation.
	TrialDuration, ConfirmDuration time.Duration
	Started                        time.Time
	Elapsed                        time.Duration
	Trials                         []FindMaxTrial
	// LastPass and FirstFail are the knee (nil when there is none).
	LastPass, FirstFail *float64
	// Status is "confirmed", "no value passes" or "incomplete"; Reason
	// says why when it is not confirmed.
	Status, Reason string
	// Answer is the confirmed value (nil unless Status is confirmed).
	Answer *float64
	// AtMax: the answer is the --max limit and nothing failed up to it.
	AtMax bool
	// Max is the highest value the search could try.
	Max float64
	// Unstable: a trial contradicted an earlier one (a failure at or
	// below a value that passed, as a confirmation failing where its
	// short trial passed); the trials concerned carry a Note.
	Unstable bool
	// ConfirmFailed is the lowest value whose confirmation failed (nil
	// when none did): a longer run does not hold there.
	ConfirmFailed *float64
	// Warnings are what the user must know before reading the answer,
	// said before the first trial too: thresholds with fixed bounds on
	// figures that grow with the knob (plans.Knob.FixedBounds).
	Warnings []string
}

// FindMax statuses, as the command decides its exit code from them.
const (
	FindMaxConfirmed  = "confirmed"
	FindMaxNoPass     = "no value passes"
	FindMaxIncomplete = "incomplete"
)

// VerdictUnhealthy is a find-max trial whose run completed but was not
// healthy (TrialHealth): its thresholds say nothing about the knob.
const VerdictUnhealthy = "UNHEALTHY"

// FindMaxTrial is one trial: a run of the plan at one value of the knob.
type FindMaxTrial struct {
	N       int
	Value   float64
	Confirm bool
	// Verdict is the run's: PASS, FAIL or INCOMPLETE, or UNHEALTHY when
	// TrialHealth found it could not be read as a capacity signal.
	Verdict string
	// Unhealthy are TrialHealth's reasons, for an UNHEALTHY trial.
	Unhealthy []string
	// Note is what the search said of the trial: that it contradicts an
	// earlier one (unstable), or that it was not a capacity signal.
	Note string
	// SendRate is the send rate achieved (of the knob's group when it
	// publishes, else of the whole run); P50 and P99 the end-to-end
	// latency; LossRate lost/expected. A figure the run did not measure
	// is nil.
	SendRate, LossRate *float64
	P50, P99           *time.Duration
	// Failed are the thresholds that failed, as written, each with why.
	Failed []string
	// Elapsed is the trial's wall time.
	Elapsed time.Duration
}

// FindMaxTrialOf summarises one trial's Result. group is the knob's
// group, whose send rate is the one the trial achieved when it publishes
// ("" for the whole run's).
func FindMaxTrialOf(n int, value float64, confirm bool, r *Result, group string, elapsed time.Duration) FindMaxTrial {
	t := FindMaxTrial{N: n, Value: value, Confirm: confirm, Verdict: r.Verdict(), Elapsed: elapsed}
	m := r.Measured
	rates := m.Top
	if gs, ok := m.Groups[group]; ok && group != "" {
		if _, ok := gs[metric.SendRate]; ok {
			rates = gs
		}
	}
	if v, ok := rates[metric.SendRate].(float64); ok {
		t.SendRate = &v
	}
	if v, ok := m.Top[metric.LossRate].(float64); ok {
		t.LossRate = &v
	}
	if v, ok := m.Top[metric.LatencyP50].(time.Duration); ok {
		t.P50 = &v
	}
	if v, ok := m.Top[metric.LatencyP99].(time.Duration); ok {
		t.P99 = &v
	}
	for _, th := range r.Thresholds {
		if th.Pass {
			continue
		}
		s := th.Expr
		if v := measuredValues(th.Values); v != "" {
			s += " (" + v + ")"
		} else if th.Reason != "" {
			s += " (" + th.Reason + ")"
		}
		t.Failed = append(t.Failed, s)
	}
	if !r.Complete() {
		t.Failed = append(t.Failed, "incomplete: "+r.incompleteReasons())
		return t
	}
	if t.Unhealthy = TrialHealth(r); len(t.Unhealthy) > 0 {
		t.Verdict = VerdictUnhealthy
	}
	return t
}

// cells is what the table's last column shows of a trial: the search's
// note, why it was unhealthy, the thresholds that failed.
func (t *FindMaxTrial) cells() []string {
	var out []string
	if t.Note != "" {
		out = append(out, t.Note)
	}
	for _, u := range t.Unhealthy {
		out = append(out, "unhealthy: "+u)
	}
	return append(out, t.Failed...)
}

// fmtKnob formats a knob value: whole numbers as such, others with four
// significant digits.
func fmtKnob(v float64) string { return fmtFloat(v) }

func fmOptRate(p *float64) string {
	if p == nil {
		return absent
	}
	return fmtRate(*p)
}

func fmOptPercent(p *float64) string {
	if p == nil {
		return absent
	}
	return fmtPercent(*p)
}

func fmOptDuration(p *time.Duration) string {
	if p == nil {
		return absent
	}
	return fmtDuration(*p)
}

// Summary is the one line that ends the find-max table.
func (f *FindMax) Summary() string {
	switch f.Status {
	case FindMaxConfirmed:
		s := fmt.Sprintf("ANSWER: %s = %s %s, confirmed by a %s run", f.Knob, fmtKnob(*f.Answer), f.Unit, fmtDuration(f.ConfirmDuration))
		if f.AtMax {
			s += fmt.Sprintf(" (the limit --max %s: nothing failed up to it, so the real maximum may be higher)", fmtKnob(f.Max))
		}
		if f.Unstable {
			s += "; UNSTABLE: " + f.unstable()
		}
		return s
	case FindMaxNoPass:
		return fmt.Sprintf("NO ANSWER: no value of %s passes: %s", f.Knob, f.Reason)
	}
	s := fmt.Sprintf("INCOMPLETE: %s", f.Reason)
	switch {
	case f.LastPass != nil && f.FirstFail != nil:
		s += fmt.Sprintf("; the maximum is between %s and %s %s (not confirmed)", fmtKnob(*f.LastPass), fmtKnob(*f.FirstFail), f.Unit)
	case f.LastPass != nil:
		s += fmt.Sprintf("; %s %s passed (not confirmed), nothing failed yet", fmtKnob(*f.LastPass), f.Unit)
	case f.FirstFail != nil:
		s += fmt.Sprintf("; %s %s failed, nothing passed yet", fmtKnob(*f.FirstFail), f.Unit)
	}
	if f.ConfirmFailed != nil {
		s += fmt.Sprintf("; but the confirmation at %s %s failed: a longer run holds below it, if at all", fmtKnob(*f.ConfirmFailed), f.Unit)
	} else if f.Unstable {
		s += "; UNSTABLE: " + f.unstable()
	}
	return s
}

// unstable says which trials contradicted earlier ones.
func (f *FindMax) unstable() string {
	var ns []string
	for _, t := range f.Trials {
		if strings.HasPrefix(t.Note, "unstable") {
			ns = append(ns, itoa(t.N))
		}
	}
	s := "a trial failed at or below a value that had passed"
	if len(ns) > 0 {
		s = fmt.Sprintf("%s %s failed at or below a value that had passed", pluralWord(len(ns), "trial", "trials"), strings.Join(ns, ", "))
	}
	if f.ConfirmFailed != nil {
		s += fmt.Sprintf(" (the confirmation at %s %s failed where the short trial passed: the load holds for a short run, not a longer one)", fmtKnob(*f.ConfirmFailed), f.Unit)
	}
	return s
}

// knee describes the last passing and first failing short trials.
func (f *FindMax) knee() string {
	pass, fail := absent, absent
	if f.LastPass != nil {
		pass = fmtKnob(*f.LastPass) + " " + f.Unit
	}
	if f.FirstFail != nil {
		fail = fmtKnob(*f.FirstFail) + " " + f.Unit
	}
	return "last pass " + pass + ", first fail " + fail
}

// titled is the plan's name with the label after it in brackets, as
// Result.titled.
func (f *FindMax) titled() string {
	if f.Label == "" {
		return f.Plan
	}
	return f.Plan + " [" + f.Label + "]"
}

// WriteFindMaxTable writes the trials as a table, the knee and the
// answer, for the terminal.
func WriteFindMaxTable(w io.Writer, f *FindMax) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "mqplan find-max %s: %s on %s\n", f.titled(), f.Knob, redactURL(f.BrokerURL))
	fmt.Fprintf(&b, "trials of %s measured, confirmation %s, precision %s\n", fmtDuration(f.TrialDuration), fmtDuration(f.ConfirmDuration), fmtPercent(f.Precision))
	if f.MqplanVersion != "" {
		fmt.Fprintf(&b, "made by mqplan %s\n", f.MqplanVersion)
	}
	b.WriteByte('\n')
	for _, w := range f.Warnings {
		fmt.Fprintf(&b, "WARNING: %s\n", w)
	}
	if len(f.Warnings) > 0 {
		b.WriteByte('\n')
	}
	t := newTable(&b, "trial", f.Knob+" ("+f.Unit+")", "sent/s", "p50", "p99", "loss", "verdict", "failed")
	t.aligns[len(t.aligns)-1] = alignLeft
	t.aligns[len(t.aligns)-2] = alignLeft
	var rows [][]string
	for _, tr := range f.Trials {
		n := itoa(tr.N)
		if tr.Confirm {
			n += " confirm"
		}
		rows = append(rows, []string{n, fmtKnob(tr.Value), fmOptRate(tr.SendRate), fmOptDuration(tr.P50), fmOptDuration(tr.P99),
			fmOptPercent(tr.LossRate), tr.Verdict, strings.Join(tr.cells(), "\n")})
	}
	if err := render(t, rows); err != nil {
		return err
	}
	fmt.Fprintf(&b, "\nknee: %s\n%s\n", f.knee(), f.Summary())
	_, err := io.WriteString(w, TerminalSafe(b.String(), "\n\t"))
	return err
}

// findMaxJSON is the JSON document of a FindMax: durations in
// seconds, absent figures null.
type findMaxJSON struct {
	Plan           string             `json:"plan"`
	MqplanVersion  string             `json:"mqplan_version,omitempty"`
	Label          string             `json:"label,omitempty"`
	File           string             `json:"file,omitempty"`
	Broker         string             `json:"broker"`
	Knob           string             `json:"knob"`
	Unit           string             `json:"unit"`
	From           float64            `json:"from"`
	Max            float64            `json:"max"`
	Precision      float64            `json:"precision"`
	TrialSeconds   float64            `json:"trial_seconds"`
	ConfirmSeconds float64            `json:"confirm_seconds"`
	Started        string             `json:"started,omitempty"`
	ElapsedSeconds float64            `json:"elapsed_seconds"`
	Status         string             `json:"status"`
	Reason         string             `json:"reason,omitempty"`
	Answer         *float64           `json:"answer"`
	AtMax          bool               `json:"at_max,omitempty"`
	LastPass       *float64           `json:"last_pass"`
	FirstFail      *float64           `json:"first_fail"`
	Unstable       bool               `json:"unstable,omitempty"`
	ConfirmFailed  *float64           `json:"confirm_failed,omitempty"`
	Warnings       []string           `json:"warnings,omitempty"`
	Summary        string             `json:"summary"`
	Trials         []findMaxTrialJSON `json:"trials"`
}

type findMaxTrialJSON struct {
	N              int      `json:"n"`
	Value          float64  `json:"value"`
	Confirm        bool     `json:"confirm,omitempty"`
	Verdict        string   `json:"verdict"`
	SendRate       *float64 `json:"send_rate"`
	P50Seconds     *float64 `json:"p50_seconds"`
	P99Seconds     *float64 `json:"p99_seconds"`
	LossRate       *float64 `json:"loss_rate"`
	Failed         []string `json:"failed,omitempty"`
	Unhealthy      []string `json:"unhealthy,omitempty"`
	Note           string   `json:"note,omitempty"`
	ElapsedSeconds float64  `json:"elapsed_seconds"`
}

func secondsOf(d *time.Duration) *float64 {
	if d == nil {
		return nil
	}
	s := d.Seconds()
	return &s
}

func (f *FindMax) dto() findMaxJSON {
	d := findMaxJSON{Plan: f.Plan, MqplanVersion: f.MqplanVersion, Label: f.Label, File: f.File, Broker: redactURL(f.BrokerURL), Knob: f.Knob, Unit: f.Unit, From: f.From, Max: f.Max,
		Precision: f.Precision, TrialSeconds: f.TrialDuration.Seconds(), ConfirmSeconds: f.ConfirmDuration.Seconds(),
		ElapsedSeconds: f.Elapsed.Seconds(), Status: f.Status, Reason: f.Reason, Answer: f.Answer, AtMax: f.AtMax,
		LastPass: f.LastPass, FirstFail: f.FirstFail, Unstable: f.Unstable, ConfirmFailed: f.ConfirmFailed, Warnings: f.Warnings,
		Summary: f.Summary(), Trials: []findMaxTrialJSON{}}
	if !f.Started.IsZero() {
		d.Started = f.Started.UTC().Format(time.RFC3339)
	}
	for _, t := range f.Trials {
		d.Trials = append(d.Trials, findMaxTrialJSON{N: t.N, Value: t.Value, Confirm: t.Confirm, Verdict: t.Verdict,
			SendRate: finite(t.SendRate), P50Seconds: secondsOf(t.P50), P99Seconds: secondsOf(t.P99), LossRate: finite(t.LossRate),
			Failed: t.Failed, Unhealthy: t.Unhealthy, Note: t.Note, ElapsedSeconds: t.Elapsed.Seconds()})
	}
	return d
}

// finite drops a NaN or infinite figure, which JSON cannot carry.
func finite(p *float64) *float64 {
	if p == nil || math.IsNaN(*p) || math.IsInf(*p, 0) {
		return nil
	}
	return p
}

// WriteFindMaxJSON writes the search as JSON, for scripts.
func WriteFindMaxJSON(w io.Writer, f *FindMax) error {
	b, err := json.MarshalIndent(f.dto(), "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

var (
	//go:embed assets/findmax.tmpl
	findMaxTemplateText string
	//go:embed assets/findmax.js
	findMaxJS string
)

var findMaxTemplate = template.Must(template.New("findmax").Parse(findMaxTemplateText))

// findMaxView is what the find-max page template reads.
type findMaxView struct {
	Title, Summary, StatusClass, Knee, Meta string
	Head                                    []string
	Rows                                    [][]string
	Data                                    findMaxJSON
	UPlotJS, PageJS                         template.JS
	UPlotCSS, PageCSS                       template.CSS
	UPlotLicense                            string
}

// madeBy is " · made by mqplan VERSION" for a page's meta line, "" when
// the version is not known.
func madeBy(version string) string {
	if version == "" {
		return ""
	}
	return " · made by mqplan " + version
}

// WriteFindMaxHTML writes the search as one self-contained page: the
// answer, a chart of the trials (value against achieved send rate and
// p99, passes and failures marked) and the table. Like WriteHTML it
// fetches nothing (uPlot is inline) and its Content-Security-Policy
// allows no network; the chart's element gets data-drawn="true" once
// drawn, and the body data-errors with the script errors seen.
func WriteFindMaxHTML(w io.Writer, f *FindMax) error {
	v := findMaxView{Title: f.titled() + " · " + f.Knob, Summary: f.Summary(), Knee: f.knee(), StatusClass: "fail",
		Meta: fmt.Sprintf("broker %s · trials of %s, confirmation %s, precision %s · %s", redactURL(f.BrokerURL),
			fmtDuration(f.TrialDuration), fmtDuration(f.ConfirmDuration), fmtPercent(f.Precision), fmtDuration(f.Elapsed)) + madeBy(f.MqplanVersion),
		Head: []string{"trial", f.Knob + " (" + f.Unit + ")", "sent/s", "p50", "p99", "loss", "verdict", "failed"},
		Data: f.dto(), UPlotJS: template.JS(uplotJS), PageJS: template.JS(findMaxJS),
		UPlotCSS: template.CSS(uplotCSS), PageCSS: template.CSS(pageCSS), UPlotLicense: uplotLicense}
	switch f.Status {
	case FindMaxConfirmed:
		v.StatusClass = "pass"
	case FindMaxIncomplete:
		v.StatusClass = "incomplete"
	}
	for _, t := range f.Trials {
		n := strconv.Itoa(t.N)
		if t.Confirm {
			n += " confirm"
		}
		v.Rows = append(v.Rows, []string{n, fmtKnob(t.Value), fmOptRate(t.SendRate), fmOptDuration(t.P50), fmOptDuration(t.P99),
			fmOptPercent(t.LossRate), t.Verdict, strings.Join(t.cells(), "; ")})
	}
	var b bytes.Buffer
	if err := findMaxTemplate.Execute(&b, v); err != nil {
		return fmt.Errorf("rendering the find-max page: %w", err)
	}
	_, err := io.WriteString(w, TerminalSafe(b.String(), "\n\t"))
	return err
}
