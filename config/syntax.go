package config

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/chokaq/chokaq-go/internal/redact"
)

// yamlProblem is yaml.v3's message for a file it cannot parse.
var yamlProblem = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)

// syntaxError builds the ErrSyntax error for a file YAML cannot parse,
// naming the line where the problem is and quoting it.
//
// yaml.v3's own line number cannot be shown as it is. For a parser error
// (as opposed to a scanner error) it gives the 0-based line of libyaml's
// context mark, the start of the enclosing block or flow collection, and
// drops the problem's position: "Queues: [default" unclosed on line 4
// comes out as "line 3", and a key mis-indented on line 4 under a mapping
// that starts on line 2 as "line 1". The problem's position is not
// exported, so it is found from the outside: the first line at which the
// leading lines of the file already fail with the same problem. That line
// cannot come before the one yaml named, which keeps a valid multi-line
// construct earlier in the file from being blamed.
func syntaxError(path string, content []byte, err error) error {
	m := yamlProblem.FindStringSubmatch(err.Error())
	if m == nil {
		// Not a parse error with a position (e.g. a duplicate key found
		// while decoding): its lines are right; keep it on one line.
		// It may quote a value of the file, which may be a secret.
		return fmt.Errorf("%w: %s: %s", ErrSyntax, path, redact.DSN(strings.Join(strings.Fields(err.Error()), " ")))
	}
	reported, _ := strconv.Atoi(m[1])
	problem := m[2]
	lines := strings.SplitAfter(string(content), "\n")
	line := max(reported, 1)
	for k := line; k <= len(lines); k++ {
		var n yaml.Node
		perr := yaml.Unmarshal([]byte(strings.Join(lines[:k], "")), &n)
		if perr == nil {
			continue
		}
		if pm := yamlProblem.FindStringSubmatch(perr.Error()); pm != nil && pm[2] == problem {
			line = k
			break
		}
	}
	msg := fmt.Sprintf("%s: line %d: %s", path, line, redact.DSN(problem))
	if line <= len(lines) {
		if text := strings.TrimRight(lines[line-1], "\r\n"); strings.TrimSpace(text) != "" {
			msg += ": " + quoteLine(text)
		}
	}
	return fmt.Errorf("%w: %s", ErrSyntax, msg)
}

// quoteLine shows a source line in an error, tabs and all. A line that may
// hold a secret is not shown: a file that does not parse is not known to be
// a connection string redact.DSN would recognise.
func quoteLine(text string) string {
	lower := strings.ToLower(text)
	for _, w := range []string{"password", "pwd", "secret", "token", "://"} {
		if strings.Contains(lower, w) {
			return "(line not shown: it may hold a secret)"
		}
	}
	const most = 120
	if r := []rune(text); len(r) > most {
		text = string(r[:most]) + "..."
	}
	return strconv.Quote(text)
}
