package plans

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mqplan/mqplan/internal/certtest"
)

// TestLoadChecksTLSFiles: with CheckFiles, broker.tls files that are
// missing or not PEM are plan problems at their key, with positions;
// without it (the language's own tests) they are not read.
func TestLoadChecksTLSFiles(t *testing.T) {
	certs := certtest.Generate(t)
	dir := certs.Dir
	notPEM := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	plan := func(tls string) string {
		return "name: t\nbroker:\n  url: mqtts://127.0.0.1:8883\n  tls: " + tls + "\n" +
			"groups:\n  - {name: pub, count: 1, publish: {topic: t, every: 1s}}\nduration: 1s\n"
	}
	tests := []struct {
		name string
		tls  string
		want []string // the problems, each a line of the error; none: valid
	}{
		{name: "valid CA", tls: "{ca: ca.pem}"},
		{name: "valid mutual TLS", tls: "{ca: ca.pem, cert: client.pem, key: client.key}"},
		{name: "the CA is missing", tls: "{ca: nope.pem}",
			want: []string{"plan.yaml:4:13: broker.tls.ca: cannot read " + filepath.Join(dir, "nope.pem") + ": no such file or directory"}},
		{name: "the CA is a directory", tls: "{ca: .}",
			want: []string{"plan.yaml:4:13: broker.tls.ca: cannot read " + dir + ": is a directory"}},
		{name: "the CA is not PEM", tls: "{ca: notes.txt}",
			want: []string{"plan.yaml:4:13: broker.tls.ca: " + notPEM + " holds no PEM certificate"}},
		{name: "the certificate is a key and the key a certificate", tls: "{cert: client.key, key: client.pem}",
			want: []string{"broker.tls.cert: " + filepath.Join(dir, "client.key") + " holds no PEM certificate",
				"broker.tls.key: " + filepath.Join(dir, "client.pem") + " holds no PEM private key"}},
		{name: "certificate and key do not match", tls: "{cert: client.pem, key: server.key}",
			want: []string{"broker.tls.key: " + filepath.Join(dir, "client.pem") + " and " + filepath.Join(dir, "server.key") + " do not make a key pair"}},
		{name: "every file missing: every problem at once", tls: "{ca: a.pem, cert: b.pem, key: c.pem}",
			want: []string{"4:13: broker.tls.ca: cannot read", "4:26: broker.tls.cert: cannot read", "4:38: broker.tls.key: cannot read"}},
		{name: "a non-regular file is left to the run", tls: "{ca: /dev/null}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(dir, "plan.yaml")
			if err := os.WriteFile(file, []byte(plan(tt.tls)), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := Load(file, LoadOptions{}); err != nil {
				t.Fatalf("without CheckFiles: %v", err)
			}
			_, err := Load(file, LoadOptions{CheckFiles: true})
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("got %v, want no problem", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no problem, want %q", tt.want)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("got %d problems, want %d:\n%v", len(lines), len(tt.want), err)
			}
			for i, w := range tt.want {
				if !strings.Contains(lines[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, lines[i], w)
				}
			}
		})
	}
}
