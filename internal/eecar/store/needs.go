package store

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/internal/platform/ddbitem"
)

// Need is a company's need: PK COMPANY#{companyId}, SK NEED#{needId};
// GSI1PK NEED#{status}, GSI1SK PRIORITY#{1|2|3}#CREATED#{timestamp}.
type Need struct {
	ID                string        `json:"needId"`
	CompanyID         string        `json:"companyId"`
	CompanyName       string        `json:"companyName"`
	Industry          string        `json:"industry,omitempty"`
	RequiredSpecs     RequiredSpecs `json:"requiredSpecs"`
	ProductionProcess string        `json:"productionProcess,omitempty"`
	TargetApplication string        `json:"targetApplication,omitempty"`
	Priority          string        `json:"priority"`
	Status            string        `json:"status"`
	CreatedAt         string        `json:"createdAt"`
	ExpiresAt         string        `json:"expiresAt,omitempty"`
}

// RequiredSpecs is a need's requiredSpecs.
type RequiredSpecs struct {
	Category            string   `json:"category,omitempty"`
	MinQuantity         int      `json:"minQuantity,omitempty"`
	MaxPrice            float64  `json:"maxPrice,omitempty"`
	MaterialPreferences []string `json:"materialPreferences,omitempty"`
}

// Need statuses and priorities.
const (
	NeedActive    = "active"
	NeedFulfilled = "fulfilled"
	NeedCancelled = "cancelled"
)

// PriorityRank encodes a priority as an ordered number, so GSI1SK sorts
// high before medium before low (the document's PRIORITY#{priority} sorted
// alphabetically: DESIGN.md §5). ok is false for an unknown priority.
func PriorityRank(p string) (string, bool) {
	switch p {
	case "high":
		return "1", true
	case "medium":
		return "2", true
	case "low":
		return "3", true
	}
	return "", false
}

func needGSI(status, priority, created string) (string, string) {
	rank, _ := PriorityRank(priority)
	return "NEED#" + status, "PRIORITY#" + rank + "#CREATED#" + created
}

// PutNeed creates a need (status active) or, with an existing id, replaces
// it keeping createdAt.
func (s *Store) PutNeed(ctx context.Context, n Need) (Need, error) {
	if _, ok := PriorityRank(n.Priority); !ok {
		return Need{}, fmt.Errorf("%w: priority must be high, medium or low", ErrInvalid)
	}
	if n.Status == "" {
		n.Status = NeedActive
	}
	switch n.Status {
	case NeedActive, NeedFulfilled, NeedCancelled:
	default:
		return Need{}, fmt.Errorf("%w: status must be active, fulfilled or cancelled", ErrInvalid)
	}
	if n.CreatedAt == "" {
		n.CreatedAt = ddbitem.FormatTime(s.Now())
	}
	g1pk, g1sk := needGSI(n.Status, n.Priority, n.CreatedAt)
	it, err := marshal(n, map[string]av{"PK": ddbitem.S("COMPANY#" + n.CompanyID), "SK": ddbitem.S("NEED#" + n.ID), "GSI1PK": ddbitem.S(g1pk), "GSI1SK": ddbitem.S(g1sk)})
	if err != nil {
		return Need{}, err
	}
	if _, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: it}); err != nil {
		return Need{}, fmt.Errorf("eecar: put need: %w", err)
	}
	return n, nil
}

// GetNeed reads one of a company's needs.
func (s *Store) GetNeed(ctx context.Context, companyID, id string) (Need, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: key("COMPANY#"+companyID, "NEED#"+id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return Need{}, fmt.Errorf("eecar: get need: %w", err)
	}
	if out.Item == nil {
		return Need{}, fmt.Errorf("%w: need %s", ErrNotFound, id)
	}
	var n Need
	if err := unmarshal(out.Item, &n); err != nil {
		return Need{}, fmt.Errorf("eecar: need %s: %w", id, err)
	}
	return n, nil
}

// ListNeeds returns a company's needs (access pattern 2: PK = COMPANY#id,
// SK begins_with NEED#, optionally filtered on status).
func (s *Store) ListNeeds(ctx context.Context, companyID, status string) ([]Need, error) {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("PK = :pk AND begins_with(SK, :n)"),
		ExpressionAttributeValues: map[string]av{":pk": ddbitem.S("COMPANY#" + companyID), ":n": ddbitem.S("NEED#")},
	}
	if status != "" {
		in.FilterExpression = aws.String("#s = :s")
		in.ExpressionAttributeNames = map[string]string{"#s": "status"}
		in.ExpressionAttributeValues[":s"] = ddbitem.S(status)
	}
	items, err := s.queryAll(ctx, in, 0)
	if err != nil {
		return nil, err
	}
	out := make([]Need, 0, len(items))
	for _, it := range items {
		var n Need
		if unmarshal(it, &n) == nil {
			out = append(out, n)
		}
	}
	return out, nil
}

