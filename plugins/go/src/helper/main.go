// openfiles-go-types: the type checker of the openfiles go plugin.
//
// Run as `openfiles-go-types GO PATTERN...` in a module's root, it lists the packages
// with `GO list -e -json -deps -test -export PATTERN...` (the go command compiles what they
// import and names the export data), then type-checks every package of the main modules,
// test variants included, from source with go/types, as gopls does: in dependency order,
// each importing the main modules' packages as this tool checked them (so the importers of
// a package that does not compile are still checked, as gopls checks them) and every other
// package from the compiler's export data. Every error is printed as one JSON line after a
// marker, with go/types' own message, position (line, byte column) and error code (gopls's
// `code`). It runs no analyzer. Part of the plugin's source (plugins/go/src/helper), built
// with the user's go into the plugin's state dir: openfiles' own code, never a repository's.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/scanner"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
)

// Marker starts every line this tool prints for the plugin.
const Marker = "openfiles-go-types:"

var codes = []string{
	"", "Test", "BlankPkgName", "MismatchedPkgName", "InvalidPkgUse", "BadImportPath",
	"BrokenImport", "ImportCRenamed", "UnusedImport", "InvalidInitCycle", "DuplicateDecl",
	"InvalidDeclCycle", "InvalidTypeCycle", "InvalidConstInit", "InvalidConstVal",
	"InvalidConstType", "UntypedNil", "WrongAssignCount", "UnassignableOperand", "NoNewVar",
	"MultiValAssignOp", "InvalidIfaceAssign", "InvalidChanAssign", "IncompatibleAssign",
	"UnaddressableFieldAssign", "NotAType", "InvalidArrayLen", "BlankIfaceMethod",
	"IncomparableMapKey", "InvalidIfaceEmbed", "InvalidPtrEmbed", "BadRecv", "InvalidRecv",
	"DuplicateFieldAndMethod", "DuplicateMethod", "InvalidBlank", "InvalidIota",
	"MissingInitBody", "InvalidInitSig", "InvalidInitDecl", "InvalidMainDecl", "TooManyValues",
	"NotAnExpr", "TruncatedFloat", "NumericOverflow", "UndefinedOp", "MismatchedTypes",
	"DivByZero", "NonNumericIncDec", "UnaddressableOperand", "InvalidIndirection",
	"NonIndexableOperand", "InvalidIndex", "SwappedSliceIndices", "NonSliceableOperand",
	"InvalidSliceExpr", "InvalidShiftCount", "InvalidShiftOperand", "InvalidReceive",
	"InvalidSend", "DuplicateLitKey", "MissingLitKey", "InvalidLitIndex", "OversizeArrayLit",
	"MixedStructLit", "InvalidStructLit", "MissingLitField", "DuplicateLitField",
	"UnexportedLitField", "InvalidLitField", "UntypedLit", "InvalidLit", "AmbiguousSelector",
	"UndeclaredImportedName", "UnexportedName", "UndeclaredName", "MissingFieldOrMethod",
	"BadDotDotDotSyntax", "NonVariadicDotDotDot", "MisplacedDotDotDot", "", "InvalidDotDotDot",
	"UncalledBuiltin", "InvalidAppend", "InvalidCap", "InvalidClose", "InvalidCopy",
	"InvalidComplex", "InvalidDelete", "InvalidImag", "InvalidLen", "SwappedMakeArgs",
	"InvalidMake", "InvalidReal", "InvalidAssert", "ImpossibleAssert", "InvalidConversion",
	"InvalidUntypedConversion", "BadOffsetofSyntax", "InvalidOffsetof", "UnusedExpr",
	"UnusedVar", "MissingReturn", "WrongResultCount", "OutOfScopeResult", "InvalidCond",
	"InvalidPostDecl", "", "InvalidIterVar", "InvalidRangeExpr", "MisplacedBreak",
	"MisplacedContinue", "MisplacedFallthrough", "DuplicateCase", "DuplicateDefault",
	"BadTypeKeyword", "InvalidTypeSwitch", "InvalidExprSwitch", "InvalidSelectCase",
	"UndeclaredLabel", "DuplicateLabel", "MisplacedLabel", "UnusedLabel", "JumpOverDecl",
	"JumpIntoBlock", "InvalidMethodExpr", "WrongArgCount", "InvalidCall", "UnusedResults",
	"InvalidDefer", "InvalidGo", "BadDecl", "RepeatedDecl", "InvalidUnsafeAdd",
	"InvalidUnsafeSlice", "UnsupportedFeature", "NotAGenericType", "WrongTypeArgCount",
	"CannotInferTypeArgs", "InvalidTypeArg", "InvalidInstanceCycle", "InvalidUnion",
	"MisplacedConstraintIface", "InvalidMethodTypeParams", "MisplacedTypeParam",
}

