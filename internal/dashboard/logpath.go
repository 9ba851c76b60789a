package dashboard

import "strings"

// logPath is a request path as it may be logged: the token of an
// invitation link (a credential until it is used) is redacted.
func logPath(path string) string {
	if rest, ok := strings.CutPrefix(path, root+"/invite/"); ok && rest != "" {
		return root + "/invite/[redacted]"
	}
	return path
}
