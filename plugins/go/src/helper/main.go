// openfiles-go-types: the type checker the openfiles go plugin runs as `go vet -vettool`.
//
// go vet hands it one package at a time (a JSON config naming the package's files and the
// compiler's export data for its imports); it type-checks the package with go/types, as
// gopls does, and prints every error as one JSON line after a marker, with go/types' own
// message, position and error code (gopls's `code`). It runs no analyzer and reads no
// file the config does not name. Part of the plugin's source (plugins/go/src/helper),
// built with the user's go into the plugin's state dir; openfiles' own code, never the
// repository's.
package main

import (
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
	"reflect"
	"strings"
)

// Marker starts every line this tool prints for the plugin.
const Marker = "openfiles-go-types:"

// codes are go/types' error code names by value (go/types/errorcodes.go of go1.19; the
// values are stable across releases, newer codes are past the end).
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

type config struct {
	ID          string
	Compiler    string
	Dir         string
	ImportPath  string
	GoFiles     []string
	ImportMap   map[string]string
	PackageFile map[string]string
	VetxOnly    bool
	VetxOutput  string
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
	args := os.Args[1:]
	for _, a := range args {
		switch {
		case a == "-flags":
			fmt.Println("[]")
			return
		case strings.HasPrefix(a, "-V"):
			fmt.Println("openfiles-go-types version 1")
			return
		}
	}
	if len(args) == 0 || !strings.HasSuffix(args[len(args)-1], ".cfg") {
		fmt.Fprintln(os.Stderr, "openfiles-go-types: run by go vet -vettool only")
		os.Exit(2)
	}
	data, err := os.ReadFile(args[len(args)-1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "openfiles-go-types:", err)
		os.Exit(2)
	}
	var cfg config
	if err := json.Unmarshal(data, &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "openfiles-go-types:", err)
		os.Exit(2)
	}
	if cfg.VetxOutput != "" {
		// No facts: an empty file, so go vet caches the (empty) result.
		_ = os.WriteFile(cfg.VetxOutput, nil, 0o666)
	}
	if cfg.VetxOnly || len(cfg.GoFiles) == 0 {
		return
	}
	emit(finding{Checked: cfg.GoFiles})
	fset := token.NewFileSet()
	var files []*ast.File
	syntax := false
	for _, name := range cfg.GoFiles {
		f, err := parser.ParseFile(fset, name, nil, parser.AllErrors|parser.ParseComments)
		if list, ok := err.(scanner.ErrorList); ok {
			for _, e := range list {
				emit(finding{File: e.Pos.Filename, Line: e.Pos.Line, Column: e.Pos.Column, Message: e.Msg, Source: "syntax"})
			}
			syntax = true
		} else if err != nil {
			emit(finding{File: name, Line: 1, Column: 1, Message: err.Error(), Source: "syntax"})
			syntax = true
		}
		if f != nil {
			files = append(files, f)
		}
	}
	if syntax {
		return
	}
	lookup := func(path string) (io.ReadCloser, error) {
		file, ok := cfg.PackageFile[path]
		if !ok {
			return nil, fmt.Errorf("no package file for %q", path)
		}
		return os.Open(file)
	}
	compiler := cfg.Compiler
	if compiler == "" {
		compiler = "gc"
	}
	imp := importer.ForCompiler(fset, compiler, lookup)
	tc := &types.Config{
		Importer: importerFunc(func(importPath string) (*types.Package, error) {
			path, ok := cfg.ImportMap[importPath]
			if !ok {
				path = importPath
			}
			return imp.Import(path)
		}),
		Sizes: types.SizesFor(compiler, build.Default.GOARCH),
		Error: func(err error) {
			if te, ok := err.(types.Error); ok {
				p := te.Fset.Position(te.Pos)
				emit(finding{File: p.Filename, Line: p.Line, Column: p.Column, Message: te.Msg, Code: code(te), Source: "compiler"})
			} else {
				emit(finding{Message: err.Error(), Source: "compiler"})
			}
		},
	}
	_, _ = tc.Check(cfg.ImportPath, fset, files, nil)
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }
