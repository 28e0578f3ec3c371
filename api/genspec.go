//go:build ignore

// genspec writes the OpenAPI spec into openapi/ (go generate ./api).
package main

import (
	"log"

	"github.com/sdnlb/sdnlb/internal/specgen"
)

func main() {
	if err := specgen.Write("..", "../openapi"); err != nil {
		log.Fatal(err)
	}
}