// NeedsByStatus lists all companies' needs of a status through GSI1, high
// priority first, oldest first within a priority.
func (s *Store) NeedsByStatus(ctx context.Context, status string, limit int) ([]Need, error) {
	return queryInto[Need](ctx, s, s.gsi1Query("NEED#"+status, "PRIORITY#", false), limit)
}

// DeleteNeed deletes a need.
func (s *Store) DeleteNeed(ctx context.Context, companyID, id string) error {
	_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(s.table), Key: key("COMPANY#"+companyID, "NEED#"+id),
		ConditionExpression: aws.String("attribute_exists(PK)"),
	})
	if ddbitem.ConditionFailed(err) {
		return fmt.Errorf("%w: need %s", ErrNotFound, id)
	}
	if err != nil {
		return fmt.Errorf("eecar: delete need: %w", err)
	}
	return nil
}

// Watch is a buyer's watch: PK WATCH#{watchId}, SK METADATA; GSI1PK
// BUYER#{buyerId}, GSI1SK STATUS#{status}#CREATED#{timestamp}.
type Watch struct {
	ID          string        `json:"watchId"`
	BuyerID     string        `json:"buyerId"`
	Email       string        `json:"email,omitempty"`
	Phone       string        `json:"phone,omitempty"`
	Criteria    WatchCriteria `json:"criteria"`
	Status      string        `json:"status"`
	CreatedAt   string        `json:"createdAt"`
	TriggeredAt string        `json:"triggeredAt,omitempty"`
}

// WatchCriteria is a watch's criteria. MinSpecs maps a spec path
// ("electricalProps.capacity", "chemicalProps.soh") to a minimum number.
type WatchCriteria struct {
	Category string             `json:"category,omitempty"`
	MinSpecs map[string]float64 `json:"minSpecs,omitempty"`
	MaxPrice float64            `json:"maxPrice,omitempty"`
	Keywords Keywords           `json:"keywords,omitempty"`
}

// Watch statuses.
const (
	WatchActive    = "active"
	WatchTriggered = "triggered"
	WatchCancelled = "cancelled"
)

// PutWatch writes a watch.
func (s *Store) PutWatch(ctx context.Context, w Watch) (Watch, error) {
	if w.CreatedAt == "" {
		w.CreatedAt = ddbitem.FormatTime(s.Now())
	}
	if w.Status == "" {
		w.Status = WatchActive
	}
	it, err := marshal(w, map[string]av{
		"PK": ddbitem.S("WATCH#" + w.ID), "SK": ddbitem.S("METADATA"),
		"GSI1PK": ddbitem.S("BUYER#" + w.BuyerID), "GSI1SK": ddbitem.S("STATUS#" + w.Status + "#CREATED#" + w.CreatedAt),
	})
	if err != nil {
		return Watch{}, err
	}
	if _, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: it}); err != nil {
		return Watch{}, fmt.Errorf("eecar: put watch: %w", err)
	}
	return w, nil
}

// WatchFromItem decodes a watch METADATA item (false for other items).
func WatchFromItem(it map[string]av) (Watch, bool) {
	if len(ddbitem.String(it, "PK")) < 7 || ddbitem.String(it, "PK")[:6] != "WATCH#" || ddbitem.String(it, "SK") != "METADATA" {
		return Watch{}, false
	}
	var w Watch
	return w, unmarshal(it, &w) == nil
}

// GetWatch reads a watch; ErrNotFound for another buyer's.
func (s *Store) GetWatch(ctx context.Context, buyerID, id string) (Watch, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: key("WATCH#"+id, "METADATA"), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return Watch{}, fmt.Errorf("eecar: get watch: %w", err)
	}
	w, ok := WatchFromItem(out.Item)
	if !ok || (buyerID != "" && w.BuyerID != buyerID) {
		return Watch{}, fmt.Errorf("%w: watch %s", ErrNotFound, id)
	}
	return w, nil
}

