package sessions

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/internal/platform/ddbitem"
	"github.com/quarrydb/quarry/internal/wallcrawler/tables"
)

// Repo reads and writes the wallcrawler-sessions table.
type Repo struct {
	client *dynamodb.Client
	table  string
	now    func() time.Time
}

// NewRepo returns a Repo over names.Sessions. now nil means time.Now.
func NewRepo(client *dynamodb.Client, names tables.Names, now func() time.Time) *Repo {
	if now == nil {
		now = time.Now
	}
	return &Repo{client: client, table: names.Sessions, now: now}
}

// Table is the sessions table's name.
func (r *Repo) Table() string { return r.table }

type av = types.AttributeValue

func eventItem(e Event) av {
	m := map[string]av{
		"source":     ddbitem.S(e.Source),
		"detailType": ddbitem.S(e.DetailType),
		"time":       ddbitem.S(ddbitem.FormatTime(e.Time)),
		"to":         ddbitem.S(e.To),
	}
	if e.From != "" {
		m["from"] = ddbitem.S(e.From)
	}
	if e.Reason != "" {
		m["reason"] = ddbitem.S(e.Reason)
	}
	return &types.AttributeValueMemberM{Value: m}
}

func newEvent(at time.Time, from, to, reason string) Event {
	return Event{Source: "wallcrawler.sessions", DetailType: "SessionStateChange", Time: at, From: from, To: to, Reason: reason}
}

// item encodes a new session. Zero-valued optional attributes are left out.
func item(x Session) (map[string]av, error) {
	it := map[string]av{
		"sessionId":          ddbitem.S(x.ID),
		"projectId":          ddbitem.S(x.ProjectID),
		"status":             ddbitem.S(SDKStatus(x.InternalStatus)),
		"internalStatus":     ddbitem.S(x.InternalStatus),
		"createdAt":          ddbitem.S(ddbitem.FormatTime(x.CreatedAt)),
		"updatedAt":          ddbitem.S(ddbitem.FormatTime(x.UpdatedAt)),
		"expiresAt":          ddbitem.N(x.ExpiresAt.Unix()),
		"keepAlive":          ddbitem.Bool(x.KeepAlive),
		"region":             ddbitem.S(x.Region),
		"signingKey":         ddbitem.S(x.SigningKey),
		"connectUrl":         ddbitem.S(x.ConnectURL),
		"proxyBytes":         ddbitem.N(x.ProxyBytes),
		"retryCount":         ddbitem.N(int64(x.RetryCount)),
		"lastEventTimestamp": ddbitem.S(ddbitem.FormatTime(x.LastEventAt)),
		"timeout":            ddbitem.N(int64(x.Timeout)),
		"viewportWidth":      ddbitem.N(int64(x.Width)),
		"viewportHeight":     ddbitem.N(int64(x.Height)),
	}
	if x.TaskARN != "" {
		it["ecsTaskArn"] = ddbitem.S(x.TaskARN)
	}
	if x.NodeURL != "" {
		it["nodeUrl"] = ddbitem.S(x.NodeURL)
	}
	evs := make([]av, len(x.Events))
	for i, e := range x.Events {
		evs[i] = eventItem(e)
	}
	it["eventHistory"] = &types.AttributeValueMemberL{Value: evs}
	if x.ContextID != "" {
		it["contextId"] = ddbitem.S(x.ContextID)
		it["contextPersist"] = ddbitem.Bool(x.ContextPersist)
		it["contextStorageKey"] = ddbitem.S(x.ContextKey)
	}
	if len(x.UserMetadata) > 0 {
		m, err := attributevalue.MarshalMap(x.UserMetadata)
		if err != nil {
			return nil, fmt.Errorf("%w: userMetadata: %v", ErrInvalid, err)
		}
		it["userMetadata"] = &types.AttributeValueMemberM{Value: m}
	}
	return it, nil
}

func boolean(it map[string]av, k string) bool {
	v, ok := it[k].(*types.AttributeValueMemberBOOL)
	return ok && v.Value
}

