package ddbitem

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestReadWrite(t *testing.T) {
	it := map[string]types.AttributeValue{"s": S("x"), "n": N(42), "f": &types.AttributeValueMemberN{Value: "2.5"}, "b": Bool(true)}
	if String(it, "s") != "x" || String(it, "n") != "" || String(it, "missing") != "" {
		t.Fatal("String")
	}
	if Int(it, "n") != 42 || Int(it, "f") != 2 || Int(it, "s") != 0 {
		t.Fatal("Int")
	}
	if Float(it, "f") != 2.5 || Float(it, "missing") != 0 {
		t.Fatal("Float")
	}
}

func TestErrors(t *testing.T) {
	ccf := fmt.Errorf("wrapped: %w", &types.ConditionalCheckFailedException{})
	if !ConditionFailed(ccf) || ConditionFailed(errors.New("other")) {
		t.Fatal("ConditionFailed")
	}
	tce := fmt.Errorf("wrapped: %w", &types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{
		{Code: aws.String("None")}, {Code: aws.String("ConditionalCheckFailed")}, {},
	}})
	if got := fmt.Sprint(CancelReasons(tce)); got != "[None ConditionalCheckFailed ]" {
		t.Fatalf("CancelReasons %s", got)
	}
	if CancelReasons(ccf) != nil {
		t.Fatal("CancelReasons of another error")
	}
}

func TestTimeRoundTripSortsAsText(t *testing.T) {
	a := time.Date(2026, 11, 26, 9, 5, 3, 120_000_000, time.FixedZone("KST", 9*3600))
	b := a.Add(time.Millisecond)
	if got := FormatTime(a); got != "2026-11-26T00:05:03.120Z" {
		t.Fatalf("FormatTime = %s", got)
	}
	if !(FormatTime(a) < FormatTime(b)) || !ParseTime(FormatTime(a)).Equal(a) {
		t.Fatal("stored times must sort as text and parse back")
	}
	if !ParseTime("garbage").IsZero() || !ParseTime("").IsZero() {
		t.Fatal("malformed times parse as zero")
	}
}
