package validate

import "strings"

// Expand replaces $(NAME) in s the way the kubelet does in a container's
// command, args and env values (the semantics of Kubernetes'
// third_party/forked/golang/expansion): $(NAME) becomes lookup(NAME) when
// it is defined and stays as written when it is not; $$ is a literal $;
// a $ not followed by ( or $, and an unterminated $(, stay as written.
func Expand(s string, lookup func(string) (string, bool)) string {
	var out strings.Builder
	checkpoint := 0
	for cursor := 0; cursor < len(s); cursor++ {
		if s[cursor] != '$' || cursor+1 == len(s) {
			continue
		}
		out.WriteString(s[checkpoint:cursor])
		rest := s[cursor+1:]
		advance := 1
		switch rest[0] {
		case '$':
			out.WriteByte('$')
		case '(':
			end := strings.IndexByte(rest, ')')
			if end < 0 {
				out.WriteString("$(")
				break
			}
			name := rest[1:end]
			if v, ok := lookup(name); ok {
				out.WriteString(v)
			} else {
				out.WriteString("$(" + name + ")")
			}
			advance = end + 1
		default:
			out.WriteByte('$')
			out.WriteByte(rest[0])
		}
		cursor += advance
		checkpoint = cursor + 1
	}
	return out.String() + s[checkpoint:]
}
