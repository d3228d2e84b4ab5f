package blob

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestList runs the Lister contract on each backend: keys in bytewise
// order (a directory's keys after names that sort before "/"), from after
// a key, under a prefix, at most limit at a time, temporary files left
// out, and paging through every key.
func TestList(t *testing.T) {
	listers := map[string]func(t *testing.T) Lister{
		"Dir": func(t *testing.T) Lister {
			d, err := NewDir(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			// A Put under way: not an object.
			if err := os.MkdirAll(filepath.Join(d.Root, "p1", "s1"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d.Root, "p1", "s1", ".tmp-1"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			return d
		},
		"S3": func(t *testing.T) Lister { return newTestS3(t, s3Server(t), testBucket, "list/") },
	}
	keys := []string{"p1/s1/logs.json", "p1/s1/downloads.zip", "p1/s1-b/logs.json", "p1/s2/logs.json", "p1.x", "p2/s3/recording.json", "q"}
	want := slices.Clone(keys)
	slices.Sort(want)
	for name, open := range listers {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			l := open(t)
			for _, k := range keys {
				if err := l.(Store).Put(ctx, k, strings.NewReader(k)); err != nil {
					t.Fatal(err)
				}
			}
			list := func(prefix, after string, limit int) []string {
				t.Helper()
				objs, err := l.List(ctx, prefix, after, limit)
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				for _, o := range objs {
					if o.ModTime.IsZero() {
						t.Errorf("%s has no modification time", o.Key)
					}
					out = append(out, o.Key)
				}
				return out
			}
			if got := list("", "", 100); !slices.Equal(got, want) {
				t.Errorf("List all = %v, want %v", got, want)
			}
			var paged []string
			after := ""
			for {
				page := list("", after, 2)
				paged = append(paged, page...)
				if len(page) < 2 {
					break
				}
				after = page[len(page)-1]
			}
			if !slices.Equal(paged, want) {
				t.Errorf("List by pages of 2 = %v, want %v", paged, want)
			}
			if got, w := list("p1/", "p1/s1-b/logs.json", 100), []string{"p1/s1/downloads.zip", "p1/s1/logs.json", "p1/s2/logs.json"}; !slices.Equal(got, w) {
				t.Errorf("List p1/ after p1/s1-b/logs.json = %v, want %v", got, w)
			}
			if got, w := list("p1/s1/", "", 1), []string{"p1/s1/downloads.zip"}; !slices.Equal(got, w) {
				t.Errorf("List p1/s1/ limit 1 = %v, want %v", got, w)
			}
		})
	}
}