// ListWatches returns a buyer's watches of a status (access pattern 5).
func (s *Store) ListWatches(ctx context.Context, buyerID, status string) ([]Watch, error) {
	items, err := s.queryAll(ctx, s.gsi1Query("BUYER#"+buyerID, statusPrefix(status), false), 0)
	if err != nil {
		return nil, err
	}
	out := make([]Watch, 0, len(items))
	for _, it := range items {
		if w, ok := WatchFromItem(it); ok {
			out = append(out, w)
		}
	}
	return out, nil
}

// ActiveWatches scans for every active watch (to load the matcher at
// start; afterwards the stream keeps it current).
func (s *Store) ActiveWatches(ctx context.Context) ([]Watch, error) {
	var out []Watch
	p := dynamodb.NewScanPaginator(s.client, &dynamodb.ScanInput{
		TableName:                 aws.String(s.table),
		FilterExpression:          aws.String("SK = :m AND begins_with(PK, :w) AND #s = :a"),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]av{":m": ddbitem.S("METADATA"), ":w": ddbitem.S("WATCH#"), ":a": ddbitem.S(WatchActive)},
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("eecar: scan watches: %w", err)
		}
		for _, it := range page.Items {
			if w, ok := WatchFromItem(it); ok {
				out = append(out, w)
			}
		}
	}
	return out, nil
}

// CancelWatch sets a buyer's watch to cancelled.
func (s *Store) CancelWatch(ctx context.Context, buyerID, id string) (Watch, error) {
	w, err := s.GetWatch(ctx, buyerID, id)
	if err != nil {
		return Watch{}, err
	}
	w.Status = WatchCancelled
	return s.PutWatch(ctx, w)
}

// Trigger is a WATCH#{watchId} / TRIGGER#{partId} item.
type Trigger struct {
	PartID     string  `json:"partId"`
	MatchScore float64 `json:"matchScore"`
	NotifiedAt string  `json:"notifiedAt"`
}

// Notification is PK NOTIFICATION#{id}, SK METADATA; GSI1PK
// RECIPIENT#{recipientId}, GSI1SK SENT#{timestamp}; TTL 30 days.
type Notification struct {
	ID          string         `json:"notificationId"`
	RecipientID string         `json:"recipientId"`
	Type        string         `json:"type"`
	Title       string         `json:"title"`
	Message     string         `json:"message"`
	Data        map[string]any `json:"data,omitempty"`
	Read        bool           `json:"read"`
	SentAt      string         `json:"sentAt"`
}

// NotificationTTL is how long notifications live.
const NotificationTTL = 30 * 24 * time.Hour

func (s *Store) notificationPut(n *Notification) (*types.Put, error) {
	if n.SentAt == "" {
		n.SentAt = ddbitem.FormatTime(s.Now())
	}
	if n.ID == "" {
		id, err := s.NewID("ntf_")
		if err != nil {
			return nil, err
		}
		n.ID = id
	}
	it, err := marshal(n, map[string]av{
		"PK": ddbitem.S("NOTIFICATION#" + n.ID), "SK": ddbitem.S("METADATA"),
		"GSI1PK": ddbitem.S("RECIPIENT#" + n.RecipientID), "GSI1SK": ddbitem.S("SENT#" + n.SentAt),
		TTLAttribute: ddbitem.N(s.Now().Add(NotificationTTL).Unix()),
	})
	if err != nil {
		return nil, err
	}
	return &types.Put{TableName: aws.String(s.table), Item: it}, nil
}

// RecordTrigger writes WATCH#/TRIGGER#{partId}, the buyer's notification
// and its webhook outbox item in one transaction, once per (watch, part):
// it reports false (and writes nothing) when the trigger exists already.
func (s *Store) RecordTrigger(ctx context.Context, w Watch, t Trigger, n Notification) (bool, Notification, error) {
	t.NotifiedAt = ddbitem.FormatTime(s.Now())
	tItem, err := marshal(t, map[string]av{"PK": ddbitem.S("WATCH#" + w.ID), "SK": ddbitem.S("TRIGGER#" + t.PartID)})
	if err != nil {
		return false, n, err
	}
	np, err := s.notificationPut(&n)
	if err != nil {
		return false, n, err
	}
	wp, err := s.webhookPut(n)
	if err != nil {
		return false, n, err
	}
	_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(s.table), Item: tItem, ConditionExpression: aws.String("attribute_not_exists(PK)")}},
		{Put: np},
		{Put: wp},
		{Update: &types.Update{
			TableName: aws.String(s.table), Key: key("WATCH#"+w.ID, "METADATA"),
			UpdateExpression:          aws.String("SET triggeredAt = :t"),
			ConditionExpression:       aws.String("#s = :a"),
			ExpressionAttributeNames:  map[string]string{"#s": "status"},
			ExpressionAttributeValues: map[string]av{":t": ddbitem.S(t.NotifiedAt), ":a": ddbitem.S(WatchActive)},
		}},
	}})
	if r := ddbitem.CancelReasons(err); len(r) == 4 && (r[0] == "ConditionalCheckFailed" || r[3] == "ConditionalCheckFailed") {
		return false, n, nil
	}
	if err != nil {
		return false, n, fmt.Errorf("eecar: record trigger: %w", err)
	}
	return true, n, nil
}

