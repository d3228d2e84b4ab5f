package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // weekly windows name IANA zones; hosts without zoneinfo still know them

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/internal/platform/ddbitem"
)

// Maintenance windows are items of the USER table beside their user's
// item, as channels are: PK = <user id>, SK = "MAINT#<window id>", so a
// user's windows are one Query and another user's window is not found by
// its id. The user's maintenanceCount, updated in the same transaction as
// the put or delete, bounds their number (MaxMaintenance).
const skMaintenance = "MAINT#"

// MaxMaintenance is the most maintenance windows a user may have.
const MaxMaintenance = 20

// Weekdays are the days of a weekly window, as the API names them, in
// time.Weekday order.
var Weekdays = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// Maintenance is a user's maintenance window: one-off (Start, End) or
// weekly. It covers the checks it names, the checks carrying one of its
// tags, or, with neither, all the user's checks. While it is active the
// checks run and record their results, and their alerts are not sent.
type Maintenance struct {
	ID       string   `json:"id"`
	Name     string   `json:"name"`
	Start    string   `json:"start,omitempty"` // RFC 3339, one-off windows
	End      string   `json:"end,omitempty"`
	Weekly   *Weekly  `json:"weekly,omitempty"`
	CheckIDs []string `json:"checkIds"`
	Tags     []string `json:"tags"`
	// CreatedAt is set by CreateMaintenance.
	CreatedAt string `json:"createdAt"`
}

// Weekly is a window that recurs every week: from Start ("15:04") on Day
// in Timezone, for DurationMinutes.
type Weekly struct {
	Day             string `json:"day"` // one of Weekdays
	Start           string `json:"start"`
	DurationMinutes int    `json:"durationMinutes"`
	Timezone        string `json:"timezone"`
}

// Covers reports whether m applies to check c: c is one of its checks,
// carries one of its tags (ignoring case), or m names neither.
func (m Maintenance) Covers(c Check) bool {
	if len(m.CheckIDs) == 0 && len(m.Tags) == 0 {
		return true
	}
	if slices.Contains(m.CheckIDs, c.ID) {
		return true
	}
	for _, t := range m.Tags {
		if slices.ContainsFunc(c.Tags, func(ct string) bool { return strings.EqualFold(ct, t) }) {
			return true
		}
	}
	return false
}

// ActiveAt reports whether m is in force at t: a one-off window from its
// start (included) to its end (excluded), a weekly one from its start in
// its zone on its day for its duration (an occurrence begun the week
// before still counts). A window that does not parse is never active.
func (m Maintenance) ActiveAt(t time.Time) bool {
	if m.Weekly == nil {
		start, err1 := time.Parse(time.RFC3339, m.Start)
		end, err2 := time.Parse(time.RFC3339, m.End)
		return err1 == nil && err2 == nil && !t.Before(start) && t.Before(end)
	}
	w := m.Weekly
	loc, err := time.LoadLocation(w.Timezone)
	day := slices.Index(Weekdays, w.Day)
	hm, err2 := time.Parse("15:04", w.Start)
	if err != nil || err2 != nil || day < 0 {
		return false
	}
	lt := t.In(loc)
	// The occurrence on the window's day of t's week, and the week before.
	d := lt.AddDate(0, 0, day-int(lt.Weekday()))
	for _, back := range []int{0, -7} {
		o := time.Date(d.Year(), d.Month(), d.Day()+back, hm.Hour(), hm.Minute(), 0, 0, loc)
		if !t.Before(o) && t.Before(o.Add(time.Duration(w.DurationMinutes)*time.Minute)) {
			return true
		}
	}
	return false
}

// InMaintenance reports whether one of ws is active at t and covers c.
func InMaintenance(ws []Maintenance, c Check, t time.Time) bool {
	return slices.ContainsFunc(ws, func(m Maintenance) bool { return m.Covers(c) && m.ActiveAt(t) })
}

func parseMaintenance(it map[string]av) Maintenance {
	m := Maintenance{
		ID: strings.TrimPrefix(ddbitem.String(it, "SK"), skMaintenance), Name: ddbitem.String(it, "name"),
		Start: ddbitem.String(it, "start"), End: ddbitem.String(it, "end"),
		CheckIDs: stringSet(it, "checkIds"), Tags: stringSet(it, "tags"), CreatedAt: ddbitem.String(it, "createdAt"),
	}
	if w, ok := it["weekly"].(*types.AttributeValueMemberM); ok {
		m.Weekly = &Weekly{Day: ddbitem.String(w.Value, "day"), Start: ddbitem.String(w.Value, "start"),
			DurationMinutes: int(ddbitem.Int(w.Value, "durationMinutes")), Timezone: ddbitem.String(w.Value, "timezone")}
	}
	if m.CheckIDs == nil {
		m.CheckIDs = []string{}
	}
	if m.Tags == nil {
		m.Tags = []string{}
	}
	return m
}

