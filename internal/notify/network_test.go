package notify

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// forbidden are the ways to reach the network that bypass the egress guard:
// a sender must use Delivery.do (HTTP) or Delivery.dial (anything else).
var forbidden = map[string][]string{
	"net":        {"Dial", "DialTimeout", "DialTCP", "DialUDP", "DialIP", "DialUnix", "Dialer"},
	"net/http":   {"Get", "Head", "Post", "PostForm", "DefaultClient", "DefaultTransport", "Transport", "ProxyFromEnvironment"},
	"crypto/tls": {"Dial", "DialWithDialer", "Dialer"},
	"net/smtp":   {"Dial", "SendMail"},
}

// TestOnlyTheGuardReachesTheNetwork: no file of the package (tests aside)
// names a dialer, a transport or a client of its own, so a kind added later
// connects through the guard or not at all. The one http.Client is
// Delivery.httpClient's, over the guard's transport.
func TestOnlyTheGuardReachesTheNetwork(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		imports := map[string]string{} // local name -> path
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			local := path[strings.LastIndex(path, "/")+1:]
			if imp.Name != nil {
				local = imp.Name.Name
			}
			imports[local] = path
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if fn, ok := n.(*ast.FuncDecl); ok && fn.Name.Name == "httpClient" && name == "send.go" {
				return false // the guarded client itself
			}
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			pkg, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			path := imports[pkg.Name]
			for _, bad := range forbidden[path] {
				if sel.Sel.Name == bad {
					t.Errorf("%s: %s.%s reaches the network past the egress guard; use Delivery.do or Delivery.dial",
						fset.Position(sel.Pos()), pkg.Name, bad)
				}
			}
			if path == "net/http" && sel.Sel.Name == "Client" {
				t.Errorf("%s: an http.Client of its own; use Delivery.do", fset.Position(sel.Pos()))
			}
			return true
		})
	}
}