// Triggers lists a watch's triggers.
func (s *Store) Triggers(ctx context.Context, watchID string) ([]Trigger, error) {
	return queryInto[Trigger](ctx, s, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("PK = :w AND begins_with(SK, :t)"),
		ExpressionAttributeValues: map[string]av{":w": ddbitem.S("WATCH#" + watchID), ":t": ddbitem.S("TRIGGER#")},
	}, 0)
}

// Notify writes a notification and its webhook outbox item in one
// transaction.
func (s *Store) Notify(ctx context.Context, n Notification) (Notification, error) {
	p, err := s.notificationPut(&n)
	if err != nil {
		return n, err
	}
	wp, err := s.webhookPut(n)
	if err != nil {
		return n, err
	}
	if _, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{{Put: p}, {Put: wp}}}); err != nil {
		return n, fmt.Errorf("eecar: notify: %w", err)
	}
	return n, nil
}

// Notifications lists a recipient's notifications newest first (GSI1).
func (s *Store) Notifications(ctx context.Context, recipientID string, limit int) ([]Notification, error) {
	if limit <= 0 || limit > 100 {
		limit = 50
	}
	in := s.gsi1Query("RECIPIENT#"+recipientID, "SENT#", true)
	in.Limit = aws.Int32(int32(limit))
	return queryInto[Notification](ctx, s, in, limit)
}

// MarkRead marks a recipient's notification read.
func (s *Store) MarkRead(ctx context.Context, recipientID, id string) error {
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: key("NOTIFICATION#"+id, "METADATA"),
		UpdateExpression:          aws.String("SET #r = :t"),
		ConditionExpression:       aws.String("recipientId = :me"),
		ExpressionAttributeNames:  map[string]string{"#r": "read"},
		ExpressionAttributeValues: map[string]av{":t": &types.AttributeValueMemberBOOL{Value: true}, ":me": ddbitem.S(recipientID)},
	})
	if ddbitem.ConditionFailed(err) {
		return fmt.Errorf("%w: notification %s", ErrNotFound, id)
	}
	if err != nil {
		return fmt.Errorf("eecar: mark read: %w", err)
	}
	return nil
}

// GetNotification reads a recipient's notification (ErrNotFound for
// another company's).
func (s *Store) GetNotification(ctx context.Context, recipientID, id string) (Notification, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: key("NOTIFICATION#"+id, "METADATA"), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return Notification{}, fmt.Errorf("eecar: get notification: %w", err)
	}
	var n Notification
	if out.Item == nil || unmarshal(out.Item, &n) != nil || n.RecipientID != recipientID {
		return Notification{}, fmt.Errorf("%w: notification %s", ErrNotFound, id)
	}
	return n, nil
}

// pageOf reads one page of the items of partition pk whose sort key
// begins with prefix, in sort key order (descending when desc): limit of
// them after cursor ("" the first page), and the next page's cursor (""
// on the last). The cursor is the last sort key read; the partition is
// always pk, so a cursor cannot reach another partition.
func (s *Store) pageOf(ctx context.Context, pk, prefix string, desc bool, limit int, cursor string) ([]map[string]av, string, error) {
	if limit <= 0 || limit > 100 {
		limit = 20
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("PK = :pk AND begins_with(SK, :p)"),
		ExpressionAttributeValues: map[string]av{":pk": ddbitem.S(pk), ":p": ddbitem.S(prefix)},
		ScanIndexForward:          aws.Bool(!desc),
		Limit:                     aws.Int32(int32(limit)),
	}
	if cursor != "" {
		sk, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil || !strings.HasPrefix(string(sk), prefix) {
			return nil, "", fmt.Errorf("%w: bad cursor", ErrInvalid)
		}
		in.ExclusiveStartKey = key(pk, string(sk))
	}
	out, err := s.client.Query(ctx, in)
	if err != nil {
		return nil, "", fmt.Errorf("eecar: query: %w", err)
	}
	next := ""
	if len(out.LastEvaluatedKey) > 0 {
		next = base64.RawURLEncoding.EncodeToString([]byte(ddbitem.String(out.LastEvaluatedKey, "SK")))
	}
	return out.Items, next, nil
}

