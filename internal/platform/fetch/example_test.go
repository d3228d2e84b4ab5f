package fetch_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"

	"github.com/quarrydb/quarry/internal/platform/fetch"
)

func Example() {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			fmt.Fprint(w, "User-agent: *\nDisallow: /private\n")
			return
		}
		fmt.Fprint(w, "hello")
	}))
	defer site.Close()

	f := fetch.New(fetch.Options{
		UserAgent:  "quarry-datashelf/1.0",
		ObeyRobots: true,
		// Production leaves this empty: loopback is refused. The example
		// allows exactly the test server's address.
		AllowPrefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
	})
	defer f.Close()

	resp, err := f.Get(context.Background(), site.URL+"/page")
	fmt.Println(resp.Status, string(resp.Body), err)
	_, err = f.Get(context.Background(), site.URL+"/private/x")
	fmt.Println(err != nil)
	_, err = f.Get(context.Background(), "http://169.254.169.254/latest/meta-data/")
	fmt.Println(err)
	// Output:
	// 200 hello <nil>
	// true
	// fetch http://169.254.169.254/latest/meta-data/: fetch: address blocked: 169.254.169.254:80 is a link-local address (not allowed by --allow-networks)
}