// parse decodes an item; unknown or mistyped attributes read as zero.
func parse(it map[string]av) Session {
	x := Session{
		ID:             ddbitem.String(it, "sessionId"),
		ProjectID:      ddbitem.String(it, "projectId"),
		Status:         ddbitem.String(it, "status"),
		InternalStatus: ddbitem.String(it, "internalStatus"),
		CreatedAt:      ddbitem.ParseTime(ddbitem.String(it, "createdAt")),
		UpdatedAt:      ddbitem.ParseTime(ddbitem.String(it, "updatedAt")),
		StartedAt:      ddbitem.ParseTime(ddbitem.String(it, "startedAt")),
		EndedAt:        ddbitem.ParseTime(ddbitem.String(it, "endedAt")),
		ExpiresAt:      time.Unix(ddbitem.Int(it, "expiresAt"), 0).UTC(),
		KeepAlive:      boolean(it, "keepAlive"),
		Region:         ddbitem.String(it, "region"),
		PublicIP:       ddbitem.String(it, "publicIP"),
		TaskARN:        ddbitem.String(it, "ecsTaskArn"),
		NodeURL:        ddbitem.String(it, "nodeUrl"),
		ConnectURL:     ddbitem.String(it, "connectUrl"),
		SigningKey:     ddbitem.String(it, "signingKey"),
		ContextID:      ddbitem.String(it, "contextId"),
		ContextPersist: boolean(it, "contextPersist"),
		ContextKey:     ddbitem.String(it, "contextStorageKey"),
		ProxyBytes:     ddbitem.Int(it, "proxyBytes"),
		LastEventAt:    ddbitem.ParseTime(ddbitem.String(it, "lastEventTimestamp")),
		RetryCount:     int(ddbitem.Int(it, "retryCount")),
		Timeout:        int(ddbitem.Int(it, "timeout")),
		Width:          int(ddbitem.Int(it, "viewportWidth")),
		Height:         int(ddbitem.Int(it, "viewportHeight")),
		Error:          ddbitem.String(it, "error"),
		StopAs:         ddbitem.String(it, "stopAs"),
	}
	if _, ok := it["memoryUsage"]; ok {
		x.UsageSampled = true
		x.MemoryUsage = ddbitem.Int(it, "memoryUsage")
		if n, ok := it["avgCpuUsage"].(*types.AttributeValueMemberN); ok {
			x.AvgCPUUsage, _ = strconv.ParseFloat(n.Value, 64)
		}
	}
	if l, ok := it["eventHistory"].(*types.AttributeValueMemberL); ok {
		for _, e := range l.Value {
			m, ok := e.(*types.AttributeValueMemberM)
			if !ok {
				continue
			}
			x.Events = append(x.Events, Event{
				Source: ddbitem.String(m.Value, "source"), DetailType: ddbitem.String(m.Value, "detailType"),
				Time: ddbitem.ParseTime(ddbitem.String(m.Value, "time")), From: ddbitem.String(m.Value, "from"),
				To: ddbitem.String(m.Value, "to"), Reason: ddbitem.String(m.Value, "reason"),
			})
		}
	}
	if m, ok := it["userMetadata"].(*types.AttributeValueMemberM); ok {
		var md map[string]any
		if attributevalue.UnmarshalMap(m.Value, &md) == nil {
			x.UserMetadata = md
		}
	}
	return x
}

// Insert writes a new session (Create writes it PROVISIONING, its
// eventHistory holding the CREATING step); it fails if the id is taken.
func (r *Repo) Insert(ctx context.Context, x Session) error {
	it, err := item(x)
	if err != nil {
		return err
	}
	_, err = r.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(r.table),
		Item:                it,
		ConditionExpression: aws.String("attribute_not_exists(sessionId)"),
	})
	if err != nil {
		return fmt.Errorf("sessions: insert %s: %w", x.ID, err)
	}
	return nil
}

// Get reads a session by id (strongly consistent).
func (r *Repo) Get(ctx context.Context, id string) (Session, error) {
	out, err := r.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(r.table),
		Key:            map[string]av{"sessionId": ddbitem.S(id)},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Session{}, fmt.Errorf("sessions: get %s: %w", id, err)
	}
	if out.Item == nil {
		return Session{}, fmt.Errorf("%w: session %s", ErrNotFound, id)
	}
	return parse(out.Item), nil
}

// Transition moves a session from one of the states in from to the state
// to, setting the extra attributes in set, with one conditional write that
// also updates status (the SDK mapping), updatedAt and
// lastEventTimestamp and appends an event to eventHistory. It fails with
// ErrState (wrapping the current state) when the session is not in one of
// from, and with ErrNotFound when it does not exist.
func (r *Repo) Transition(ctx context.Context, id string, from []string, to, reason string, set map[string]av) (Session, error) {
	now := r.now()
	cur := from[0]
	if len(from) > 1 {
		cur = ""
	}
	values := map[string]av{
		":to":    ddbitem.S(to),
		":sdk":   ddbitem.S(SDKStatus(to)),
		":now":   ddbitem.S(ddbitem.FormatTime(now)),
		":ev":    &types.AttributeValueMemberL{Value: []av{eventItem(newEvent(now, cur, to, reason))}},
		":empty": &types.AttributeValueMemberL{Value: []av{}},
	}
	names := map[string]string{"#st": "status", "#is": "internalStatus"}
	update := "SET #is = :to, #st = :sdk, updatedAt = :now, lastEventTimestamp = :now, eventHistory = list_append(if_not_exists(eventHistory, :empty), :ev)"
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		ph := "#s" + strconv.Itoa(i)
		names[ph] = k
		values[":s"+strconv.Itoa(i)] = set[k]
		update += ", " + ph + " = :s" + strconv.Itoa(i)
	}
	cond := "attribute_exists(sessionId) AND #is IN ("
	for i, f := range from {
		if i > 0 {
			cond += ", "
		}
		ph := ":f" + strconv.Itoa(i)
		values[ph] = ddbitem.S(f)
		cond += ph
	}
	cond += ")"
	out, err := r.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(r.table),
		Key:                                 map[string]av{"sessionId": ddbitem.S(id)},
		UpdateExpression:                    aws.String(update),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if ccf.Item == nil {
			return Session{}, fmt.Errorf("%w: session %s", ErrNotFound, id)
		}
		old := parse(ccf.Item)
		return old, fmt.Errorf("%w: session %s is %s, not %v", ErrState, id, old.InternalStatus, from)
	}
	if err != nil {
		return Session{}, fmt.Errorf("sessions: %s → %s: %w", id, to, err)
	}
	return parse(out.Attributes), nil
}