type listed struct {
	ImportPath string
	Name       string
	Dir        string
	GoFiles    []string
	Export     string
	ForTest    string
	Standard   bool
	ImportMap  map[string]string
	Module     *struct{ Main bool }
}

type finding struct {
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Message string `json:"message,omitempty"`
	Code    string `json:"code,omitempty"`
	// Source is gopls's: "syntax" for parse errors, "compiler" for type errors.
	Source string `json:"source,omitempty"`
	// Checked names the files of a package this tool checked (one line per package).
	Checked []string `json:"checked,omitempty"`
}

func emit(f finding) {
	b, _ := json.Marshal(f)
	fmt.Println(Marker + string(b))
}

func code(err types.Error) string {
	v := reflect.ValueOf(err).FieldByName("go116code")
	if !v.IsValid() || !v.CanInt() {
		return ""
	}
	c := v.Int()
	if c <= 0 || c >= int64(len(codes)) {
		return ""
	}
	return codes[c]
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: openfiles-go-types GO PATTERN...")
		os.Exit(2)
	}
	args := append([]string{"list", "-e", "-json", "-deps", "-test", "-export", "-buildvcs=false"}, os.Args[2:]...)
	cmd := exec.Command(os.Args[1], args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var pkgs []*listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		p := new(listed)
		if e := dec.Decode(p); e != nil {
			break
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		// The go command could not list anything (a broken go.mod…): say what it said.
		os.Stderr.Write(stderr.Bytes())
		if err == nil {
			fmt.Fprintln(os.Stderr, "go list found no package")
		}
		os.Exit(1)
	}
	byID := map[string]*listed{}
	for _, p := range pkgs {
		byID[p.ImportPath] = p
	}
	fset := token.NewFileSet()
	exports := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		if p := byID[path]; p != nil && p.Export != "" {
			return os.Open(p.Export)
		}
		return nil, fmt.Errorf("no export data for %q", path)
	})
	checked := map[string]*types.Package{}
	for _, p := range pkgs {
		if p.Standard || p.Module == nil || !p.Module.Main || strings.HasSuffix(p.ImportPath, ".test") || len(p.GoFiles) == 0 {
			continue
		}
		checked[p.ImportPath] = check(fset, p, checked, exports)
	}
}

// check type-checks one package of a main module and prints what it found.
func check(fset *token.FileSet, p *listed, checked map[string]*types.Package, exports types.Importer) *types.Package {
	var names []string
	for _, f := range p.GoFiles {
		if !filepath.IsAbs(f) {
			f = filepath.Join(p.Dir, f)
		}
		names = append(names, f)
	}
	emit(finding{Checked: names})
	var files []*ast.File
	for _, name := range names {
		f, err := parser.ParseFile(fset, name, nil, parser.AllErrors|parser.ParseComments)
		if list, ok := err.(scanner.ErrorList); ok {
			for _, e := range list {
				emit(finding{File: e.Pos.Filename, Line: e.Pos.Line, Column: e.Pos.Column, Message: e.Msg, Source: "syntax"})
			}
		} else if err != nil {
			emit(finding{File: name, Line: 1, Column: 1, Message: err.Error(), Source: "syntax"})
		}
		if f != nil {
			files = append(files, f)
		}
	}
	tc := &types.Config{
		Importer: importerFunc(func(path string) (*types.Package, error) {
			if id, ok := p.ImportMap[path]; ok {
				path = id
			}
			if pkg := checked[path]; pkg != nil {
				return pkg, nil
			}
			return exports.Import(path)
		}),
		FakeImportC: true,
		Sizes:       types.SizesFor("gc", build.Default.GOARCH),
		Error: func(err error) {
			if te, ok := err.(types.Error); ok {
				at := te.Fset.Position(te.Pos)
				emit(finding{File: at.Filename, Line: at.Line, Column: at.Column, Message: te.Msg, Code: code(te), Source: "compiler"})
			} else {
				emit(finding{Message: err.Error(), Source: "compiler"})
			}
		},
	}
	path := p.ImportPath
	if i := strings.Index(path, " ["); i >= 0 {
		path = path[:i]
	}
	pkg, _ := tc.Check(path, fset, files, nil)
	return pkg
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }
