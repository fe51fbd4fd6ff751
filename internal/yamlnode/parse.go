package yamlnode

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	yaml "go.yaml.in/yaml/v3"
)

// Parse decodes up to limit documents of data; documents past the limit
// are not read, so a caller that wants exactly one asks for two and
// reports the second. yaml.v3 is called under recover: a parser bug must
// become an error, never a panic. A syntax error is yaml.v3's own error,
// whose line is approximate: [Locate] pins it.
func Parse(data []byte, limit int) (docs []*yaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			docs, err = nil, fmt.Errorf("yaml: the YAML parser failed on this input (%v)", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for len(docs) < limit {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				return docs, nil
			}
			return nil, err
		}
		if n.Kind != yaml.DocumentNode {
			continue
		}
		docs = append(docs, &n)
	}
	return docs, nil
}

// IsEmptyDocument reports whether document d holds nothing: "---" alone,
// or only comments. An anchored null (&a ~) is content: an alias may use
// it.
func IsEmptyDocument(d *yaml.Node) bool {
	return len(d.Content) == 0 || (len(d.Content) == 1 && IsNull(d.Content[0]) && d.Content[0].Anchor == "")
}
