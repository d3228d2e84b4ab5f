package ddb_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/ddb"
)

// The token crash test runs a child that applies tokened transactions one
// at a time, each adding 1 to a counter, and prints one line per
// acknowledged transaction. The parent kills it with SIGKILL, reopens the
// store and retries every acknowledged transaction and the one in flight
// with the same tokens: the counter must end up counting each of them
// exactly once, because a token record is committed in the same batch as
// its transaction.

const tokenCrashTable = "token-crash"

// tokenCrashTx is transaction i of the token crash test.
func tokenCrashTx(i int) *dynamodb.TransactWriteItemsInput {
	return &dynamodb.TransactWriteItemsInput{
		ClientRequestToken: aws.String("crash-" + strconv.Itoa(i)),
		TransactItems: []types.TransactWriteItem{
			txUpdate(tokenCrashTable, pk("counter"), "ADD n :one", eaValues(":one", avN("1"))),
			txPut(tokenCrashTable, attrs{"pk": avS("tx-" + strconv.Itoa(i))}),
		},
	}
}

func tokenCrashChild(dir string) {
	s, err := ddb.Open(dir, nil)
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(3)
	}
	c := ddb.NewClient(s)
	ctx := context.Background()
	if _, err := c.CreateTable(ctx, tableSpec{Name: tokenCrashTable, Hash: "pk:S"}.input()); err != nil {
		fmt.Println("create:", err)
		os.Exit(3)
	}
	fmt.Println("ready")
	for i := 0; ; i++ {
		if _, err := c.TransactWriteItems(ctx, tokenCrashTx(i)); err != nil {
			fmt.Println("transact:", err)
			os.Exit(4)
		}
		fmt.Printf("ack %d\n", i)
	}
}

func TestCrashKill9TransactTokens(t *testing.T) {
	if externalEndpoint() != "" {
		t.Skip("the crash test drives the embedded store")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "QUARRY_TOKEN_CRASH_CHILD="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	last := -1
	sc := bufio.NewScanner(out)
	deadline := time.Now().Add(10 * time.Second)
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) == 2 && f[0] == "ack" {
			last, _ = strconv.Atoi(f[1])
		} else if line != "ready" {
			t.Fatalf("child: %s", line)
		}
		if last >= 300 || time.Now().After(deadline) {
			break
		}
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	for sc.Scan() { // acks printed before the kill landed
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "ack" {
			last, _ = strconv.Atoi(f[1])
		}
	}
	cmd.Wait()
	if last < 20 {
		t.Fatalf("only %d acknowledged transactions before the kill", last+1)
	}

	s, err := ddb.Open(dir, &ddb.Options{TTLInterval: -1})
	if err != nil {
		t.Fatalf("reopen after kill -9: %v", err)
	}
	defer s.Close()
	c := ddb.NewClient(s, noRetry)
	n, _ := strconv.Atoi(nAttr(getItem(t, c, tokenCrashTable, pk("counter")), "n"))
	if n != last+1 && n != last+2 {
		t.Fatalf("counter %d after the kill, %d transactions acknowledged", n, last+1)
	}
	// Retry every acknowledged transaction and the one in flight.
	for i := 0; i <= last+1; i++ {
		_, err := c.TransactWriteItems(tctx(t), tokenCrashTx(i))
		requireNoError(t, err, fmt.Sprintf("retry of transaction %d", i))
	}
	if got := nAttr(getItem(t, c, tokenCrashTable, pk("counter")), "n"); got != strconv.Itoa(last+2) {
		t.Fatalf("counter %s after the retries, want %d (%d before them, %d acknowledged)", got, last+2, n, last+1)
	}
	// A retry of the transaction in flight at the kill, with other
	// parameters, is a mismatch whether or not that transaction landed.
	in := tokenCrashTx(last + 1)
	in.TransactItems = in.TransactItems[:1]
	_, err = c.TransactWriteItems(tctx(t), in)
	requireAPIError(t, err, "IdempotentParameterMismatchException", "same client token")
}
