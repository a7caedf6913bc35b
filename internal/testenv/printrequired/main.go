// Command printrequired prints what the tests require in CI
// (testenv.Resources): what each resource is, which suites need it and how
// it is provided. scripts/test.sh runs it at the start of make test.
package main

import (
	"fmt"

	"github.com/mirage-gpu/mirage/internal/testenv"
)

func main() {
	fmt.Println("CI requires these (with CI set, a test that misses one fails, naming it, instead of skipping):")
	for _, r := range testenv.Resources {
		fmt.Printf("- %s\n    for: %s\n    provided by: %s\n", r.What, r.Suites, r.How)
	}
	if !testenv.InCI() {
		fmt.Println("CI is not set: a test that misses one of them is skipped with the same message.")
	}
}
