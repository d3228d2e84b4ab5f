package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/internal/checks/tables"
	"github.com/quarrydb/quarry/internal/platform/ddbitem"
)

// Check is a CHECK item.
type Check struct {
	ID     string `json:"id"`
	UserID string `json:"userid"`
	// Name is the name the user gave the check, "" when none (the API
	// and the console then show DisplayName: the URL's host).
	Name string `json:"name"`
	// Tags are the user's labels of the check, sorted; nil when none.
	Tags           []string       `json:"tags"`
	URL            string         `json:"url"`
	Type           string         `json:"checkType"`
	DelayMs        int64          `json:"delayMs"`
	Status         string         `json:"status"`
	Attributes     map[string]any `json:"attributes"`
	CreatedAt      string         `json:"createdAt"`
	UpdatedAt      string         `json:"updatedAt"`
	LastExecutedAt string         `json:"lastExecutedAt,omitempty"`
	LastResult     map[string]any `json:"lastResult,omitempty"`
	// Scheduling state (extensions).
	NextRunAt     time.Time `json:"nextRunAt"`
	LeaseOwner    string    `json:"-"`
	LeaseUntil    time.Time `json:"-"`
	FailCount     int       `json:"-"`
	AlertState    string    `json:"alertState,omitempty"`
	FailureReason string    `json:"failureReason,omitempty"`
	// Alert delivery outcome (extensions; see User).
	LastAlertAt      string `json:"lastAlertAt,omitempty"`
	LastAlertError   string `json:"lastAlertError,omitempty"`
	LastAlertErrorAt string `json:"lastAlertErrorAt,omitempty"`
	// Channels are the ids of the notification channels its alerts go
	// to (an extension; none: the user's default channels).
	Channels []string `json:"channels,omitempty"`
}

// DisplayName is the check's name, or its URL's host when it has none.
func (c Check) DisplayName() string {
	if c.Name != "" {
		return c.Name
	}
	if u, err := url.Parse(c.URL); err == nil && u.Hostname() != "" {
		return u.Hostname()
	}
	return c.URL
}

func ms(t time.Time) int64 { return t.UnixMilli() }

// tagsValue is the tags attribute: a string set (DynamoDB has no empty
// set: no tags is no attribute).
func tagsValue(tags []string) av { return &types.AttributeValueMemberSS{Value: tags} }

// stringSet reads a string set attribute, sorted; nil when absent.
func stringSet(it map[string]av, k string) []string {
	ss, ok := it[k].(*types.AttributeValueMemberSS)
	if !ok || len(ss.Value) == 0 {
		return nil
	}
	out := slices.Clone(ss.Value)
	slices.Sort(out)
	return out
}

func fromMs(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

func parseCheck(it map[string]av) Check {
	return Check{
		ID: ddbitem.String(it, "PK"), UserID: ddbitem.String(it, "userid"), Name: ddbitem.String(it, "name"), Tags: stringSet(it, "tags"),
		URL: ddbitem.String(it, "url"), Type: ddbitem.String(it, "checkType"),
		DelayMs: ddbitem.Int(it, "delayMs"), Status: ddbitem.String(it, "status"), Attributes: anyMap(it, "attributes"),
		CreatedAt: ddbitem.String(it, "createdAt"), UpdatedAt: ddbitem.String(it, "updatedAt"),
		LastExecutedAt: ddbitem.String(it, "lastExecutedAt"), LastResult: anyMap(it, "lastResult"),
		NextRunAt: fromMs(ddbitem.Int(it, "nextRunAt")), LeaseOwner: ddbitem.String(it, "leaseOwner"),
		LeaseUntil: fromMs(ddbitem.Int(it, "leaseUntil")), FailCount: int(ddbitem.Int(it, "failCount")),
		AlertState: ddbitem.String(it, "alertState"), FailureReason: ddbitem.String(it, "failureReason"),
		LastAlertAt: ddbitem.String(it, "lastAlertAt"), LastAlertError: ddbitem.String(it, "lastAlertError"), LastAlertErrorAt: ddbitem.String(it, "lastAlertErrorAt"),
		Channels: stringList(it, "channels"),
	}
}

// stringList reads a list of strings (nil when absent).
func stringList(it map[string]av, k string) []string {
	l, ok := it[k].(*types.AttributeValueMemberL)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(l.Value))
	for _, v := range l.Value {
		if s, ok := v.(*types.AttributeValueMemberS); ok {
			out = append(out, s.Value)
		}
	}
	return out
}

// listValue is a list of strings as an attribute.
func listValue(ss []string) av {
	l := make([]av, len(ss))
	for i, s := range ss {
		l[i] = ddbitem.S(s)
	}
	return &types.AttributeValueMemberL{Value: l}
}

