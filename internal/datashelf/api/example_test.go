package api_test

import (
	"bytes"
	"fmt"
	"net/http"
	"time"

	"github.com/quarrydb/quarry/internal/datashelf/api"
)

// A client signs a scraper request with its key id and secret; the path is
// the one it requests, including the /datashelf prefix.
func ExampleSign() {
	body := []byte(`{"url":"https://www.wob.com/en-gb/category/fiction","type":"category","priority":5}`)
	req, _ := http.NewRequest("POST", "http://quarry.local/datashelf/api/scraper/enqueue", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	api.Sign("crawler", []byte("s3cret"), req, body, time.Unix(1767225600, 0), "7f3a9c1e")
	fmt.Println(req.Header.Get("Authorization"))
	fmt.Println(req.Header.Get("X-Timestamp"), req.Header.Get("X-Nonce"))
	fmt.Println(len(req.Header.Get("X-Signature")))
	// Output:
	// Bearer crawler
	// 1767225600 7f3a9c1e
	// 64
}