// NeedsPage lists a page of a company's needs (by id), with the next
// page's cursor ("" on the last).
func (s *Store) NeedsPage(ctx context.Context, companyID string, limit int, cursor string) ([]Need, string, error) {
	items, next, err := s.pageOf(ctx, "COMPANY#"+companyID, "NEED#", false, limit, cursor)
	if err != nil {
		return nil, "", err
	}
	out := make([]Need, 0, len(items))
	for _, it := range items {
		var n Need
		if unmarshal(it, &n) == nil {
			out = append(out, n)
		}
	}
	return out, next, nil
}

// TriggersPage lists a page of a watch's triggers (by part id), with the
// next page's cursor ("" on the last).
func (s *Store) TriggersPage(ctx context.Context, watchID string, limit int, cursor string) ([]Trigger, string, error) {
	items, next, err := s.pageOf(ctx, "WATCH#"+watchID, "TRIGGER#", false, limit, cursor)
	if err != nil {
		return nil, "", err
	}
	out := make([]Trigger, 0, len(items))
	for _, it := range items {
		var t Trigger
		if unmarshal(it, &t) == nil {
			out = append(out, t)
		}
	}
	return out, next, nil
}

// WatchesPage lists a page of a buyer's watches through GSI1 (active
// before cancelled, oldest first within a status), with the next page's
// cursor ("" on the last).
func (s *Store) WatchesPage(ctx context.Context, buyerID string, limit int, cursor string) ([]Watch, string, error) {
	if limit <= 0 || limit > 100 {
		limit = 20
	}
	in := s.gsi1Query("BUYER#"+buyerID, "STATUS#", false)
	in.Limit = aws.Int32(int32(limit))
	if cursor != "" {
		start, err := decodeCursor(cursor)
		if err != nil || ddbitem.String(start, "GSI1PK") != "BUYER#"+buyerID {
			return nil, "", fmt.Errorf("%w: bad cursor", ErrInvalid)
		}
		in.ExclusiveStartKey = start
	}
	out, err := s.client.Query(ctx, in)
	if err != nil {
		return nil, "", fmt.Errorf("eecar: list watches: %w", err)
	}
	ws := make([]Watch, 0, len(out.Items))
	for _, it := range out.Items {
		if w, ok := WatchFromItem(it); ok {
			ws = append(ws, w)
		}
	}
	next := ""
	if len(out.LastEvaluatedKey) > 0 {
		next = encodeCursor(out.LastEvaluatedKey)
	}
	return ws, next, nil
}

// NotificationsPage lists a page of a recipient's notifications newest
// first (GSI1), with the next page's cursor ("" on the last).
func (s *Store) NotificationsPage(ctx context.Context, recipientID string, limit int, cursor string) ([]Notification, string, error) {
	if limit <= 0 || limit > 100 {
		limit = 50
	}
	in := s.gsi1Query("RECIPIENT#"+recipientID, "SENT#", true)
	in.Limit = aws.Int32(int32(limit))
	if cursor != "" {
		start, err := decodeCursor(cursor)
		if err != nil || ddbitem.String(start, "GSI1PK") != "RECIPIENT#"+recipientID {
			return nil, "", fmt.Errorf("%w: bad cursor", ErrInvalid)
		}
		in.ExclusiveStartKey = start
	}
	out, err := s.client.Query(ctx, in)
	if err != nil {
		return nil, "", fmt.Errorf("eecar: notifications: %w", err)
	}
	ns := make([]Notification, 0, len(out.Items))
	for _, it := range out.Items {
		var n Notification
		if unmarshal(it, &n) == nil {
			ns = append(ns, n)
		}
	}
	next := ""
	if len(out.LastEvaluatedKey) > 0 {
		next = encodeCursor(out.LastEvaluatedKey)
	}
	return ns, next, nil
}