// CreateCheck writes a new ACTIVE check for a user, in one transaction
// with the user's checkCount increment conditioned on the user being
// ACTIVE and under checkLimit: the limit holds however many creates race.
// firstRun is when it first runs (the caller spreads them with jitter).
func (s *Store) CreateCheck(ctx context.Context, c Check, firstRun time.Time) (Check, error) {
	id, err := s.randomID("chk_", 12)
	if err != nil {
		return Check{}, err
	}
	now := ddbitem.FormatTime(s.now())
	c.ID, c.Status, c.CreatedAt, c.UpdatedAt, c.NextRunAt = id, CheckActive, now, now, fromMs(ms(firstRun)) // as stored
	attrs, err := mapValue(c.Attributes)
	if err != nil {
		return Check{}, err
	}
	item := map[string]av{
		"PK": ddbitem.S(id), "SK": ddbitem.S(skCheck), "userid": ddbitem.S(c.UserID), "url": ddbitem.S(c.URL),
		"checkType": ddbitem.S(c.Type), "delayMs": ddbitem.N(c.DelayMs), "status": ddbitem.S(CheckActive),
		"attributes": attrs, "createdAt": ddbitem.S(now), "updatedAt": ddbitem.S(now),
		"nextRunAt": ddbitem.N(ms(c.NextRunAt)), "failCount": ddbitem.N(0),
	}
	if len(c.Channels) > 0 {
		item["channels"] = listValue(c.Channels)
	}
	if c.Name != "" {
		item["name"] = ddbitem.S(c.Name)
	}
	if len(c.Tags) > 0 {
		c.Tags = slices.Sorted(slices.Values(c.Tags))
		item["tags"] = tagsValue(c.Tags)
	} else {
		c.Tags = nil
	}
	_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{
			TableName:                 aws.String(s.names.Users),
			Key:                       key(c.UserID, skUser),
			UpdateExpression:          aws.String("SET checkCount = if_not_exists(checkCount, :zero) + :one"),
			ConditionExpression:       aws.String("#s = :active AND (attribute_not_exists(checkCount) OR checkCount < checkLimit)"),
			ExpressionAttributeNames:  map[string]string{"#s": "status"},
			ExpressionAttributeValues: map[string]av{":zero": ddbitem.N(0), ":one": ddbitem.N(1), ":active": ddbitem.S(UserActive)},
		}},
		{Put: &types.Put{
			TableName:           aws.String(s.names.Checks),
			Item:                item,
			ConditionExpression: aws.String("attribute_not_exists(PK)"),
		}},
	}})
	if r := ddbitem.CancelReasons(err); len(r) > 0 && r[0] == "ConditionalCheckFailed" {
		u, gerr := s.GetUser(ctx, c.UserID)
		switch {
		case gerr != nil:
			return Check{}, gerr
		case u.Status != UserActive:
			return Check{}, fmt.Errorf("%w: user %s", ErrSuspended, u.ID)
		default:
			return Check{}, fmt.Errorf("%w: %d of %d checks (tier %s)", ErrLimit, u.CheckCount, u.CheckLimit, u.Tier)
		}
	}
	if err != nil {
		return Check{}, fmt.Errorf("checks: create check: %w", err)
	}
	return c, nil
}

// GetCheck reads a check; ErrNotFound also for another user's check
// (userID "" skips the ownership test: the scheduler).
func (s *Store) GetCheck(ctx context.Context, userID, id string) (Check, error) {
	if id == "" {
		return Check{}, fmt.Errorf("%w: check", ErrNotFound)
	}
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.names.Checks), Key: key(id, skCheck), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Check{}, fmt.Errorf("checks: get check: %w", err)
	}
	if out.Item == nil {
		return Check{}, fmt.Errorf("%w: check %s", ErrNotFound, id)
	}
	c := parseCheck(out.Item)
	if userID != "" && c.UserID != userID {
		return Check{}, fmt.Errorf("%w: check %s", ErrNotFound, id)
	}
	return c, nil
}

// ListChecks returns a user's checks through the user-check index.
func (s *Store) ListChecks(ctx context.Context, userID string) ([]Check, error) {
	var out []Check
	p := dynamodb.NewQueryPaginator(s.client, &dynamodb.QueryInput{
		TableName: aws.String(s.names.Checks), IndexName: aws.String(tables.UserChecksIndex),
		KeyConditionExpression:    aws.String("userid = :u"),
		ExpressionAttributeValues: map[string]av{":u": ddbitem.S(userID)},
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("checks: list checks: %w", err)
		}
		for _, it := range page.Items {
			out = append(out, parseCheck(it))
		}
	}
	return out, nil
}

