package chokaq_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// sharedSentinels are wrapped by several packages, each with its own
// prefix ("processor: not running"), so they carry none.
var sharedSentinels = map[string]bool{"jobs.ErrNotRunning": true, "jobs.ErrAlreadyStarted": true}

// parsedPackage is one package of this module, its test files left out.
type parsedPackage struct {
	dir   string
	name  string
	fset  *token.FileSet
	files map[string]*ast.File
}

// moduleDirs lists the directories of the main module, "." first: nested
// modules (their own go.mod), testdata and hidden directories are not part
// of the library.
func moduleDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if path != "." {
			if d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		dirs = append(dirs, path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// modulePackages parses every package of the main module, its test files
// left out.
func modulePackages(t *testing.T) []parsedPackage {
	t.Helper()
	var out []parsedPackage
	for _, path := range moduleDirs(t) {
		fset := token.NewFileSet()
		entries, err := os.ReadDir(path)
		if err != nil {
			t.Fatal(err)
		}
		pkg := parsedPackage{dir: path, fset: fset, files: map[string]*ast.File{}}
		for _, e := range entries {
			n := e.Name()
			if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(path, n), nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			pkg.name = f.Name.Name
			pkg.files[n] = f
		}
		if len(pkg.files) > 0 {
			out = append(out, pkg)
		}
	}
	return out
}

// Every exported sentinel error of a package says which package it comes
// from, with one prefix per package: "sqlserver: ...", never "mssql: ...".
func TestSentinelErrorsCarryTheirPackagePrefix(t *testing.T) {
	for _, pkg := range modulePackages(t) {
		for _, f := range pkg.files {
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.VAR {
					continue
				}
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, name := range vs.Names {
						if !name.IsExported() || !strings.HasPrefix(name.Name, "Err") || i >= len(vs.Values) {
							continue
						}
						call, ok := vs.Values[i].(*ast.CallExpr)
						if !ok || len(call.Args) == 0 {
							continue
						}
						lit, ok := call.Args[0].(*ast.BasicLit)
						if !ok || lit.Kind != token.STRING {
							continue
						}
						msg, _ := strconv.Unquote(lit.Value)
						if sharedSentinels[pkg.name+"."+name.Name] {
							continue
						}
						if !strings.HasPrefix(msg, pkg.name+": ") {
							t.Errorf("%s: %s.%s = %q: want the prefix %q", pkg.fset.Position(name.Pos()), pkg.name, name.Name, msg, pkg.name+": ")
						}
					}
				}
			}
		}
	}
}

// Every exported name of the library has a doc comment: types, functions,
// methods of exported types, constants and variables (a group's comment
// covers its members), and the methods of exported interfaces.
func TestExportedNamesAreDocumented(t *testing.T) {
	for _, pkg := range modulePackages(t) {
		if pkg.name == "main" {
			continue
		}
		missing := func(pos token.Pos, what string) {
			t.Errorf("%s: %s has no doc comment", pkg.fset.Position(pos), what)
		}
		for _, f := range pkg.files {
			for _, decl := range f.Decls {
				switch d := decl.(type) {
				case *ast.FuncDecl:
					if !d.Name.IsExported() || d.Doc != nil {
						continue
					}
					if d.Recv == nil {
						missing(d.Pos(), "func "+d.Name.Name)
						continue
					}
					if recv := receiverName(d.Recv.List[0].Type); ast.IsExported(recv) {
						missing(d.Pos(), "method "+recv+"."+d.Name.Name)
					}
				case *ast.GenDecl:
					for _, spec := range d.Specs {
						switch s := spec.(type) {
						case *ast.TypeSpec:
							if !s.Name.IsExported() {
								continue
							}
							if s.Doc == nil && d.Doc == nil {
								missing(s.Pos(), "type "+s.Name.Name)
							}
							if it, ok := s.Type.(*ast.InterfaceType); ok {
								for _, m := range it.Methods.List {
									for _, n := range m.Names {
										if n.IsExported() && m.Doc == nil && m.Comment == nil {
											missing(m.Pos(), "interface method "+s.Name.Name+"."+n.Name)
										}
									}
								}
							}
						case *ast.ValueSpec:
							for _, n := range s.Names {
								if n.IsExported() && s.Doc == nil && s.Comment == nil && d.Doc == nil {
									missing(n.Pos(), n.Name)
								}
							}
						}
					}
				}
			}
		}
	}
}

func receiverName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return receiverName(x.X)
	case *ast.IndexExpr:
		return receiverName(x.X)
	case *ast.IndexListExpr:
		return receiverName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return ""
}

// Every citation of the design contract by heading, in the form the code
// uses (the file name, then the heading in parentheses), names a heading
// the document has.
func TestDesignCitationsNameRealHeadings(t *testing.T) {
	design, err := os.ReadFile("docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	headings := map[string]bool{}
	for line := range strings.SplitSeq(string(design), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			headings[h] = true
		}
	}
	cite := regexp.MustCompile("design\\.md`?(?: \\(|, )(?:the table in docs/design\\.md, )?([A-Z][a-z]+(?: [a-z]+)*)\\)")
	cited := 0
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(path, ".go") || strings.HasSuffix(path, ".md")) {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range cite.FindAllStringSubmatch(string(src), -1) {
			cited++
			if !headings[m[1]] {
				t.Errorf("%s cites docs/design.md (%s): no such heading", path, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if cited < 10 {
		t.Fatalf("found %d citations of docs/design.md; the pattern no longer matches how the code cites it", cited)
	}
}

// `make fuzz` runs the fuzz targets the Makefile lists by hand: every Fuzz
// function of the module is in FUZZ_TARGETS, under its package, and every
// entry there names one that exists, so no target is left to rot unrun.
func TestMakeFuzzListsEveryFuzzTarget(t *testing.T) {
	found := map[string]bool{}
	for _, dir := range moduleDirs(t) {
		tests, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
		if err != nil {
			t.Fatal(err)
		}
		pkg := "./" + filepath.ToSlash(dir)
		if dir == "." {
			pkg = "."
		}
		for _, path := range tests {
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, decl := range f.Decls {
				if fd, ok := decl.(*ast.FuncDecl); ok && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Fuzz") {
					found[pkg+":"+fd.Name.Name] = true
				}
			}
		}
	}
	listed := makeList(t, "FUZZ_TARGETS")
	for target := range found {
		if !listed[target] {
			t.Errorf("%s is not in the Makefile's FUZZ_TARGETS: add it, so make fuzz runs it", target)
		}
	}
	for target := range listed {
		if !found[target] {
			t.Errorf("the Makefile's FUZZ_TARGETS lists %s, which no test file defines", target)
		}
	}
	if len(found) == 0 {
		t.Fatal("no Fuzz functions found")
	}
}

// makeList returns the words of a Makefile variable written as
// `NAME := \` followed by one word per continued line.
func makeList(t *testing.T, name string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	in := false
	for line := range strings.SplitSeq(string(b), "\n") {
		if !in {
			fields := strings.Fields(line)
			in = len(fields) >= 2 && fields[0] == name && fields[1] == ":="
			if !in {
				continue
			}
			line = strings.Join(fields[2:], " ")
		}
		for _, w := range strings.Fields(strings.TrimSuffix(strings.TrimSpace(line), "\\")) {
			out[w] = true
		}
		if !strings.HasSuffix(strings.TrimSpace(line), "\\") {
			break
		}
	}
	if len(out) == 0 {
		t.Fatalf("the Makefile has no %s list", name)
	}
	return out
}
