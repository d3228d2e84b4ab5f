package ddb_test

import (
	"math/rand/v2"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/quarrydb/quarry/ddb"
)

func TestZZDebugFuzz(t *testing.T) {
	seed, _ := strconv.ParseUint(os.Getenv("ZZSEED"), 10, 64)
	ops := make([]string, 0, len(wireOps))
	for op := range wireOps {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for i, op := range ops {
		t.Run(op, func(t *testing.T) {
			t.Parallel()
			s, url := newWireServer(t)
			c := ddb.NewClient(s, noRetry)
			fuzzTable(t, c)
			valid := wireOps[op]
			wirePost(t, url, "DynamoDB_20120810."+op, valid)
			r := rand.New(rand.NewPCG(seed, uint64(i)))
			for n := range 8000 {
				body := garble(r, valid)
				if strings.Contains(body, "null") {
					continue
				}
				resp := wirePost(t, url, "DynamoDB_20120810."+op, body)
				if resp.status != http.StatusOK && resp.status != 400 {
					t.Fatalf("case %d: %s\nrequest %s", n, resp.raw, body)
				}
			}
		})
	}
}
