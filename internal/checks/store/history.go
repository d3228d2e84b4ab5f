package store

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/internal/checks/tables"
	"github.com/quarrydb/quarry/internal/platform/ddbitem"
)

// Daily rollups: one item per check and UTC day, PK = <check id>, SK =
// "DAY#<YYYY-MM-DD>", counting the day's runs (runs, up) and summing their
// response times (responseMs), written in the transaction that records a
// run and expired by TTL DayRetention after the day. They let a check's
// uptime over 7, 30 and 90 days (the public status page's daily bars) be
// read in one small Query, whatever the run-history retention.
const (
	skDay = "DAY#"
	// DayRetention is how long a daily rollup is kept after its day: the
	// status page's 90 daily bars, with two days of margin for time zones
	// and the TTL sweep's delay.
	DayRetention = 92 * 24 * time.Hour
	dayLayout    = "2006-01-02"
)

// Day is a check's daily rollup.
type Day struct {
	// Date is the UTC day, YYYY-MM-DD.
	Date       string `json:"date"`
	Runs       int64  `json:"runs"`
	Up         int64  `json:"up"`
	ResponseMs int64  `json:"responseMs"`
}

// dayUpdate is the transaction item adding one run to its day's rollup.
func (s *Store) dayUpdate(id string, o Outcome) types.TransactWriteItem {
	day := o.At.UTC().Truncate(24 * time.Hour)
	up := int64(0)
	if st, _ := o.Result["status"].(string); st == "UP" {
		up = 1
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(s.names.Checks), Key: key(id, skDay+day.Format(dayLayout)),
		UpdateExpression: aws.String("ADD runs :one, up :up, responseMs :rt SET " + tables.TTLAttribute + " = :exp"),
		ExpressionAttributeValues: map[string]av{":one": ddbitem.N(1), ":up": ddbitem.N(up),
			":rt": ddbitem.N(max(number(o.Result["responseTime"]), 0)), ":exp": ddbitem.N(day.Add(DayRetention).Unix())},
	}}
}

// number reads a JSON-ish number.
func number(v any) int64 {
	switch n := v.(type) {
	case int:
		return int64(n)
	case int64:
		return n
	case float64:
		return int64(n)
	}
	return 0
}

// Days returns a user's check's daily rollups from the day of since on,
// oldest first (days without runs are absent).
func (s *Store) Days(ctx context.Context, userID, id string, since time.Time) ([]Day, error) {
	if _, err := s.GetCheck(ctx, userID, id); err != nil {
		return nil, err
	}
	out, err := s.client.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.names.Checks),
		KeyConditionExpression:    aws.String("PK = :id AND SK BETWEEN :lo AND :hi"),
		ExpressionAttributeValues: map[string]av{":id": ddbitem.S(id), ":lo": ddbitem.S(skDay + since.UTC().Format(dayLayout)), ":hi": ddbitem.S(skDay + "~")},
	})
	if err != nil {
		return nil, fmt.Errorf("checks: days: %w", err)
	}
	days := make([]Day, 0, len(out.Items))
	for _, it := range out.Items {
		days = append(days, Day{Date: strings.TrimPrefix(ddbitem.String(it, "SK"), skDay), Runs: ddbitem.Int(it, "runs"),
			Up: ddbitem.Int(it, "up"), ResponseMs: ddbitem.Int(it, "responseMs")})
	}
	return days, nil
}

// ResultsBefore returns a page of a user's check's history, newest first:
// the runs before the run at before (a Run.At of the previous page; "" for
// the first page), at most limit (1 to 1000).
func (s *Store) ResultsBefore(ctx context.Context, userID, id, before string, limit int) ([]Run, error) {
	if before == "" {
		return s.Results(ctx, userID, id, limit)
	}
	if _, err := time.Parse(ddbitem.TimeLayout, before); err != nil {
		return nil, fmt.Errorf("%w: before %q is not a run's time", ErrInvalid, before)
	}
	if _, err := s.GetCheck(ctx, userID, id); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	out, err := s.client.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.names.Checks),
		KeyConditionExpression:    aws.String("PK = :id AND SK BETWEEN :lo AND :hi"),
		ExpressionAttributeValues: map[string]av{":id": ddbitem.S(id), ":lo": ddbitem.S(skResult), ":hi": ddbitem.S(skResult + before)},
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(int32(limit + 1)), // BETWEEN includes the run at before
	})
	if err != nil {
		return nil, fmt.Errorf("checks: results: %w", err)
	}
	runs := make([]Run, 0, len(out.Items))
	for _, it := range out.Items {
		at := ddbitem.String(it, "SK")[len(skResult):]
		if at == before || len(runs) == limit {
			continue
		}
		runs = append(runs, Run{At: at, Result: anyMap(it, "result")})
	}
	return runs, nil
}

