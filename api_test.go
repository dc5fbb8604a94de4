package chokaq_test

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/build"
	"go/doc"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// apiFile is the committed snapshot of the module's exported API.
const apiFile = "testdata/api.txt"

// updateAPI rewrites apiFile: go test -run TestExportedAPI -update . (or
// make api).
var updateAPI = flag.Bool("update", false, "rewrite "+apiFile+" from the code (TestExportedAPI)")

// The exported API of every package of the module (internal packages and
// the nested modules left out) is what testdata/api.txt says: a change to
// it fails here until the snapshot is rewritten, in the same commit as the
// change's CHANGELOG line.
func TestExportedAPI(t *testing.T) {
	got := exportedAPI(t)
	if *updateAPI {
		if err := os.MkdirAll(filepath.Dir(apiFile), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(apiFile, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(apiFile)
	if err != nil {
		t.Fatalf("%v: write it with `make api` (go test -run TestExportedAPI -update .)", err)
	}
	if got == string(want) {
		return
	}
	t.Errorf("the exported API differs from %s:\n%s\n"+
		"If the change is meant, run `make api` (go test -run TestExportedAPI -update .) and commit %s "+
		"with the change's CHANGELOG.md line (Added, Changed or Removed).", apiFile, apiDiff(string(want), got), apiFile)
}

// apiContext chooses the files of a package the same way on every machine.
var apiContext = func() build.Context {
	c := build.Default
	c.GOOS, c.GOARCH, c.CgoEnabled = "linux", "amd64", false
	return c
}()

// exportedAPI prints every package's exported declarations, as go doc
// shows them without comments or bodies, in import path order.
func exportedAPI(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, dir := range moduleDirs(t) {
		if dir == "internal" || strings.HasPrefix(dir, "internal"+string(filepath.Separator)) {
			continue // not importable outside the module: no API
		}
		pkg, err := apiContext.ImportDir(dir, 0)
		if _, none := err.(*build.NoGoError); none {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		var files []*ast.File
		for _, name := range pkg.GoFiles { // sorted, tests left out
			f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments|parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		path := "github.com/chokaq/chokaq-go"
		if dir != "." {
			path += "/" + filepath.ToSlash(dir)
		}
		d, err := doc.NewFromFiles(fset, files, path)
		if err != nil {
			t.Fatal(err)
		}
		if pkg.Name == "main" {
			continue // a command has no API
		}
		writePackageAPI(&b, fset, d)
	}
	return b.String()
}

func writePackageAPI(b *strings.Builder, fset *token.FileSet, d *doc.Package) {
	fmt.Fprintf(b, "package %s\n", d.ImportPath)
	decl := func(n ast.Node) {
		var out bytes.Buffer
		if err := (&printer.Config{Mode: printer.UseSpaces | printer.TabIndent, Tabwidth: 8}).Fprint(&out, fset, n); err != nil {
			panic(err)
		}
		// The printer keeps the blank lines and the column alignment of
		// the source, which comments shape: without them, a comment
		// added to a field would change the snapshot.
		b.WriteString("\n")
		for line := range strings.SplitSeq(out.String(), "\n") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			indent := line[:len(line)-len(strings.TrimLeft(line, "\t"))]
			b.WriteString(indent + strings.Join(strings.Fields(line), " ") + "\n")
		}
	}
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			decl(withoutDocs(v.Decl))
		}
	}
	funcs := func(fs []*doc.Func) {
		for _, f := range fs {
			fd := *f.Decl
			fd.Doc, fd.Body = nil, nil
			decl(&fd)
		}
	}
	values(d.Consts)
	values(d.Vars)
	funcs(d.Funcs)
	for _, typ := range d.Types {
		decl(withoutDocs(typ.Decl))
		values(typ.Consts)
		values(typ.Vars)
		funcs(typ.Funcs)
		funcs(typ.Methods)
	}
	b.WriteString("\n")
}

// withoutDocs is a declaration without its comments, a variable's initial
// call shown as f(...) (an error's text is not API), and a struct or
// interface that lost unexported members to go/doc's filter marked.
func withoutDocs(g *ast.GenDecl) *ast.GenDecl {
	out := *g
	out.Doc = nil
	out.Specs = make([]ast.Spec, len(g.Specs))
	for i, spec := range g.Specs {
		switch s := spec.(type) {
		case *ast.ValueSpec:
			c := *s
			c.Doc, c.Comment = nil, nil
			c.Values = slices.Clone(s.Values)
			for j, v := range c.Values {
				if call, ok := v.(*ast.CallExpr); ok && g.Tok == token.VAR {
					c.Values[j] = &ast.CallExpr{Fun: call.Fun, Args: []ast.Expr{ast.NewIdent("...")}}
				}
			}
			out.Specs[i] = &c
		case *ast.TypeSpec:
			c := *s
			c.Doc, c.Comment = nil, nil
			c.Type = withoutFieldDocs(s.Type)
			out.Specs[i] = &c
		default:
			out.Specs[i] = spec
		}
	}
	return &out
}

func withoutFieldDocs(e ast.Expr) ast.Expr {
	strip := func(l *ast.FieldList, incomplete bool, note string) *ast.FieldList {
		if l == nil {
			return nil
		}
		c := &ast.FieldList{Opening: l.Opening, Closing: l.Closing}
		for _, f := range l.List {
			fc := *f
			fc.Doc, fc.Comment = nil, nil
			c.List = append(c.List, &fc)
		}
		if incomplete {
			c.List = append(c.List, &ast.Field{Type: ast.NewIdent(note)})
		}
		return c
	}
	switch x := e.(type) {
	case *ast.StructType:
		return &ast.StructType{Struct: x.Struct, Fields: strip(x.Fields, x.Incomplete, "/* unexported fields */")}
	case *ast.InterfaceType:
		return &ast.InterfaceType{Interface: x.Interface, Methods: strip(x.Methods, x.Incomplete, "/* unexported methods */")}
	}
	return e
}

// apiDiff lists, package by package, the lines only the snapshot has (-)
// and the lines only the code has (+).
func apiDiff(want, got string) string {
	split := func(s string) map[string][]string {
		out := map[string][]string{}
		pkg := ""
		for line := range strings.SplitSeq(s, "\n") {
			if p, ok := strings.CutPrefix(line, "package "); ok {
				pkg = p
				out[pkg] = []string{}
				continue
			}
			if strings.TrimSpace(line) != "" {
				out[pkg] = append(out[pkg], line)
			}
		}
		return out
	}
	w, g := split(want), split(got)
	var b strings.Builder
	pkgs := map[string]bool{}
	for p := range w {
		pkgs[p] = true
	}
	for p := range g {
		pkgs[p] = true
	}
	for _, p := range slices.Sorted(func(yield func(string) bool) {
		for p := range pkgs {
			if !yield(p) {
				return
			}
		}
	}) {
		removed, added := minus(w[p], g[p]), minus(g[p], w[p])
		if len(removed)+len(added) == 0 {
			continue
		}
		fmt.Fprintf(&b, "package %s:\n", p)
		for _, l := range removed {
			fmt.Fprintf(&b, "  - %s\n", l)
		}
		for _, l := range added {
			fmt.Fprintf(&b, "  + %s\n", l)
		}
	}
	return b.String()
}

// minus is the lines of a not in b, counting repeats.
func minus(a, b []string) []string {
	left := map[string]int{}
	for _, l := range b {
		left[l]++
	}
	var out []string
	for _, l := range a {
		if left[l] > 0 {
			left[l]--
			continue
		}
		out = append(out, l)
	}
	return out
}
