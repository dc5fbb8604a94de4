package sqlserver

import (
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// jobsInterfaces reads package jobs' exported interfaces and the names of
// their methods, embedded interfaces' included.
func jobsInterfaces(t *testing.T) map[string][]string {
	t.Helper()
	files, err := filepath.Glob("../jobs/*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := gotoken.NewFileSet()
	decls := map[string]*ast.InterfaceType{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != gotoken.TYPE {
				continue
			}
			for _, spec := range g.Specs {
				ts := spec.(*ast.TypeSpec)
				if it, ok := ts.Type.(*ast.InterfaceType); ok && ts.Name.IsExported() {
					decls[ts.Name.Name] = it
				}
			}
		}
	}
	var methods func(name string) []string
	methods = func(name string) []string {
		it, ok := decls[name]
		if !ok {
			t.Fatalf("jobs embeds an interface it does not declare: %s", name)
		}
		var out []string
		for _, m := range it.Methods.List {
			if len(m.Names) == 0 { // an embedded interface
				out = append(out, methods(m.Type.(*ast.Ident).Name)...)
			}
			for _, n := range m.Names {
				out = append(out, n.Name)
			}
		}
		return out
	}
	out := map[string][]string{}
	for name := range decls {
		out[name] = methods(name)
	}
	return out
}

// TestQueryBinding checks every method of bindingPorts; this checks the
// list: every interface of package jobs the store implements, an optional
// one added later too, has its methods in bindingPorts.
func TestBindingPortsAreEveryInterfaceTheStoreImplements(t *testing.T) {
	listed := map[string]bool{}
	for _, port := range bindingPorts {
		for i := range port.NumMethod() {
			listed[port.Method(i).Name] = true
		}
	}
	store := reflect.TypeFor[*Store]()
	implemented := 0
	for name, methods := range jobsInterfaces(t) {
		if !slices.ContainsFunc(methods, func(m string) bool { _, ok := store.MethodByName(m); return !ok }) {
			implemented++
			for _, m := range methods {
				if !listed[m] {
					t.Errorf("the store implements jobs.%s, whose method %s no port of bindingPorts has: add jobs.%s to bindingPorts", name, m, name)
				}
			}
		}
	}
	if implemented < 8 { // Store, its five roles, BatchWorker, TxEnqueuer, FinishedCounter...
		t.Fatalf("the store implements %d interfaces of package jobs; the parse found too few", implemented)
	}
}
