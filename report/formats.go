package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// Format is one way of writing a Result to a file: the --out FORMAT=FILE
// of `mqplan run` and `mqplan report`. Every format renders from the
// Result alone, so that a saved JSON result re-renders to any of them.
type Format struct {
	// Name is what --out calls it ("json").
	Name string
	// Help is a few words for --help.
	Help string
	// Write renders r; it writes only when the whole output is ready,
	// so that a failed render leaves nothing half written behind.
	Write func(w io.Writer, r *Result) error
}

// formats lists the formats in the order --help shows them.
var formats = []Format{
	{Name: "json", Help: "the full result, for scripts and for mqplan report/compare", Write: WriteJSON},
	{Name: "table", Help: "the summary table the terminal shows", Write: WriteTable},
	{Name: "junit", Help: "JUnit XML: a test case per threshold, for CI test reports (Jenkins, GitLab)", Write: WriteJUnit},
	{Name: "md", Help: "a Markdown summary with a Mermaid chart (what GITHUB_STEP_SUMMARY gets)", Write: WriteMarkdown},
	{Name: "csv", Help: "the per-second timeline, a row per second and group", Write: WriteCSV},
	{Name: "html", Help: "one self-contained page with charts, to open offline", Write: WriteHTML},
}

// LookupFormat finds a format by name.
func LookupFormat(name string) (Format, bool) {
	i := slices.IndexFunc(formats, func(f Format) bool { return f.Name == name })
	if i < 0 {
		return Format{}, false
	}
	return formats[i], true
}

// FormatNames lists the formats' names for messages: "json, table".
func FormatNames() string {
	names := make([]string, len(formats))
	for i, f := range formats {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

// FormatHelp describes every format, one per line, for --help.
func FormatHelp() string {
	var b strings.Builder
	for _, f := range formats {
		fmt.Fprintf(&b, "  %-6s %s\n", f.Name, f.Help)
	}
	return b.String()
}
