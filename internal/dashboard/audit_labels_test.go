package dashboard

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Every audit action of package paygate (a constant named Audit…, except
// the CLI actor's name) has a label, so the audit page's action filter
// offers it and shows it in words. Read from the package's source, so a
// new action without a label fails here.
func TestEveryAuditActionHasALabel(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "paygate")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	found := 0
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, "Audit") || name.Name == "AuditActorCLI" || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					action, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					found++
					if _, ok := auditLabels[action]; !ok {
						t.Errorf("paygate.%s (%q) has no label on the audit page", name.Name, action)
					}
				}
			}
		}
	}
	if found < 20 {
		t.Fatalf("found %d audit actions: the parse missed them", found)
	}
}
