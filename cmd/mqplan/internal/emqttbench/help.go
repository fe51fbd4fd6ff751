package emqttbench

import (
	"fmt"
	"io"
	"strings"
)

// WriteHelp writes --help: every option the command takes, with its
// default and meaning.
func WriteHelp(w io.Writer, kind Kind) {
	what := map[Kind]string{
		Conn: "Connects -c clients to the broker at -h/-p, like emqtt-bench conn, holds them, and\nprints emqtt-bench's connected: N whenever the count changes.",
		Sub:  "Connects -c clients that subscribe to -t, like emqtt-bench sub, and prints\nemqtt-bench's recv(<ms>): total=N, rate=N(msg/sec) every second that messages\narrive (<ms>: milliseconds since the start), and connected: N.",
		Pub:  "Connects -c clients that each publish to -t every -I ms, like emqtt-bench pub, and\nprints emqtt-bench's sent(<ms>): total=N, rate=N(msg/sec) every second that\nmessages are sent (<ms>: milliseconds since the start), and connected: N.",
	}[kind]
	fmt.Fprintf(w, "Usage: mqplan %s [options]\n\n%s\n", kind, what)
	fmt.Fprint(w, `
It runs until Ctrl-C (or --duration), then prints mqplan's report. The options
compile into an ordinary plan (--print-plan shows it), so the report and
--threshold work as in a plan file. Exit codes: 0 stopped and every threshold
held, 1 a threshold failed, 2 invalid options, 3 the broker could not be tested.
`)
	if kind == Sub {
		fmt.Fprint(w, "A sub that received no message fails (exit 1, the built-in check\nreceived > 0) unless --allow-empty.\n")
	}
	section := func(title string, ours bool) {
		fmt.Fprintf(w, "\n%s\n", title)
		for _, opt := range options {
			if opt.ours != ours || !opt.takes(kind) {
				continue
			}
			name := "    "
			if opt.short != 0 {
				name = "-" + string(opt.short) + ", "
			}
			name += "--" + opt.long
			if opt.arg != "" {
				name += " " + opt.arg
			}
			help := opt.help
			if opt.def != "" {
				help += " [default: " + opt.def + "]"
			}
			lines := wrapWords(help, 80-30)
			if len(name) > 26 {
				fmt.Fprintf(w, "  %s\n", name)
				name = ""
			}
			for _, l := range lines {
				fmt.Fprintf(w, "  %-26s  %s\n", name, l)
				name = ""
			}
		}
	}
	section("emqtt-bench options (same names and defaults):", false)
	section("mqplan options:", true)
	fmt.Fprintf(w, "\nThe emqtt-bench migration table is in docs/emqtt-bench.md.\n")
}

// wrapWords breaks text into lines of at most width bytes, at spaces.
func wrapWords(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && len(line)+1+len(word) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	return append(lines, line)
}
