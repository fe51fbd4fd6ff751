package browsertest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenSeesWhatGoesWrong: a page's console errors, uncaught exceptions
// and requests beyond the file are reported, and a sound page has none, so
// that a test built on Open can fail.
func TestOpenSeesWhatGoesWrong(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		errors  []string // substrings, one per expected error
		request string   // a substring of the one expected request
	}{
		{name: "sound page", body: `<p>ok</p><script>document.body.dataset.v = "7"; console.log("fine")</script>`},
		{name: "console.error", body: `<script>console.error("broken chart")</script>`, errors: []string{"console.error: broken chart"}},
		{name: "uncaught exception", body: `<script>null.x</script>`, errors: []string{"uncaught"}},
		// Port 9 is one Chromium refuses to fetch from: the request is
		// recorded, and its failure is an error too.
		{name: "a fetch beyond the file", body: `<img src="http://127.0.0.1:9/x.png">`,
			errors: []string{"network error"}, request: "http://127.0.0.1:9/x.png"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "page.html")
			if err := os.WriteFile(path, []byte("<!DOCTYPE html><html><body>"+tt.body+"</body></html>"), 0o644); err != nil {
				t.Fatal(err)
			}
			p := Open(t, path, 800, "document.readyState === 'complete'", "document.body.dataset.v || null")
			if len(p.Errors) != len(tt.errors) {
				t.Errorf("errors %q, want %d", p.Errors, len(tt.errors))
			}
			for i, want := range tt.errors {
				if i < len(p.Errors) && !strings.Contains(p.Errors[i], want) {
					t.Errorf("error %q, want it to say %q", p.Errors[i], want)
				}
			}
			if tt.request == "" && len(p.Requests) > 0 {
				t.Errorf("requests %q, want none", p.Requests)
			}
			if tt.request != "" && (len(p.Requests) != 1 || !strings.Contains(p.Requests[0], tt.request)) {
				t.Errorf("requests %q, want %q", p.Requests, tt.request)
			}
			if tt.name == "sound page" && string(p.Value) != `"7"` {
				t.Errorf("value %s, want \"7\"", p.Value)
			}
			if len(p.Screenshot) < 8 || string(p.Screenshot[1:4]) != "PNG" {
				t.Errorf("no PNG screenshot (%d bytes)", len(p.Screenshot))
			}
		})
	}
}
