package report

import (
	"bytes"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mqplan/mqplan/threshold"
)

// jenkinsXSD is Jenkins' JUnit schema (see testdata/junit/README.md).
const jenkinsXSD = "../testdata/junit/jenkins-junit.xsd"

// xmllint is the schema validator, or "" (the test skips) when
// libxml2-utils is not installed; in CI (CI set) it must be: .ci/run
// installs it.
func xmllint(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("xmllint")
	if err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatal("xmllint is not installed, but CI must validate the JUnit reports: .ci/run installs libxml2-utils")
	}
	t.Skip("xmllint is not installed (apt-get install libxml2-utils); skipping the JUnit schema validation")
	return ""
}

// junitCases are the golden runs plus the shapes that stress the XML: a
// run without a plan or a start, names with markup and control characters,
// a threshold written twice.
func junitCases(t *testing.T) []struct {
	name string
	r    *Result
} {
	cases := goldenCases(t)
	odd := testPlan("p99 < 10ms", "p99 < 10ms", `groups["a<b>&\"c"].sent > 0`)
	odd.Name = `x<y>&"z]]>` + "\x01\x7f"
	odd.Groups[0].Name = `a<b>&"c`
	st := fullStats(t)
	st.Groups[0].Name = odd.Groups[0].Name
	st.ErrorSamples = []string{"bad \x00 byte ]]> and <tag>"}
	labelled := Evaluate(odd, withBuiltins(t, odd), fullStats(t))
	labelled.Label, labelled.Hostname = `emqx <5.8> & "x"`, "ci-runner-3"
	cases = append(cases,
		struct {
			name string
			r    *Result
		}{"odd names", Evaluate(odd, withBuiltins(t, odd), st)},
		struct {
			name string
			r    *Result
		}{"labelled", labelled},
		struct {
			name string
			r    *Result
		}{"no plan", Evaluate(nil, nil, nil)},
	)
	return cases
}

// TestJUnitSchema validates each report against Jenkins' JUnit schema with
// a real validator.
func TestJUnitSchema(t *testing.T) {
	bin := xmllint(t)
	dir := t.TempDir()
	for i, tc := range junitCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteJUnit(&b, tc.r); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, strconv.Itoa(i)+".xml")
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(bin, "--noout", "--schema", jenkinsXSD, path).CombinedOutput()
			if err != nil {
				t.Fatalf("xmllint --schema %s: %v\n%s\n%s", jenkinsXSD, err, out, b.Bytes())
			}
			if !strings.Contains(string(out), "validates") {
				t.Fatalf("xmllint did not say the report validates:\n%s", out)
			}
		})
	}
}

// TestJUnitSchemaRejects shows that the validation can fail: documents
// that break the schema's structure are refused.
func TestJUnitSchemaRejects(t *testing.T) {
	bin := xmllint(t)
	tests := []struct{ name, doc string }{
		{"testcase without a name", `<testsuites><testsuite name="s" tests="1"><testcase/></testsuite></testsuites>`},
		{"suite without tests", `<testsuites><testsuite name="s"></testsuite></testsuites>`},
		{"properties after the test cases", `<testsuite name="s" tests="1"><testcase name="c"/><properties><property name="a" value="b"/></properties></testsuite>`},
		{"failure before error", `<testsuite name="s" tests="1"><testcase name="c"><failure/><error/></testcase></testsuite>`},
		{"unknown element", `<testsuite name="s" tests="1"><verdict/></testsuite>`},
	}
	dir := t.TempDir()
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strconv.Itoa(i)+".xml")
			if err := os.WriteFile(path, []byte(tt.doc), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(bin, "--noout", "--schema", jenkinsXSD, path).CombinedOutput()
			if err == nil {
				t.Fatalf("xmllint accepted it:\n%s", out)
			}
		})
	}
}

