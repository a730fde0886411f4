package badge_test

import (
	"fmt"
	"slices"

	"github.com/vigil-operator/vigil/internal/badge"
	"github.com/vigil-operator/vigil/internal/monitor"
)

func ExampleURLs() {
	set := badge.URLs("http://localhost:8000", "alice", "---", "db@dc1")
	fmt.Println(set.SVG)
	fmt.Println(set.JSON3)
	fmt.Println(badge.URLs("http://localhost:8000", "alice", "---", badge.AllTag).Shields)
	// Output:
	// http://localhost:8000/badge/alice/xG451GSH-2/db%2540dc1.svg
	// http://localhost:8000/badge/alice/xG451GSH/db%2540dc1.json
	// http://localhost:8000/badge/alice/6SKpySaJ-2.shields
}

func ExampleParsePath() {
	// The HTTP server has decoded the path once: %2540 arrived as %40.
	req, ok := badge.ParsePath("alice/xG451GSH-2/db%40dc1.json")
	fmt.Println(ok, req.Tag, req.Format, req.ThreeState, req.Format.Known(), req.Verify("---"))

	statuses := []badge.Status{monitor.StatusUp, monitor.StatusGrace, monitor.StatusPaused}
	res := req.Aggregate(slices.Values(statuses))
	fmt.Printf("%s\n", req.Format.Render(req.Label(badge.DefaultMasterLabel), res))
	// Output:
	// true db@dc1 json false true true
	// {"status": "up", "total": 3, "grace": 1, "down": 0}
}
