package chokaq_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// The README's embedding section is example_test.go's Example, verbatim,
// so the code a reader copies is code that runs in make test.
func TestReadmeShowsTheExample(t *testing.T) {
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "example_test.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	wanted := map[string]bool{"WelcomeArgs": false, "Kind": false, "Example": false, "Example_middleware": false, "ExampleRecordOutput": false, "Example_tracing": false, "SyncArgs": false, "Example_unique": false, "ExportArgs": false, "Example_flowControl": false, "PartnerCallArgs": false, "Example_rateLimit": false}
	for _, d := range f.Decls {
		var name string
		var doc *ast.CommentGroup
		switch d := d.(type) {
		case *ast.FuncDecl:
			name, doc = d.Name.Name, d.Doc
			if d.Recv != nil && name == "Kind" && !strings.Contains(string(src[fset.Position(d.Pos()).Offset:fset.Position(d.End()).Offset]), "WelcomeArgs") {
				continue
			}
		case *ast.GenDecl:
			if ts, ok := d.Specs[0].(*ast.TypeSpec); ok {
				name, doc = ts.Name.Name, d.Doc
			}
		}
		if _, ok := wanted[name]; !ok {
			continue
		}
		start := d.Pos()
		if doc != nil {
			start = doc.Pos()
		}
		text := string(src[fset.Position(start).Offset:fset.Position(d.End()).Offset])
		if !strings.Contains(string(readme), text) {
			t.Errorf("README.md does not show %s as example_test.go has it:\n%s", name, text)
		}
		wanted[name] = true
	}
	for name, seen := range wanted {
		if !seen {
			t.Errorf("example_test.go has no %s", name)
		}
	}
}

// The README's section on kind policies is example_kinds_test.go's
// example, verbatim, from the Args type to the end.
func TestReadmeShowsTheKindPolicyExample(t *testing.T) {
	src, err := os.ReadFile("example_kinds_test.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(src), "// MonthlyReportArgs")
	if i < 0 {
		t.Fatal("example_kinds_test.go has no MonthlyReportArgs")
	}
	if code := strings.TrimRight(string(src[i:]), "\n"); !strings.Contains(string(readme), "```go\n"+code+"\n```") {
		t.Errorf("README.md does not show example_kinds_test.go's example as it is:\n%s", code)
	}
}

// The README's section on workflows is example_workflow_test.go's
// example, verbatim, from the Args type to the end.
func TestReadmeShowsTheWorkflowExample(t *testing.T) {
	src, err := os.ReadFile("example_workflow_test.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(src), "// PipelineArgs")
	if i < 0 {
		t.Fatal("example_workflow_test.go has no PipelineArgs")
	}
	if code := strings.TrimRight(string(src[i:]), "\n"); !strings.Contains(string(readme), "```go\n"+code+"\n```") {
		t.Errorf("README.md does not show example_workflow_test.go's example as it is:\n%s", code)
	}
}
