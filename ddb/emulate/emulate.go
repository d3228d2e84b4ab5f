// Package emulate makes a DynamoDB endpoint answer like another engine
// where that engine lacks what quarry's systems use, so that their
// behaviour on it can be tested against the embedded store (quarry ddb
// serve --emulate).
package emulate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"
)

// alternatorUnsupported are the operations ScyllaDB Alternator does not
// implement among those quarry's systems use or probe: multi-item
// transactions and continuous backups (point-in-time recovery). Source:
// ScyllaDB's docs/alternator/compatibility.md, "Unimplemented API
// features" (TransactWriteItems and TransactGetItems, scylladb issue
// #5064; UpdateContinuousBackups, DescribeContinuousBackups and
// RestoreTableToPointInTime).
var alternatorUnsupported = map[string]bool{
	"TransactWriteItems":        true,
	"TransactGetItems":          true,
	"UpdateContinuousBackups":   true,
	"DescribeContinuousBackups": true,
	"RestoreTableToPointInTime": true,
	"ExecuteTransaction":        true,
}

// emulateAlternator wraps the store's DynamoDB endpoint so that it answers
// like ScyllaDB Alternator where Alternator differs in what quarry needs:
//
//   - an unimplemented operation is answered as Alternator's server does
//     for any operation it has no handler for (alternator/server.cc):
//     HTTP 400, UnknownOperationException, "Unsupported operation <Op>";
//   - stream records appear streamDelay after their write at the earliest
//     (Alternator Streams expose a change only after a confidence window,
//     10 s by default, where DynamoDB's usually appear within a second):
//     a GetRecords answer is held until its newest record is that old.
func emulateAlternator(next http.Handler, streamDelay time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := r.Header.Get("X-Amz-Target")
		_, op, _ := strings.Cut(target, ".")
		if strings.HasPrefix(target, "DynamoDB_20120810.") && alternatorUnsupported[op] {
			body, _ := json.Marshal(map[string]string{
				"__type":  "com.amazonaws.dynamodb.v20120810#UnknownOperationException",
				"message": "Unsupported operation " + op,
			})
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			// DynamoDB answers carry the body's CRC32; aws-sdk-go-v2 checks
			// it even when the header is missing (against 0).
			w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write(body)
			return
		}
		if target != "DynamoDBStreams_20120810.GetRecords" || streamDelay <= 0 {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		if rec.Code == http.StatusOK {
			var out struct {
				Records []struct {
					Dynamodb struct {
						ApproximateCreationDateTime float64
					}
				}
			}
			if json.Unmarshal(rec.Body.Bytes(), &out) == nil {
				var newest float64
				for _, x := range out.Records {
					newest = max(newest, x.Dynamodb.ApproximateCreationDateTime)
				}
				if newest > 0 {
					visible := time.Unix(0, int64(newest*1e9)).Add(streamDelay)
					select {
					case <-time.After(min(time.Until(visible), streamDelay)):
					case <-r.Context().Done():
						return
					}
				}
			}
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		// The checksum header is computed again over the body sent: what
		// the recorder holds may be a value set after the body was
		// written, which a direct answer never sends (SDKs check it).
		body := rec.Body.Bytes()
		w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
		w.WriteHeader(rec.Code)
		_, _ = bytes.NewReader(body).WriteTo(w)
	})
}

// Handler returns the handler of `quarry ddb serve --emulate NAME`.
func Handler(name string, streamDelay time.Duration, h http.Handler) (http.Handler, error) {
	switch name {
	case "":
		return h, nil
	case "alternator":
		return emulateAlternator(h, streamDelay), nil
	}
	return nil, fmt.Errorf("--emulate %q: want alternator (or nothing)", name)
}
