package schema

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"testing/fstest"
	"text/template"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

var migrationName = regexp.MustCompile(`^(\d+)_[a-z0-9_]+\.(up|down)\.sql$`)

// Latest is the version this binary's migrations end at.
func Latest() uint {
	var latest uint
	entries, _ := fs.ReadDir(migrationFiles, "migrations")
	for _, e := range entries {
		if m := migrationName.FindStringSubmatch(e.Name()); m != nil {
			v, _ := strconv.ParseUint(m[1], 10, 32)
			latest = max(latest, uint(v))
		}
	}
	return latest
}

// Rendered returns the migrations with the schema name filled in, as a file
// system for golang-migrate's iofs source, keyed "migrations/<file>".
func Rendered(name string) (fs.FS, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	data := struct{ Name, Schema string }{Name: name, Schema: Quote(name)}
	out := fstest.MapFS{}
	for _, e := range entries {
		if migrationName.FindStringSubmatch(e.Name()) == nil {
			return nil, fmt.Errorf("schema: migration file %q does not follow <version>_<name>.(up|down).sql", e.Name())
		}
		p := path.Join("migrations", e.Name())
		raw, err := migrationFiles.ReadFile(p)
		if err != nil {
			return nil, err
		}
		tmpl, err := template.New(e.Name()).Option("missingkey=error").Parse(string(raw))
		if err != nil {
			return nil, fmt.Errorf("schema: %s: %w", e.Name(), err)
		}
		var b bytes.Buffer
		if err := tmpl.Execute(&b, data); err != nil {
			return nil, fmt.Errorf("schema: %s: %w", e.Name(), err)
		}
		out[p] = &fstest.MapFile{Data: b.Bytes(), Mode: 0o444}
	}
	return out, nil
}

// Files returns the rendered migration file names in version order.
func Files(fsys fs.FS) []string {
	entries, _ := fs.ReadDir(fsys, "migrations")
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}
