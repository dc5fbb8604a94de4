package jobs

import "strings"

// Clip shortens s to at most n bytes, cutting at a character boundary and
// ending with "…", so a clipped text stays valid UTF-8 for an NVARCHAR
// column, a page or a log line.
func Clip(s string, n int) string {
	const ellipsis = "…"
	if len(s) <= n {
		return s
	}
	if n <= len(ellipsis) {
		return strings.ToValidUTF8(s[:max(n, 0)], "")
	}
	return strings.ToValidUTF8(s[:n-len(ellipsis)], "") + ellipsis
}

// Headline is the first line of an error text (details often carry a stack
// below it), clipped to n bytes: what lists and log lines show.
func Headline(s string, n int) string {
	line, _, _ := strings.Cut(s, "\n")
	return Clip(line, n)
}