// Patch is a partial update of a check; nil fields are left alone.
type Patch struct {
	// Name: "" removes the name (the check is shown by its host).
	Name *string
	// Tags: empty removes them all.
	Tags *[]string
	URL  *string
	// Type changes the check type (it also resets the unparseable count).
	Type       *string
	DelayMs    *int64
	Attributes map[string]any
	// Channels: empty removes them (the check alerts the user's default
	// channels again).
	Channels *[]string
	// NextRunAt, when set, moves the check's next run (a schedule change:
	// see NextRunAfterChange); it is published to other processes'
	// schedulers through the schedule change log.
	NextRunAt *time.Time
}

// NextRunAfterChange is when a check runs next after a PATCH: at once
// when its URL changed (the new target is checked now); when its period
// changed, one new period after the start of the period in progress
// (nextRunAt - old delayMs), or now if that has passed; else unchanged.
// ok is false when the schedule does not change.
func NextRunAfterChange(cur Check, urlChanged bool, newDelayMs int64, now time.Time) (next time.Time, ok bool) {
	now = fromMs(ms(now))
	if urlChanged {
		return now, true
	}
	if newDelayMs == cur.DelayMs || newDelayMs <= 0 {
		return cur.NextRunAt, false
	}
	start := cur.NextRunAt.Add(-time.Duration(cur.DelayMs) * time.Millisecond)
	next = start.Add(time.Duration(newDelayMs) * time.Millisecond)
	if next.Before(now) {
		next = now
	}
	return next, true
}

// UpdateCheck applies a patch to a user's check in one conditional
// write: every field of the patch is written, or none. A changed URL,
// type or attributes clear the alert state (the new target starts
// afresh).
func (s *Store) UpdateCheck(ctx context.Context, userID, id string, p Patch) (Check, error) {
	update := "SET updatedAt = :now"
	values := map[string]av{":now": ddbitem.S(ddbitem.FormatTime(s.now())), ":u": ddbitem.S(userID)}
	var removes []string
	clearAlert := false
	if p.Name != nil {
		if *p.Name == "" {
			removes = append(removes, "#name")
		} else {
			update += ", #name = :name"
			values[":name"] = ddbitem.S(*p.Name)
		}
	}
	if p.Tags != nil {
		if len(*p.Tags) == 0 {
			removes = append(removes, "#tags")
		} else {
			update += ", #tags = :tags"
			values[":tags"] = tagsValue(*p.Tags)
		}
	}
	if p.URL != nil {
		update += ", #url = :url"
		values[":url"] = ddbitem.S(*p.URL)
		clearAlert = true
	}
	if p.Type != nil {
		update += ", checkType = :type, failCount = :zero"
		values[":type"], values[":zero"] = ddbitem.S(*p.Type), ddbitem.N(0)
		clearAlert = true
	}
	if p.DelayMs != nil {
		update += ", delayMs = :d"
		values[":d"] = ddbitem.N(*p.DelayMs)
	}
	if p.Attributes != nil {
		a, err := mapValue(p.Attributes)
		if err != nil {
			return Check{}, err
		}
		update += ", attributes = :a"
		values[":a"] = a
		clearAlert = true
	}
	if p.Channels != nil {
		if len(*p.Channels) == 0 {
			removes = append(removes, "channels")
		} else {
			update += ", channels = :ch"
			values[":ch"] = listValue(*p.Channels)
		}
	}
	if p.NextRunAt != nil {
		update += ", nextRunAt = :next"
		values[":next"] = ddbitem.N(ms(*p.NextRunAt))
	}
	if clearAlert {
		removes = append(removes, "alertState")
	}
	if len(removes) > 0 {
		update += " REMOVE " + strings.Join(removes, ", ")
	}
	c, err := s.updateCheck(ctx, id, update, "userid = :u", values, map[string]string{"#url": "url", "#name": "name", "#tags": "tags"})
	if err != nil || p.NextRunAt == nil {
		return c, err
	}
	return c, s.noteScheduleChange(ctx, id)
}

// SetCheckStatus moves a user's check from one of from to status. Resuming
// (to ACTIVE) makes it due at once and clears the failure state.
func (s *Store) SetCheckStatus(ctx context.Context, userID, id string, from []string, status string) (Check, error) {
	values := map[string]av{":now": ddbitem.S(ddbitem.FormatTime(s.now())), ":u": ddbitem.S(userID), ":to": ddbitem.S(status)}
	update := "SET #s = :to, updatedAt = :now"
	if status == CheckActive {
		update += ", nextRunAt = :next, failCount = :zero REMOVE failureReason"
		values[":next"], values[":zero"] = ddbitem.N(ms(s.now())), ddbitem.N(0)
	}
	cond := "userid = :u AND #s IN ("
	for i, f := range from {
		if i > 0 {
			cond += ", "
		}
		ph := fmt.Sprintf(":f%d", i)
		values[ph] = ddbitem.S(f)
		cond += ph
	}
	c, err := s.updateCheck(ctx, id, update, cond+")", values, map[string]string{"#s": "status"})
	if err != nil || status != CheckActive {
		return c, err
	}
	return c, s.noteScheduleChange(ctx, id)
}