// parsedJUnit is the report read back, with every attribute a CI server
// reads.
type parsedJUnit struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    string   `xml:"tests,attr"`
	Failures string   `xml:"failures,attr"`
	Errors   string   `xml:"errors,attr"`
	Time     string   `xml:"time,attr"`
	Suites   []struct {
		Name       string `xml:"name,attr"`
		Tests      string `xml:"tests,attr"`
		Failures   string `xml:"failures,attr"`
		Errors     string `xml:"errors,attr"`
		Skipped    string `xml:"skipped,attr"`
		Time       string `xml:"time,attr"`
		Timestamp  string `xml:"timestamp,attr"`
		Hostname   string `xml:"hostname,attr"`
		Properties []struct {
			Name  string `xml:"name,attr"`
			Value string `xml:"value,attr"`
		} `xml:"properties>property"`
		Cases []struct {
			Name      string `xml:"name,attr"`
			Classname string `xml:"classname,attr"`
			Time      string `xml:"time,attr"`
			Failure   *struct {
				Message string `xml:"message,attr"`
				Type    string `xml:"type,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
			Error *struct {
				Message string `xml:"message,attr"`
				Type    string `xml:"type,attr"`
			} `xml:"error"`
			SystemOut string `xml:"system-out"`
		} `xml:"testcase"`
		SystemOut string `xml:"system-out"`
	} `xml:"testsuite"`
}

// TestJUnitStructure checks what the schema leaves as strings: the counts
// agree with the test cases, times are seconds, the timestamp is ISO 8601,
// every threshold is a test case named by its expression, a failed one has
// a failure with its measured values, and only an incomplete run has an
// error.
func TestJUnitStructure(t *testing.T) {
	seconds := regexp.MustCompile(`^[0-9]+\.[0-9]{3}$`)
	for _, tc := range junitCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteJUnit(&b, tc.r); err != nil {
				t.Fatal(err)
			}
			var doc parsedJUnit
			if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
				t.Fatalf("the report does not parse: %v\n%s", err, b.Bytes())
			}
			if len(doc.Suites) != 1 {
				t.Fatalf("%d test suites, want one per run", len(doc.Suites))
			}
			s := doc.Suites[0]
			r := tc.r
			if want := 1 + len(r.Thresholds); len(s.Cases) != want || s.Tests != strconv.Itoa(want) || doc.Tests != s.Tests {
				t.Errorf("%d test cases, tests=%s (root %s), want %d: the run and each threshold", len(s.Cases), s.Tests, doc.Tests, want)
			}
			for _, tm := range []string{doc.Time, s.Time} {
				if !seconds.MatchString(tm) {
					t.Errorf("time %q is not seconds with milliseconds", tm)
				}
			}
			if s.Time != junitSeconds(r.Elapsed) {
				t.Errorf("suite time %s, want the run's %s", s.Time, junitSeconds(r.Elapsed))
			}
			if !r.Started.IsZero() && !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$`).MatchString(s.Timestamp) {
				t.Errorf("timestamp %q is not ISO 8601 as Ant and Jenkins write it", s.Timestamp)
			}
			props := map[string]string{}
			for _, p := range s.Properties {
				props[p.Name] = p.Value
			}
			for _, name := range []string{"plan", "plan_file", "broker", "timestamp", "verdict", "summary"} {
				if props[name] == "" {
					t.Errorf("property %s missing or empty: %v", name, props)
				}
			}
			if props["verdict"] != r.Verdict() {
				t.Errorf("verdict property %q, want %q", props["verdict"], r.Verdict())
			}
			// With a baseline, the properties name it; without, none does.
			if c := r.Comparison; c != nil {
				if props["baseline"] != c.A.Label || props["baseline_plan"] != c.A.Plan || props["baseline_comparison"] != c.Summary() ||
					props["baseline_started"] != rfc3339(c.A.Started) {
					t.Errorf("baseline properties %v, want the baseline %s, its plan, start and the comparison's summary", props, c.A.Label)
				}
			} else if _, ok := props["baseline"]; ok {
				t.Errorf("a baseline property without a baseline: %v", props)
			}

			run := s.Cases[0]
			checkJUnitValues(t, run.Name, run.SystemOut, props, r.headlineValues())
			if s.Hostname != r.Hostname {
				t.Errorf("hostname %q, want %q", s.Hostname, r.Hostname)
			}
			if want := "mqplan " + r.titled(); s.Name != oneLineXML(want) {
				t.Errorf("suite name %q, want %q", s.Name, want)
			}
			if r.Label != "" && props["label"] != r.Label {
				t.Errorf("label property %q, want %q", props["label"], r.Label)
			}
			for _, c := range s.Cases {
				if r.Label != "" && (!strings.HasPrefix(c.Name, "["+r.Label+"] ") || !strings.Contains(c.Classname, "."+r.Label+".")) {
					t.Errorf("test case %q (class %s) does not carry the label %q", c.Name, c.Classname, r.Label)
				}
			}
			if strings.TrimPrefix(run.Name, "["+r.Label+"] ") != "run completed" || !seconds.MatchString(run.Time) {
				t.Errorf("first test case %q (time %q), want the run's completion", run.Name, run.Time)
			}
			if (run.Error != nil) != !r.Complete() {
				t.Errorf("run has an error: %v, want it exactly when the run is incomplete (%v)", run.Error != nil, !r.Complete())
			}
			if run.Error != nil && (run.Error.Type != "incomplete" || run.Error.Message == "") {
				t.Errorf("run error %+v, want type incomplete with the reason", *run.Error)
			}
			names := map[string]bool{}
			failures, errors := 0, 0
			for i, c := range s.Cases {
				if names[c.Name] {
					t.Errorf("test case name %q repeats: a CI server would merge them", c.Name)
				}
				names[c.Name] = true
				if !seconds.MatchString(c.Time) {
					t.Errorf("test case %q time %q", c.Name, c.Time)
				}
				if c.Failure != nil {
					failures++
				}
				if c.Error != nil {
					errors++
				}
				if i == 0 {
					continue
				}
				th := r.Thresholds[i-1]
				checkJUnitValues(t, c.Name, c.SystemOut, props, th.Values)
				if !strings.Contains(c.Name, oneLineXML(th.Expr)) {
					t.Errorf("test case %q, want it named by %q", c.Name, th.Expr)
				}
				if th.Builtin != strings.HasPrefix(strings.TrimPrefix(c.Name, "["+r.Label+"] "), "built-in check: ") || th.Builtin != strings.HasSuffix(c.Classname, ".builtin") {
					t.Errorf("test case %q (class %s): built-in %v, want it named so", c.Name, c.Classname, th.Builtin)
				}
				if (c.Failure != nil) == th.Pass {
					t.Errorf("test case %q failure %v, threshold passed %v", c.Name, c.Failure != nil, th.Pass)
				}
				if c.Failure != nil {
					mv := oneLineXML(measuredValues(th.Values))
					if c.Failure.Type != "threshold" || !strings.Contains(c.Failure.Message, mv) || !strings.Contains(c.Failure.Text, "measured: ") {
						t.Errorf("failure %+v, want type threshold with the measured values %q", *c.Failure, mv)
					}
					// A failed threshold that read the baseline says which
					// run that was and its values apart from this run's.
					var base []threshold.Value
					for _, v := range th.Values {
						if v.Ref.Baseline {
							base = append(base, v)
						}
					}
					if hasBase := strings.Contains(c.Failure.Text, "baseline values: "); r.Comparison != nil && len(base) > 0 {
						for _, want := range []string{"baseline: " + r.Comparison.A.Label + " (plan ", "baseline values: " + measuredValues(base) + "\n", "this run's values: "} {
							if !strings.Contains(c.Failure.Text, want) {
								t.Errorf("failure text %q lacks %q", c.Failure.Text, want)
							}
						}
					} else if hasBase {
						t.Errorf("failure text %q gives baseline values without a baseline read", c.Failure.Text)
					}
				}
			}
			if s.Failures != strconv.Itoa(failures) || s.Errors != strconv.Itoa(errors) || doc.Failures != s.Failures || doc.Errors != s.Errors || s.Skipped != "0" {
				t.Errorf("failures=%s errors=%s skipped=%s (root %s, %s), counted %d and %d", s.Failures, s.Errors, s.Skipped, doc.Failures, doc.Errors, failures, errors)
			}
			for _, w := range r.headerWarnings() {
				if !strings.Contains(s.SystemOut, oneLineXML(w)) {
					t.Errorf("system-out lacks the warning %q", w)
				}
			}
		})
	}
}

// oneLineXML is s as it reads back from XML: characters XML cannot hold
// become U+FFFD.
func oneLineXML(s string) string {
	return strings.Map(func(c rune) rune {
		if c < 0x20 && c != '\n' && c != '\t' && c != '\r' {
			return '\uFFFD'
		}
		return c
	}, s)
}

// checkJUnitValues checks that a test case shows every value it measured,
// passing or not: a "METRIC = VALUE" line in its system-out and the
// suite's value.METRIC property.
func checkJUnitValues(t *testing.T, name, out string, props map[string]string, vs []threshold.Value) {
	t.Helper()
	if len(vs) == 0 {
		if out != "" {
			t.Errorf("test case %q: system-out %q without a measured value", name, out)
		}
		return
	}
	for _, v := range vs {
		ref, val := oneLineXML(v.Ref.String()), oneLineXML(measuredValue(v))
		if !strings.Contains(out, ref+" = "+val+"\n") {
			t.Errorf("test case %q: system-out %q lacks the line %q", name, out, ref+" = "+val)
		}
		if got, ok := props["value."+ref]; !ok || got != val {
			t.Errorf("test case %q: property value.%s = %q (present %v), want %q", name, ref, got, ok, val)
		}
	}
}