// The public status page: a user may publish a read-only page of their
// checks at a URL holding a random token. The token is on the USER item
// (statusPage), and a guard item PK = "STATUSPAGE#<sha256 hex of the
// token>", SK = "STATUSPAGE" (userid) finds the user from it, in the USER
// table like the API tokens' items. Turning the page off or making a new
// token deletes the old guard item in the same transaction, so the old URL
// stops answering at once.
const skStatusPage = "STATUSPAGE"

func statusPageKey(token string) map[string]av {
	return key(skStatusPage+"#"+HashToken(token), skStatusPage)
}

// EnableStatusPage publishes the user's status page under a new token
// (replacing the old one, whose URL stops working) and returns the token.
func (s *Store) EnableStatusPage(ctx context.Context, userID string) (string, error) {
	u, err := s.GetUser(ctx, userID)
	if err != nil {
		return "", err
	}
	b := make([]byte, 24)
	if _, err := s.opts.Rand.Read(b); err != nil {
		return "", fmt.Errorf("checks: random: %w", err)
	}
	token := base64.RawURLEncoding.EncodeToString(b)
	guard := statusPageKey(token)
	guard["userid"] = ddbitem.S(userID)
	cond, values := "attribute_exists(PK) AND attribute_not_exists(statusPage)", map[string]av{":t": ddbitem.S(token)}
	if u.StatusPage != "" {
		cond, values[":old"] = "statusPage = :old", ddbitem.S(u.StatusPage)
	}
	items := []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(s.names.Users), Item: guard, ConditionExpression: aws.String("attribute_not_exists(PK)")}},
		{Update: &types.Update{TableName: aws.String(s.names.Users), Key: key(userID, skUser),
			UpdateExpression: aws.String("SET statusPage = :t"), ConditionExpression: aws.String(cond), ExpressionAttributeValues: values}},
	}
	if u.StatusPage != "" {
		items = append(items, types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.names.Users), Key: statusPageKey(u.StatusPage)}})
	}
	if _, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items}); err != nil {
		if len(ddbitem.CancelReasons(err)) > 0 {
			return "", fmt.Errorf("%w: the status page changed meanwhile; try again", ErrState)
		}
		return "", fmt.Errorf("checks: enable status page: %w", err)
	}
	return token, nil
}

// DisableStatusPage unpublishes the user's status page: its URL answers
// no more. Disabling a page that is off does nothing.
func (s *Store) DisableStatusPage(ctx context.Context, userID string) error {
	u, err := s.GetUser(ctx, userID)
	if err != nil || u.StatusPage == "" {
		return err
	}
	_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{TableName: aws.String(s.names.Users), Key: key(userID, skUser),
			UpdateExpression: aws.String("REMOVE statusPage"), ConditionExpression: aws.String("statusPage = :old"),
			ExpressionAttributeValues: map[string]av{":old": ddbitem.S(u.StatusPage)}}},
		{Delete: &types.Delete{TableName: aws.String(s.names.Users), Key: statusPageKey(u.StatusPage)}},
	}})
	if len(ddbitem.CancelReasons(err)) > 0 {
		return fmt.Errorf("%w: the status page changed meanwhile; try again", ErrState)
	}
	if err != nil {
		return fmt.Errorf("checks: disable status page: %w", err)
	}
	return nil
}

// StatusPageUser returns the user whose status page token is token, or
// ErrNotFound (no such page, or turned off).
func (s *Store) StatusPageUser(ctx context.Context, token string) (User, error) {
	if token == "" || len(token) > 100 {
		return User{}, fmt.Errorf("%w: status page", ErrNotFound)
	}
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.names.Users), Key: statusPageKey(token), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return User{}, fmt.Errorf("checks: status page: %w", err)
	}
	if out.Item == nil {
		return User{}, fmt.Errorf("%w: status page", ErrNotFound)
	}
	u, err := s.GetUser(ctx, ddbitem.String(out.Item, "userid"))
	if err != nil {
		return User{}, err
	}
	if u.StatusPage == "" || subtle.ConstantTimeCompare([]byte(u.StatusPage), []byte(token)) != 1 {
		return User{}, fmt.Errorf("%w: status page", ErrNotFound)
	}
	return u, nil
}