// AddProxyBytes adds n to a session's proxyBytes counter.
func (r *Repo) AddProxyBytes(ctx context.Context, id string, bytes int64) error {
	if bytes <= 0 {
		return nil
	}
	_, err := r.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(r.table),
		Key:                       map[string]av{"sessionId": ddbitem.S(id)},
		UpdateExpression:          aws.String("ADD proxyBytes :n"),
		ConditionExpression:       aws.String("attribute_exists(sessionId)"),
		ExpressionAttributeValues: map[string]av{":n": ddbitem.N(bytes)},
	})
	if err != nil {
		return fmt.Errorf("sessions: add proxy bytes to %s: %w", id, err)
	}
	return nil
}

// SetUsage records a session's resource figures: avgCpuUsage (percent of
// one CPU core, averaged since the browser became READY) and memoryUsage
// (the largest memory footprint seen, PSS in bytes). With whileReady the write
// happens only while the session is READY, so a late periodic sample
// cannot overwrite the final one taken as the session ends.
func (r *Repo) SetUsage(ctx context.Context, id string, avgCPU float64, memory int64, whileReady bool) error {
	cond := "attribute_exists(sessionId)"
	u := usageAttrs(avgCPU, memory)
	values := map[string]av{":c": u["avgCpuUsage"], ":m": u["memoryUsage"]}
	var names map[string]string
	if whileReady {
		cond += " AND #is = :ready"
		names = map[string]string{"#is": "internalStatus"}
		values[":ready"] = ddbitem.S(StateReady)
	}
	_, err := r.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(r.table),
		Key:                       map[string]av{"sessionId": ddbitem.S(id)},
		UpdateExpression:          aws.String("SET avgCpuUsage = :c, memoryUsage = :m"),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	if ddbitem.ConditionFailed(err) {
		return fmt.Errorf("%w: session %s is not running", ErrState, id)
	}
	if err != nil {
		return fmt.Errorf("sessions: set usage of %s: %w", id, err)
	}
	return nil
}

// usageAttrs are the attributes of a session's resource figures (see
// SetUsage), for a Transition's set.
func usageAttrs(avgCPU float64, memory int64) map[string]av {
	return map[string]av{
		"avgCpuUsage": &types.AttributeValueMemberN{Value: strconv.FormatFloat(avgCPU, 'f', 2, 64)},
		"memoryUsage": ddbitem.N(memory),
	}
}

// ListByProject returns a project's sessions, newest first, through
// projectId-createdAt-index.
func (r *Repo) ListByProject(ctx context.Context, projectID string, limit int) ([]Session, error) {
	var out []Session
	p := dynamodb.NewQueryPaginator(r.client, &dynamodb.QueryInput{
		TableName:                 aws.String(r.table),
		IndexName:                 aws.String(tables.SessionsByProjectIndex),
		KeyConditionExpression:    aws.String("projectId = :p"),
		ExpressionAttributeValues: map[string]av{":p": ddbitem.S(projectID)},
		ScanIndexForward:          aws.Bool(false),
	})
	for p.HasMorePages() && (limit <= 0 || len(out) < limit) {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("sessions: list project %s: %w", projectID, err)
		}
		for _, it := range page.Items {
			out = append(out, parse(it))
		}
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// ExpiredRunning returns the ids of RUNNING sessions whose expiresAt is at
// or before t, through status-expiresAt-index (KEYS_ONLY).
func (r *Repo) ExpiredRunning(ctx context.Context, t time.Time) ([]string, error) {
	return r.runningIDs(ctx, aws.String("#st = :s AND expiresAt <= :t"), map[string]av{":s": ddbitem.S(StatusRunning), ":t": ddbitem.N(t.Unix())})
}

// Running returns the ids of all RUNNING sessions.
func (r *Repo) Running(ctx context.Context) ([]string, error) {
	return r.runningIDs(ctx, aws.String("#st = :s"), map[string]av{":s": ddbitem.S(StatusRunning)})
}

func (r *Repo) runningIDs(ctx context.Context, cond *string, values map[string]av) ([]string, error) {
	var ids []string
	p := dynamodb.NewQueryPaginator(r.client, &dynamodb.QueryInput{
		TableName:                 aws.String(r.table),
		IndexName:                 aws.String(tables.SessionsByStatusIndex),
		KeyConditionExpression:    cond,
		ExpressionAttributeNames:  map[string]string{"#st": "status"},
		ExpressionAttributeValues: values,
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("sessions: query running: %w", err)
		}
		for _, it := range page.Items {
			ids = append(ids, ddbitem.String(it, "sessionId"))
		}
	}
	return ids, nil
}
