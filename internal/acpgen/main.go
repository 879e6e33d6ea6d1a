// Command acpgen generates acp/types_gen.go, the Go types of the Agent Client Protocol, from the
// pinned JSON Schema. It is run by `go generate ./acp/...`:
//
//	go run ../internal/acpgen -schema ../schema/v1/schema.json -out types_gen.go
//
// The model (model.go) decides what Go declaration each $def becomes; names.go holds the naming
// rules and the few names the schema leaves open; emit.go writes the code, doc.go turns the
// schema's Markdown descriptions into its doc comments, and support.go.in is the hand-written part
// of the output that the generated code calls.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

func main() {
	schemaPath := flag.String("schema", "schema/v1/schema.json", "the JSON Schema to read")
	out := flag.String("out", "acp/types_gen.go", "the Go file to write")
	types := flag.String("types", "", "comma-separated $defs: write only these and what they refer to (see subset.go)")
	prefix := flag.String("prefix", "", "with -types, the prefix of every Go name")
	shared := flag.String("shared", "", "with -types, the schema of types_gen.go: $defs of the same shape keep its Go types")
	flag.Parse()
	if *types != "" {
		if err := runSubset(*schemaPath, *shared, *out, subsetOptions{Roots: strings.Split(*types, ","), Prefix: *prefix}); err != nil {
			fmt.Fprintln(os.Stderr, "acpgen:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*schemaPath, *out); err != nil {
		fmt.Fprintln(os.Stderr, "acpgen:", err)
		os.Exit(1)
	}
}

func run(schemaPath, out string) error {
	data, err := os.ReadFile(schemaPath)
	if err != nil {
		return err
	}
	src, err := generate(data)
	if err != nil {
		return err
	}
	return os.WriteFile(out, src, 0o644)
}