// RunNow makes a user's ACTIVE check due at once.
func (s *Store) RunNow(ctx context.Context, userID, id string) (Check, error) {
	c, err := s.updateCheck(ctx, id, "SET nextRunAt = :next", "userid = :u AND #s = :active",
		map[string]av{":next": ddbitem.N(ms(s.now())), ":u": ddbitem.S(userID), ":active": ddbitem.S(CheckActive)}, map[string]string{"#s": "status"})
	if err != nil {
		return c, err
	}
	return c, s.noteScheduleChange(ctx, id)
}

func (s *Store) updateCheck(ctx context.Context, id, update, cond string, values map[string]av, names map[string]string) (Check, error) {
	for k := range names {
		if !strings.Contains(update, k) && !strings.Contains(cond, k) {
			delete(names, k)
		}
	}
	if len(names) == 0 {
		names = nil
	}
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.names.Checks), Key: key(id, skCheck),
		UpdateExpression:                    aws.String(update),
		ConditionExpression:                 aws.String("attribute_exists(PK) AND " + cond),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if ccf.Item == nil {
			return Check{}, fmt.Errorf("%w: check %s", ErrNotFound, id)
		}
		old := parseCheck(ccf.Item)
		if u, ok := values[":u"].(*types.AttributeValueMemberS); ok && old.UserID != u.Value {
			return Check{}, fmt.Errorf("%w: check %s", ErrNotFound, id)
		}
		return old, fmt.Errorf("%w: check %s is %s", ErrState, id, old.Status)
	}
	if err != nil {
		return Check{}, fmt.Errorf("checks: update check: %w", err)
	}
	return parseCheck(out.Attributes), nil
}

// DeleteCheck deletes a user's check and gives back its slot, in one
// transaction. Its run history expires by TTL.
func (s *Store) DeleteCheck(ctx context.Context, userID, id string) error {
	if id == "" {
		return fmt.Errorf("%w: check", ErrNotFound)
	}
	_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Delete: &types.Delete{
			TableName: aws.String(s.names.Checks), Key: key(id, skCheck),
			ConditionExpression:       aws.String("userid = :u"),
			ExpressionAttributeValues: map[string]av{":u": ddbitem.S(userID)},
		}},
		{Update: &types.Update{
			TableName: aws.String(s.names.Users), Key: key(userID, skUser),
			UpdateExpression:          aws.String("SET checkCount = checkCount - :one"),
			ConditionExpression:       aws.String("checkCount > :zero"),
			ExpressionAttributeValues: map[string]av{":one": ddbitem.N(1), ":zero": ddbitem.N(0)},
		}},
	}})
	if r := ddbitem.CancelReasons(err); len(r) > 0 && r[0] == "ConditionalCheckFailed" {
		return fmt.Errorf("%w: check %s", ErrNotFound, id)
	}
	if err != nil {
		return fmt.Errorf("checks: delete check: %w", err)
	}
	return nil
}

// Filter selects a user's checks. Zero fields select everything.
type Filter struct {
	// Tags: the check carries every one of them (compared ignoring case).
	Tags []string
	// Status: one of FilterStatuses. ACTIVE, PAUSED and FAILED are the
	// check's status; UP and DOWN the last run's status of an ACTIVE
	// check; PENDING an ACTIVE check that has not run yet.
	Status string
	// Q: a substring of the check's name (DisplayName) or URL, ignoring
	// case.
	Q string
}

// FilterStatuses are the values of Filter.Status.
var FilterStatuses = []string{"UP", "DOWN", "PENDING", CheckActive, CheckPaused, CheckFailed}

// State is what a check is now, as the status filter and the pages see
// it: PAUSED or FAILED, else the last run's UP or DOWN, or PENDING before
// the first run.
func (c Check) State() string {
	if c.Status != CheckActive {
		return c.Status
	}
	if st, _ := c.LastResult["status"].(string); st != "" {
		return st
	}
	return "PENDING"
}

// Match reports whether c is selected by f.
func (f Filter) Match(c Check) bool {
	for _, t := range f.Tags {
		if !slices.ContainsFunc(c.Tags, func(have string) bool { return strings.EqualFold(have, t) }) {
			return false
		}
	}
	switch f.Status {
	case "":
	case CheckActive:
		if c.Status != CheckActive {
			return false
		}
	default:
		if c.State() != f.Status {
			return false
		}
	}
	if q := strings.ToLower(f.Q); q != "" &&
		!strings.Contains(strings.ToLower(c.DisplayName()), q) && !strings.Contains(strings.ToLower(c.URL), q) {
		return false
	}
	return true
}