// CreateMaintenance stores a new window of userID (its ID and CreatedAt
// are set here), in one transaction with the user's maintenanceCount
// increment conditioned on the count being under MaxMaintenance. The
// caller validates the window.
func (s *Store) CreateMaintenance(ctx context.Context, userID string, m Maintenance) (Maintenance, error) {
	id, err := s.randomID("mnt_", 12)
	if err != nil {
		return Maintenance{}, err
	}
	m.ID, m.CreatedAt = id, ddbitem.FormatTime(s.now())
	item := map[string]av{"PK": ddbitem.S(userID), "SK": ddbitem.S(skMaintenance + id), "name": ddbitem.S(m.Name),
		"createdAt": ddbitem.S(m.CreatedAt)}
	if m.Weekly != nil {
		item["weekly"] = &types.AttributeValueMemberM{Value: map[string]av{
			"day": ddbitem.S(m.Weekly.Day), "start": ddbitem.S(m.Weekly.Start),
			"durationMinutes": ddbitem.N(int64(m.Weekly.DurationMinutes)), "timezone": ddbitem.S(m.Weekly.Timezone),
		}}
	} else {
		item["start"], item["end"] = ddbitem.S(m.Start), ddbitem.S(m.End)
	}
	if len(m.CheckIDs) > 0 {
		item["checkIds"] = tagsValue(m.CheckIDs)
	}
	if len(m.Tags) > 0 {
		item["tags"] = tagsValue(m.Tags)
	}
	_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{
			TableName:                 aws.String(s.names.Users),
			Key:                       key(userID, skUser),
			UpdateExpression:          aws.String("SET maintenanceCount = if_not_exists(maintenanceCount, :zero) + :one"),
			ConditionExpression:       aws.String("attribute_exists(PK) AND (attribute_not_exists(maintenanceCount) OR maintenanceCount < :max)"),
			ExpressionAttributeValues: map[string]av{":zero": ddbitem.N(0), ":one": ddbitem.N(1), ":max": ddbitem.N(MaxMaintenance)},
		}},
		{Put: &types.Put{
			TableName: aws.String(s.names.Users), Item: item,
			ConditionExpression: aws.String("attribute_not_exists(PK)"),
		}},
	}})
	if r := ddbitem.CancelReasons(err); len(r) > 0 && r[0] == "ConditionalCheckFailed" {
		if _, gerr := s.GetUser(ctx, userID); gerr != nil {
			return Maintenance{}, gerr
		}
		return Maintenance{}, fmt.Errorf("%w: %d maintenance windows at most", ErrLimit, MaxMaintenance)
	}
	if err != nil {
		return Maintenance{}, fmt.Errorf("checks: create maintenance window: %w", err)
	}
	if m.CheckIDs == nil {
		m.CheckIDs = []string{}
	}
	if m.Tags == nil {
		m.Tags = []string{}
	}
	return m, nil
}

// ListMaintenance returns userID's maintenance windows in id order.
func (s *Store) ListMaintenance(ctx context.Context, userID string) ([]Maintenance, error) {
	var (
		out   []Maintenance
		start map[string]av
	)
	for {
		res, err := s.client.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(s.names.Users),
			KeyConditionExpression:    aws.String("PK = :u AND begins_with(SK, :p)"),
			ExpressionAttributeValues: map[string]av{":u": ddbitem.S(userID), ":p": ddbitem.S(skMaintenance)},
			ConsistentRead:            aws.Bool(true),
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return nil, fmt.Errorf("checks: list maintenance windows: %w", err)
		}
		for _, it := range res.Items {
			out = append(out, parseMaintenance(it))
		}
		if len(res.LastEvaluatedKey) == 0 {
			return out, nil
		}
		start = res.LastEvaluatedKey
	}
}

// DeleteMaintenance deletes a window and frees its slot, in one
// transaction (ErrNotFound for an unknown or another user's window).
func (s *Store) DeleteMaintenance(ctx context.Context, userID, id string) error {
	if id == "" {
		return fmt.Errorf("%w: maintenance window", ErrNotFound)
	}
	_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Delete: &types.Delete{
			TableName: aws.String(s.names.Users), Key: key(userID, skMaintenance+id),
			ConditionExpression: aws.String("attribute_exists(PK)"),
		}},
		{Update: &types.Update{
			TableName: aws.String(s.names.Users), Key: key(userID, skUser),
			UpdateExpression:          aws.String("SET maintenanceCount = maintenanceCount - :one"),
			ConditionExpression:       aws.String("maintenanceCount > :zero"),
			ExpressionAttributeValues: map[string]av{":zero": ddbitem.N(0), ":one": ddbitem.N(1)},
		}},
	}})
	if r := ddbitem.CancelReasons(err); len(r) > 0 && r[0] == "ConditionalCheckFailed" {
		return fmt.Errorf("%w: maintenance window %s", ErrNotFound, id)
	}
	if err != nil {
		return fmt.Errorf("checks: delete maintenance window: %w", err)
	}
	return nil
}
