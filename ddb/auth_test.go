package ddb_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/quarrydb/quarry/ddb"
)

// TestSignatureV4 runs the store with credentials configured and checks
// what a real aws-sdk-go-v2 client sees for right and wrong secrets, stale
// dates and unsigned requests; in-process clients stay trusted.
func TestSignatureV4(t *testing.T) {
	if isExternal() {
		t.Skip("embedded store only")
	}
	s, err := ddb.Open(t.TempDir(), &ddb.Options{Credentials: map[string]string{"AKIDQUARRY": "s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	client := func(id, secret string) *dynamodb.Client {
		return dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
			Credentials: credentials.NewStaticCredentialsProvider(id, secret, ""), RetryMaxAttempts: 1})
	}
	ctx := context.Background()
	code := func(err error) string {
		var ae smithy.APIError
		if errors.As(err, &ae) {
			return ae.ErrorCode()
		}
		return "no API error: " + errString(err)
	}
	if _, err := client("AKIDQUARRY", "s3cret").ListTables(ctx, &dynamodb.ListTablesInput{}); err != nil {
		t.Fatalf("right secret: %v", err)
	}
	if got := code(func() error {
		_, err := client("AKIDQUARRY", "wrong").ListTables(ctx, &dynamodb.ListTablesInput{})
		return err
	}()); got != "InvalidSignatureException" {
		t.Errorf("wrong secret: %s", got)
	}
	if got := code(func() error {
		_, err := client("AKIDOTHER", "s3cret").ListTables(ctx, &dynamodb.ListTablesInput{})
		return err
	}()); got != "UnrecognizedClientException" {
		t.Errorf("unknown key: %s", got)
	}
	// In-process clients are trusted.
	if _, err := ddb.NewClient(s).ListTables(ctx, &dynamodb.ListTablesInput{}); err != nil {
		t.Errorf("in-process client: %v", err)
	}

	raw := func(sign func(*http.Request, string)) (int, string) {
		body := []byte(`{}`)
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/", bytes.NewReader(body))
		req.Header.Set("X-Amz-Target", "DynamoDB_20120810.ListTables")
		req.Header.Set("Content-Type", "application/x-amz-json-1.0")
		sum := sha256.Sum256(body)
		if sign != nil {
			sign(req, hex.EncodeToString(sum[:]))
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	signAt := func(at time.Time) func(*http.Request, string) {
		return func(r *http.Request, hash string) {
			err := v4.NewSigner().SignHTTP(ctx, aws.Credentials{AccessKeyID: "AKIDQUARRY", SecretAccessKey: "s3cret"}, r, hash, "dynamodb", "us-east-1", at)
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name string
		sign func(*http.Request, string)
		want string
	}{
		{"unsigned", nil, "MissingAuthenticationTokenException"},
		{"stale date", signAt(time.Now().Add(-time.Hour)), "Signature expired"},
		{"fresh date", signAt(time.Now()), ""},
	}
	for _, tt := range tests {
		status, body := raw(tt.sign)
		if tt.want == "" {
			if status != 200 {
				t.Errorf("%s: %d %s", tt.name, status, body)
			}
			continue
		}
		if status != 400 || !strings.Contains(body, tt.want) || !strings.Contains(body, "__type") {
			t.Errorf("%s: %d %s, want 400 with %q", tt.name, status, body, tt.want)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// TestSignatureV4UnsignedTargetReplay plays the attacker who captured a
// signed request whose X-Amz-Target header was not among its signed
// headers: sent again with X-Amz-Target DeleteItem over the same body
// (the same Key), its signature still matches, so the store must refuse
// an x-amz-* header the signature does not cover.
func TestSignatureV4UnsignedTargetReplay(t *testing.T) {
	if isExternal() {
		t.Skip("embedded store only")
	}
	s, err := ddb.Open(t.TempDir(), &ddb.Options{Credentials: map[string]string{"AKIDQUARRY": "s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	ctx := context.Background()
	in := ddb.NewClient(s)
	if _, err := in.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String("victims"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest}); err != nil {
		t.Fatal(err)
	}
	key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "victim"}}
	if _, err := in.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("victims"), Item: key}); err != nil {
		t.Fatal(err)
	}
	body := `{"TableName":"victims","Key":{"pk":{"S":"victim"}}}`
	sum := sha256.Sum256([]byte(body))
	send := func(target string, signTarget bool) (int, string) {
		r, _ := http.NewRequest(http.MethodPost, srv.URL+"/", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/x-amz-json-1.0")
		if signTarget {
			r.Header.Set("X-Amz-Target", "DynamoDB_20120810."+target)
		}
		if err := v4.NewSigner().SignHTTP(ctx, aws.Credentials{AccessKeyID: "AKIDQUARRY", SecretAccessKey: "s3cret"}, r, hex.EncodeToString(sum[:]), "dynamodb", "us-east-1", time.Now()); err != nil {
			t.Fatal(err)
		}
		// Set after signing: not among the signed headers.
		r.Header.Set("X-Amz-Target", "DynamoDB_20120810."+target)
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, body := send("GetItem", true); status != http.StatusOK {
		t.Fatalf("GetItem with X-Amz-Target signed: %d %s", status, body)
	}
	status, answer := send("DeleteItem", false)
	if status != http.StatusBadRequest || !strings.Contains(answer, "IncompleteSignatureException") || !strings.Contains(answer, "x-amz-target") {
		t.Errorf("DeleteItem with X-Amz-Target unsigned: %d %s, want 400 IncompleteSignatureException naming x-amz-target", status, answer)
	}
	out, err := in.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("victims"), Key: key})
	if err != nil || out.Item == nil {
		t.Fatalf("the item is gone after the replay (%v): an unsigned X-Amz-Target was obeyed", err)
	}
}
