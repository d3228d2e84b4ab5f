// Command flagsdoc writes docs/flags.md, the reference of quarry's
// settings (config.FlagsMarkdown).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/quarrydb/quarry/internal/platform/config"
)

func main() {
	out := flag.String("o", "", "file to write (default: standard output)")
	flag.Parse()
	doc := []byte(config.FlagsMarkdown())
	if *out == "" {
		os.Stdout.Write(doc)
		return
	}
	if err := os.WriteFile(*out, doc, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "flagsdoc:", err)
		os.Exit(1)
	}
}
